"""NBP/1 conformance across languages, over real processes and real sockets.

    make test-conformance          # builds nbus and the C producer first, picks a Python with pyzmq
    NBUS=.build/debug/nbus NBP_C_PRODUCER=.build/examples/nbp-producer \\
        python3 -m unittest -v examples/python/test_conformance.py

What it checks (issue 6):

* Foreign producers -> Swift: producer.py and the C producer publish to `nbus subscribe --format
  json`, directly and through `nbus broker`; every field (name, headers, payload bytes,
  content type, sequence, publisher id, timestamp) arrives as sent.
* Swift -> foreign consumer: `nbus publish` (and the shell examples, `--lines` and
  `--lines --input json`) to consumer.py; fields intact.
* A producer violating the spec: every invalid vector of protocol/vectors/invalid.json is sent
  raw (multi-frame ones as multipart) between valid messages; `nbus subscribe '>' --stats` and
  consumer.py receive every valid message intact and in order, and count every reject under
  its exact reason.
* Sequences across producer restarts: each restart has a new publisher id and starts again at 1;
  the consumers report no false gap (and a real gap, as a control, is reported as exactly one).
* Batch frames (NBP-1 section 2.3): `nbus publish` batches through `nbus broker` to consumer.py,
  every notification in order, in fewer frames than notifications (and one frame each with
  --no-batch); a foreign producer's batches with gaps inside and between them, and a malformed
  one, are accounted exactly by both consumer.py and `nbus subscribe`.

Every endpoint is ipc:// in a fresh temporary folder; every wait is bounded (process timeouts,
subscriptions seen on an XPUB socket, `nbus publish`'s wait for a subscriber), never a sleep; every
child process is killed when its test ends (and, through PR_SET_PDEATHSIG, if this runner dies).
"""

from __future__ import annotations

import base64
import collections
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "protocol", "python"))

import nbp  # noqa: E402

try:
    import zmq
except ImportError:  # the Makefile picks a Python with pyzmq; say so when run by hand
    raise SystemExit("test_conformance.py needs pyzmq: run it with `make test-conformance`, "
                     "or `python3 -m pip install pyzmq` first")

NBUS = os.environ.get("NBUS", os.path.join(REPO, ".build", "debug", "nbus"))
C_PRODUCER = os.environ.get("NBP_C_PRODUCER", os.path.join(REPO, ".build", "examples", "nbp-producer"))
PRODUCER_PY = os.path.join(HERE, "producer.py")
SHELL = os.path.join(REPO, "examples", "shell")
CONSUMER_PY = os.path.join(HERE, "consumer.py")
RESPONDER_PY = os.path.join(HERE, "responder.py")
VECTORS = os.path.join(REPO, "protocol", "vectors")
# Upper bound for any single child process; generous because the machine may be busy.
TIMEOUT = float(os.environ.get("CONFORMANCE_TIMEOUT", "60"))
# Frames libzmq cannot carry: a message always has at least one frame.
UNSENDABLE = {"zero-frames"}


def _die_with_parent():
    """preexec_fn: the child gets SIGKILL if this test runner dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def load_vectors(name):
    with open(os.path.join(VECTORS, name), encoding="utf-8") as f:
        return json.load(f)["vectors"]


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def payload_of(obj):
    """The payload bytes of a `nbus subscribe --format json` (or consumer.py) line."""
    if "payloadBase64" in obj:
        return base64.b64decode(obj["payloadBase64"])
    return obj["payload"].encode("utf-8")


class Child:
    def __init__(self, name, popen, out_path, err_path, group=False):
        self.name, self.popen, self.out_path, self.err_path = name, popen, out_path, err_path
        self.group = group

    def kill(self, sig=signal.SIGKILL):
        """Signal the child (its whole process group if it has one)."""
        try:
            if self.group:
                os.killpg(self.popen.pid, sig)
            elif self.popen.poll() is None:
                self.popen.send_signal(sig)
        except ProcessLookupError:
            pass

    def finish(self, timeout=TIMEOUT):
        """Wait (bounded) for the exit; return (returncode, stdout, stderr). Kills on timeout."""
        try:
            rc = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.popen.wait()
            raise AssertionError(f"{self.name} did not exit within {timeout} s\n{self.report()}")
        return rc, self.stdout(), self.stderr()

    def stop(self, timeout=TIMEOUT):
        """SIGTERM (orderly stop), then wait; kill if it does not stop."""
        self.kill(signal.SIGTERM)
        return self.finish(timeout)

    def stdout(self):
        with open(self.out_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.err_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def report(self):
        return f"--- {self.name} stdout:\n{self.stdout()[-4000:]}\n--- {self.name} stderr:\n{self.stderr()[-4000:]}"


class ConformanceCase(unittest.TestCase):
    """Temporary folder for ipc endpoints and output files; child processes killed at the end."""

    @classmethod
    def setUpClass(cls):
        if not os.access(NBUS, os.X_OK):
            raise unittest.SkipTest(f"nbus not built at {NBUS} (swift build --product nbus, or set NBUS)")

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nbp-conf-")
        self.children = []
        self.ctx = zmq.Context()
        self.addCleanup(self._cleanup)
        self.started_ns = time.time_ns()

    def _cleanup(self):
        for child in self.children:
            if child.group or child.popen.poll() is None:
                child.kill()
                child.popen.wait()
        self.ctx.destroy(linger=0)
        shutil.rmtree(self.dir, ignore_errors=True)

    def endpoint(self, name):
        return f"ipc://{self.dir}/{name}.sock"

    def start(self, name, argv, stdin_bytes=None, group=False):
        """Start a child with stdout/stderr in files (no pipe can fill up and block it).
        `group`: in its own process group (a pipeline), killed as a whole."""
        index = len(self.children)
        out_path = os.path.join(self.dir, f"{index}-{name}.out")
        err_path = os.path.join(self.dir, f"{index}-{name}.err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            popen = subprocess.Popen(
                argv, stdout=out, stderr=err, cwd=REPO, preexec_fn=_die_with_parent, start_new_session=group,
                env=dict(os.environ, NBUS=NBUS),
                stdin=subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL)
        child = Child(name, popen, out_path, err_path, group)
        self.children.append(child)
        if stdin_bytes is not None:
            popen.stdin.write(stdin_bytes)
            popen.stdin.close()
        return child

    def finish_ok(self, child, timeout=TIMEOUT):
        rc, out, err = child.finish(timeout)
        self.assertEqual(rc, 0, f"{child.name} exited {rc}\n{child.report()}")
        return out, err

    def have_c_producer(self):
        """Whether the C producer is built; a failure when the Makefile said it must be."""
        if os.access(C_PRODUCER, os.X_OK):
            return True
        if os.environ.get("NBP_REQUIRE_C_PRODUCER"):
            self.fail(f"C producer not built at {C_PRODUCER} (make examples-c)")
        return False

    def require_c_producer(self):
        if not self.have_c_producer():
            self.skipTest(f"C producer not built at {C_PRODUCER} (make examples-c)")

    # -- processes -------------------------------------------------------------------------

    def nbus_subscribe(self, patterns, count, *, connect=(), bind=(), max_payload=None, name="nbus-subscribe"):
        argv = [NBUS, "subscribe", *patterns, "--format", "json", "--stats", "--count", str(count),
                "--timeout", str(TIMEOUT)]
        argv += [x for e in connect for x in ("--connect", e)] + [x for e in bind for x in ("--bind", e)]
        if max_payload is not None:
            argv += ["--max-payload", str(max_payload)]
        return self.start(name, argv)

    def consumer_py(self, patterns, count, *, connect=(), bind=(), max_payload=None, name="consumer.py"):
        argv = [sys.executable, CONSUMER_PY, *patterns, "--format", "json", "--count", str(count),
                "--timeout", str(TIMEOUT)]
        argv += [x for e in connect for x in ("--connect", e)] + [x for e in bind for x in ("--bind", e)]
        if max_payload is not None:
            argv += ["--max-payload", str(max_payload)]
        return self.start(name, argv)

    def broker(self):
        frontend, backend = self.endpoint("frontend"), self.endpoint("backend")
        return self.start("nbus-broker", [NBUS, "broker", "--frontend", frontend, "--backend", backend]), \
            frontend, backend

    # -- raw XPUB (a foreign producer written inside the test) -----------------------------

    def xpub(self, *, bind=None, connect=None):
        sock = self.ctx.socket(zmq.XPUB)
        self.addCleanup(sock.close, 0)
        sock.setsockopt(zmq.XPUB_VERBOSE, 1)   # see every subscriber's subscription, not only the first
        sock.setsockopt(zmq.SNDHWM, 100000)
        sock.setsockopt(zmq.LINGER, int(TIMEOUT * 1000))
        if bind:
            sock.bind(bind)
        if connect:
            sock.connect(connect)
        return sock

    def wait_subscriptions(self, sock, topic, count):
        """Read subscription messages until `count` subscriptions to exactly `topic` arrived.
        Every subscription read is remembered per socket, so a wait for one topic never loses
        another topic's that came first (two subscribers' order is the machine's to choose)."""
        if not hasattr(self, "_subscriptions_read"):
            self._subscriptions_read = collections.defaultdict(collections.Counter)
        read = self._subscriptions_read[id(sock)]
        deadline = time.monotonic() + TIMEOUT
        while read[topic] < count:
            left = deadline - time.monotonic()
            if left <= 0 or not sock.poll(int(left * 1000) + 1, zmq.POLLIN):
                self.fail(f"only {read[topic]} of {count} subscription(s) to {topic!r} within {TIMEOUT} s")
            msg = sock.recv()
            if msg[:1] == b"\x01":
                read[msg[1:]] += 1

    # -- assertions ------------------------------------------------------------------------

    def assert_fields(self, got, sent, where=""):
        """`got`: a JSON line (nbus subscribe or consumer.py); `sent`: an nbp.Notification."""
        ctx = f"{where} {sent.name} #{sent.sequence}"
        self.assertEqual(got["name"], sent.name, ctx)
        self.assertEqual(got["sequence"], sent.sequence, ctx)
        self.assertEqual(int(got["publisherID"], 16), sent.publisher_id, ctx)
        self.assertEqual(got["timestamp"], sent.timestamp, ctx)
        # `time` is `timestamp` as RFC 3339 text, every digit kept; contentType by name.
        seconds, fraction = divmod(sent.timestamp, 10**9)
        self.assertEqual(got["time"], time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".%09dZ" % fraction, ctx)
        names = {0: "unspecified", 1: "text", 2: "json", 3: "cbor", 4: "msgpack", 5: "protobuf"}
        self.assertEqual(got["contentType"], names.get(sent.content_type, str(sent.content_type)), ctx)
        self.assert_headers(got["headers"], sent.headers, where, ctx)
        self.assertEqual(payload_of(got), sent.payload, ctx)

    def assert_headers(self, got, sent, where, ctx):
        """Headers as a JSON object (nbus) or a list of [key, value] pairs in wire order."""
        if isinstance(got, list):
            self.assertEqual([tuple(pair) for pair in got], list(sent), ctx)
            return
        self.assertEqual(got, dict(sent), ctx)

    def notifications(self, out):
        lines = json_lines(out)
        gaps = [x for x in lines if "gap" in x]
        return [x for x in lines if "gap" not in x], gaps

    def summary(self, err, program):
        if program == "nbus subscribe":
            # It runs with --format json --stats: its summary is the last line, one JSON object
            # (docs/command-line.md), the rejections by reason in `rejected`.
            line = err.rstrip("\n").rsplit("\n", 1)[-1]
            self.assertTrue(line.startswith('{"summary":"subscribe"'), f"no summary from {program} in:\n{err}")
            got = json.loads(line)
            return got["printed"], got["lostUpstream"], collections.Counter(got.get("rejected", {}))
        m = re.search(rf"{re.escape(program)}: (?:printed|received) (\d+); lost upstream (\d+)", err)
        self.assertIsNotNone(m, f"no summary from {program} in:\n{err}")
        # consumer.py indents its "rejected REASON: N" lines.
        rejected = collections.Counter(
            {r: int(n) for r, n in re.findall(r"(?:^\s+|nbus subscribe: )rejected (\w+): (\d+)$", err, re.MULTILINE)})
        return int(m.group(1)), int(m.group(2)), rejected


class SpecProducerSnippet(unittest.TestCase):
    """NBP-1 section 11's producer snippet runs as written (its endpoint aside): it waits for the
    subscription, sends three, lingers, and a real SUB gets all three; keepalive, no heartbeats."""

    def test_snippet_delivers_all_three_with_keepalive_and_no_heartbeats(self):
        with open(os.path.join(REPO, "protocol", "NBP-1.md"), encoding="utf-8") as f:
            spec = f.read()
        section = spec[spec.index("## 11. Writing a producer"):spec.index("## 12. Writing a consumer")]
        snippet = section[section.index("```python\n") + len("```python\n"):]
        snippet = snippet[:snippet.index("```")]
        self.assertIn("pub.setsockopt(zmq.TCP_KEEPALIVE, 1)", snippet)
        self.assertIn("pub.setsockopt(zmq.TCP_KEEPALIVE_IDLE, 5)", snippet)
        self.assertNotIn("HEARTBEAT_IVL,", snippet)
        import threading
        from zmq.utils.monitor import recv_monitor_message
        # A bound XSUB stands for the broker's frontend: it subscribes once the snippet's
        # connection passed its handshake (a subscription a bound socket holds before a peer
        # connects does not reach that peer's XPUB; `nbus broker` forwards them as they come).
        ctx = zmq.Context()
        sub = ctx.socket(zmq.XSUB)
        sub.setsockopt(zmq.LINGER, 0)
        monitor = sub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        sub.bind("tcp://127.0.0.1:*")
        endpoint = sub.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.assertIn('"tcp://127.0.0.1:5550"', snippet)

        def subscribe_once_connected():
            if monitor.poll(int(TIMEOUT * 1000), zmq.POLLIN):
                recv_monitor_message(monitor)
                sub.send(b"\x01orders.created\x00")
        subscriber = threading.Thread(target=subscribe_once_connected)
        subscriber.start()
        namespace = {}
        try:
            exec(compile(snippet.replace('"tcp://127.0.0.1:5550"', repr(endpoint)), "NBP-1.md", "exec"), namespace)
            subscriber.join(TIMEOUT)
            self.assertEqual(namespace["seqs"], {"orders.created": 3})
            got = []
            while len(got) < 3 and sub.poll(int(TIMEOUT * 1000), zmq.POLLIN):
                got.append(nbp.decode([sub.recv()]))
            self.assertEqual([(n.name, n.sequence, n.payload) for n in got],
                             [("orders.created", i + 1, b'{"id":%d}' % i) for i in range(3)])
        finally:
            subscriber.join(TIMEOUT)
            sub.disable_monitor()
            monitor.close()
            sub.close()
            ctx.term()


class SpecConsumerSnippet(unittest.TestCase):
    """NBP-1 section 12's consumer snippet runs as written (its endpoint and its endless loop
    aside): batches and single frames give every notification in order, rejects are counted."""

    def test_snippet_decodes_batches(self):
        import contextlib
        import io
        with open(os.path.join(REPO, "protocol", "NBP-1.md"), encoding="utf-8") as f:
            spec = f.read()
        section = spec[spec.index("## 12. Writing a consumer"):spec.index("## 13. Compatibility")]
        snippet = section[section.index("```python\n") + len("```python\n"):]
        snippet = snippet[:snippet.index("```")]
        self.assertIn('sub.connect("tcp://127.0.0.1:5551")', snippet)
        self.assertIn("while True:", snippet)
        ctx = zmq.Context()
        pub = ctx.socket(zmq.XPUB)
        pub.setsockopt(zmq.LINGER, 0)
        pub.bind("tcp://127.0.0.1:*")
        endpoint = pub.getsockopt(zmq.LAST_ENDPOINT).decode()

        def frame(name, seq):
            return nbp.encode(name, b"p%d" % seq, sequence=seq, publisher_id=5, timestamp_ns=1)
        messages = [nbp.encode_batch([frame("orders.created", s) for s in (1, 2, 3)]),
                    frame("orders.created", 4),
                    nbp.encode_batch([frame("orders.created", 5)]) + b"\x00",   # batchInvalid
                    nbp.encode_batch([frame("orders.x.eu", 1), frame("orders.x.eu", 2)]),
                    frame("orders.deleted", 1)]                                    # not subscribed
        # Subscriptions reach the XPUB once the snippet connected: send then (a real signal, no sleep).
        import threading

        def produce():
            seen = set()
            while len(seen) < 2:
                if not pub.poll(int(TIMEOUT * 1000), zmq.POLLIN):
                    return
                seen.add(pub.recv())
            for m in messages:
                pub.send(m)
        producer = threading.Thread(target=produce)
        producer.start()
        code = snippet.replace('"tcp://127.0.0.1:5551"', repr(endpoint)).replace(
            "while True:", "for _ in range(4):")   # the first four messages (the fifth is filtered anyway)
        out = io.StringIO()
        namespace = {}
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, "NBP-1.md", "exec"), namespace)
        finally:
            producer.join(TIMEOUT)
            namespace.get("sub") and namespace["sub"].close(0)
            pub.close(0)
        lines = out.getvalue().splitlines()
        self.assertEqual([tuple(line.split()[:2]) for line in lines],
                         [("orders.created", str(s)) for s in (1, 2, 3, 4)] + [("orders.x.eu", "1"), ("orders.x.eu", "2")])
        self.assertEqual(namespace["rejects"], {"batchInvalid": 1})


class ForeignProducerToSwift(ConformanceCase):
    """producer.py and the C producer -> `nbus subscribe --format json`."""

    HEADERS = [("trace", "t-42"), ("tenant", "acmé 订单"), ("empty", ""), ("equation", "a=b=c")]

    def run_producer(self, argv_prefix, *, via_broker, binary, count=5):
        name = "conformance.producer.café" if not binary else "conformance.blob"
        if via_broker:
            broker, frontend, backend = self.broker()
            sub = self.nbus_subscribe(["conformance.>"], count, connect=[backend])
            where = ["--connect", frontend]
        else:
            endpoint = self.endpoint("direct")
            sub = self.nbus_subscribe(["conformance.>"], count, connect=[endpoint])
            where = ["--bind", endpoint]
        argv = [*argv_prefix, name]
        argv += ["--payload-hex", "00ff80c0aefe0d0a"] if binary else ['{"order": {n}, "note": "ünïcode"}']
        argv += ["--count", str(count), "--content-type", "json" if not binary else "200", "--print-frames",  # a name, as nbus takes
                 "--timeout", str(TIMEOUT), *where]
        for key, value in self.HEADERS:
            argv += ["--header", f"{key}={value}"]
        producer = self.start(os.path.basename(argv_prefix[-1]), argv)
        out, _ = self.finish_ok(producer)
        sub_out, sub_err = self.finish_ok(sub)
        if via_broker:
            broker.stop()

        sent = [nbp.decode([bytes.fromhex(line)]) for line in out.split()]   # the reference decoder
        self.assertEqual(len(sent), count)
        for number, n in enumerate(sent, 1):        # the producer encoded what it was asked to
            self.assertEqual(n.name, name)
            self.assertEqual(n.sequence, number)
            self.assertEqual(n.headers, tuple(self.HEADERS))
            self.assertEqual(n.content_type, 2 if not binary else 200)
            self.assertEqual(n.payload, bytes.fromhex("00ff80c0aefe0d0a") if binary else
                             ('{"order": %d, "note": "ünïcode"}' % number).encode())
            self.assertNotEqual(n.publisher_id, 0)
            self.assertLessEqual(self.started_ns, n.timestamp)
            self.assertLessEqual(n.timestamp, time.time_ns())
            self.assertEqual(n.flags, 0)
            self.assertEqual(n.reserved, 0)
        self.assertEqual(len({n.publisher_id for n in sent}), 1)

        got, gaps = self.notifications(sub_out)
        self.assertEqual(gaps, [])
        self.assertEqual(len(got), count, sub_err)
        for g, s in zip(got, sent):
            self.assert_fields(g, s, "nbus subscribe")
            if binary:
                self.assertIn("payloadBase64", g)   # not UTF-8: base64 in nbus's JSON
        received, lost, rejected = self.summary(sub_err, "nbus subscribe")
        self.assertEqual((received, lost, sum(rejected.values())), (count, 0, 0), sub_err)

    def test_python_producer_direct(self):
        self.run_producer([sys.executable, PRODUCER_PY], via_broker=False, binary=False)

    def test_python_producer_binary_payload_through_broker(self):
        self.run_producer([sys.executable, PRODUCER_PY], via_broker=True, binary=True)

    def test_c_producer_direct(self):
        self.require_c_producer()
        self.run_producer([C_PRODUCER], via_broker=False, binary=False)

    def test_c_producer_binary_payload_through_broker(self):
        self.require_c_producer()
        self.run_producer([C_PRODUCER], via_broker=True, binary=True)



class SwiftProducerToPython(ConformanceCase):
    """`nbus publish` (and the shell examples) -> consumer.py."""

    def test_nbus_publish_to_consumer_py_direct(self):
        endpoint, count = self.endpoint("direct"), 6
        consumer = self.consumer_py(["reverse.*.eu"], count, connect=[endpoint])
        before = time.time_ns()
        publish = self.start("nbus-publish", [
            NBUS, "publish", "reverse.orders.eu", 'order {n} · ünïcode', "--count", str(count),
            "--header", "tenant=acmé", "--header", "trace=t-1", "--header", "empty=", "--content-type", "json",
            "--bind", endpoint, "--timeout", str(TIMEOUT)])
        self.finish_ok(publish)
        after = time.time_ns()
        out, err = self.finish_ok(consumer)
        got, gaps = self.notifications(out)
        self.assertEqual(gaps, [])
        self.assertEqual([g["sequence"] for g in got], list(range(1, count + 1)))
        self.assertEqual(len({g["publisherID"] for g in got}), 1)
        self.assertNotEqual(int(got[0]["publisherID"], 16), 0)
        for number, g in enumerate(got, 1):
            self.assertEqual(g["name"], "reverse.orders.eu")
            self.assertEqual(g["headers"], {"tenant": "acmé", "trace": "t-1", "empty": ""})
            self.assertEqual(g["contentType"], "json")
            self.assertEqual(payload_of(g), f"order {number} · ünïcode".encode())
            self.assertTrue(before - 10**9 <= g["timestamp"] <= after + 10**9, g["timestamp"])
        self.assertEqual(self.summary(err, "consumer.py"), (count, 0, collections.Counter()))

    def test_nbus_publish_large_payload_through_broker(self):
        broker, frontend, backend = self.broker()
        consumer = self.consumer_py(["reverse.large"], 2, connect=[backend])
        publish = self.start("nbus-publish", [
            NBUS, "publish", "reverse.large", "0123456789", "--size", "200000", "--count", "2",
            "--connect", frontend, "--timeout", str(TIMEOUT)])
        self.finish_ok(publish)
        out, err = self.finish_ok(consumer)
        broker.stop()
        got, gaps = self.notifications(out)
        self.assertEqual(gaps, [])
        self.assertEqual([g["sequence"] for g in got], [1, 2])
        for g in got:
            self.assertEqual(payload_of(g), (b"0123456789" * 20000))
        self.assertEqual(self.summary(err, "consumer.py")[:2], (2, 0))

    def test_shell_log_to_bus(self):
        """examples/shell/log-to-bus.sh: `tail -F LOG | nbus publish logs.app --lines`."""
        endpoint, log = self.endpoint("lines"), os.path.join(self.dir, "app.log")
        lines = ["first line", "", "ünïcode line with\ttab", "last"]
        open(log, "w").close()
        consumer = self.consumer_py(["logs.>"], len(lines), connect=[endpoint])
        shipper = self.start("log-to-bus.sh", ["sh", os.path.join(SHELL, "log-to-bus.sh"), log, "logs.app",
                                               "--bind", endpoint, "--timeout", str(TIMEOUT)], group=True)
        with open(log, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        out, err = self.finish_ok(consumer)
        shipper.stop()                           # tail -F never ends: stop the whole pipeline
        got, gaps = self.notifications(out)
        self.assertEqual(gaps, [])
        self.assertEqual([payload_of(g).decode() for g in got], lines)
        self.assertEqual({g["name"] for g in got}, {"logs.app"})
        self.assertEqual([g["sequence"] for g in got], [1, 2, 3, 4])
        self.assertEqual(self.summary(err, "consumer.py")[:2], (len(lines), 0))

    def test_shell_jsonl_to_bus(self):
        """examples/shell/jsonl-to-bus.sh: `nbus publish logs.app --lines --input json`."""
        endpoint = self.endpoint("jsonl")
        records = [
            {"payload": "plain text"},
            {"name": "logs.app.errors", "headers": {"level": "error", "code": 7}, "payload": "boom"},
            {"headers": {"host": "ünï"}, "payload": {"structured": [1, 2]}},
            {"name": "logs.app.errors"},
        ]
        consumer = self.consumer_py(["logs.>"], len(records), connect=[endpoint])
        publish = self.start("jsonl-to-bus.sh", [
            "sh", os.path.join(SHELL, "jsonl-to-bus.sh"), "logs.app", "--header", "source=shell",
            "--bind", endpoint, "--timeout", str(TIMEOUT)],
            stdin_bytes="".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode())
        self.finish_ok(publish)
        out, _ = self.finish_ok(consumer)
        got, _ = self.notifications(out)
        self.assertEqual([g["name"] for g in got], ["logs.app", "logs.app.errors", "logs.app", "logs.app.errors"])
        self.assertEqual([g["sequence"] for g in got], [1, 1, 2, 2])       # per (publisher, name)
        self.assertEqual(got[0]["headers"], {"source": "shell"})
        self.assertEqual(got[1]["headers"], {"source": "shell", "level": "error", "code": "7"})
        self.assertEqual(payload_of(got[1]), b"boom")
        self.assertEqual(json.loads(payload_of(got[2])), {"structured": [1, 2]})
        self.assertEqual(got[2]["headers"], {"source": "shell", "host": "ünï"})
        self.assertEqual(payload_of(got[3]), b"")

    def test_shell_sample_events(self):
        """examples/shell/events.jsonl, the README's sample, goes through as documented."""
        endpoint = self.endpoint("sample")
        with open(os.path.join(SHELL, "events.jsonl"), "rb") as f:
            sample = f.read()
        consumer = self.consumer_py(["logs.>"], 3, connect=[endpoint])
        publish = self.start("jsonl-to-bus.sh", ["sh", os.path.join(SHELL, "jsonl-to-bus.sh"), "logs.app",
                                                 "--bind", endpoint, "--timeout", str(TIMEOUT)], stdin_bytes=sample)
        self.finish_ok(publish)
        out, _ = self.finish_ok(consumer)
        got, _ = self.notifications(out)
        self.assertEqual([g["name"] for g in got], ["logs.app", "logs.app.errors", "logs.app"])
        self.assertEqual([g["headers"] for g in got], [{}, {"level": "error", "code": "507"}, {"host": "web-1"}])
        self.assertEqual(payload_of(got[0]), b"service started")
        self.assertEqual(payload_of(got[1]), b"disk full")
        self.assertEqual(json.loads(payload_of(got[2])), {"latencyMs": 12, "path": "/orders"})


class ForeignProducerViolatingSpec(ConformanceCase):
    """Every invalid vector, sent raw between valid messages, to nbus subscribe and consumer.py."""

    def test_sendable_vectors(self):
        invalid = load_vectors("invalid.json")
        skipped = [v["id"] for v in invalid if v["id"] in UNSENDABLE]
        self.assertEqual(skipped, ["zero-frames"])       # only the API-only vector is left out
        self.assertTrue(all(len(v["frames"]) >= 1 for v in invalid if v["id"] not in UNSENDABLE))

    def run_group(self, max_payload, invalid, valid_vectors):
        """One XPUB, two subscribers ('>': every check runs on every message); the valid
        traffic is generated messages interleaved with the invalid ones, plus the valid vectors."""
        endpoint = self.endpoint(f"invalid-{max_payload}")
        sock = self.xpub(bind=endpoint)
        state = nbp.PublisherState()
        limit = nbp.DEFAULT_MAX_PAYLOAD if max_payload is None else max_payload
        sends, expected = [], []

        def valid(i):
            payload = b"" if max_payload == 0 else b"valid %d" % i
            frame = state.encode("conformance.valid", payload, [("i", str(i))], content_type=1,
                                 max_payload=limit)
            sends.append([frame])
            expected.append(nbp.decode([frame]))

        for i, v in enumerate(invalid):
            valid(i)
            sends.append([bytes.fromhex(f) for f in v["frames"]])
        for v in valid_vectors:
            valid(len(sends))
            frames = [bytes.fromhex(f) for f in v["frames"]]
            sends.append(frames)
            expected.append(nbp.decode(frames, max_payload=limit))
        valid(len(sends))

        kw = {} if max_payload is None else {"max_payload": max_payload}
        swift = self.nbus_subscribe([">"], len(expected), connect=[endpoint], **kw)
        python = self.consumer_py([">"], len(expected), connect=[endpoint], **kw)
        self.wait_subscriptions(sock, b"", 2)            # both '>' subscriptions reached this socket
        for frames in sends:
            sock.send_multipart(frames)

        want = collections.Counter(v["reason"] for v in invalid)
        for child, program in ((swift, "nbus subscribe"), (python, "consumer.py")):
            out, err = self.finish_ok(child)
            got, gaps = self.notifications(out)
            self.assertEqual(gaps, [], f"{program}: {gaps}")
            self.assertEqual(len(got), len(expected), f"{program}\n{err}")
            for g, s in zip(got, expected):
                self.assert_fields(g, s, program)
            received, lost, rejected = self.summary(err, program)
            self.assertEqual(received, len(expected), err)
            self.assertEqual(lost, 0, err)
            self.assertEqual(rejected, want, f"{program} (max payload {max_payload}):\n{err}")
        sock.close()

    def test_nbus_json_keeps_byte_wise_distinct_header_keys(self):
        """Header keys compare byte-wise (NBP-1 2.2): NFC and NFD spellings are two keys."""
        vector = next(v for v in load_vectors("valid.json") if v["id"] == "keys-differ-only-in-normalization")
        endpoint = self.endpoint("keys")
        sock = self.xpub(bind=endpoint)
        sub = self.nbus_subscribe([">"], 1, connect=[endpoint])
        self.wait_subscriptions(sock, b"", 1)
        sock.send(bytes.fromhex(vector["frames"][0]))
        out, err = self.finish_ok(sub)
        got, _ = self.notifications(out)
        self.assertEqual(len(got), 1, err)
        headers = got[0]["headers"]
        self.assertEqual(len(headers), 2, f"NFC and NFD keys merged: {headers!r}")
        self.assert_headers(headers, tuple(tuple(h) for h in vector["decoded"]["headers"]), "", vector["id"])

    def groups(self):
        invalid = [v for v in load_vectors("invalid.json") if v["id"] not in UNSENDABLE]
        valid = load_vectors("valid.json")
        limits = sorted({v.get("maxPayload") for v in invalid + valid}, key=lambda x: -1 if x is None else x)
        for limit in limits:
            yield (limit, [v for v in invalid if v.get("maxPayload") == limit],
                   [v for v in valid if v.get("maxPayload") == limit])

    def test_invalid_vectors_default_max_payload(self):
        limit, invalid, valid = next(g for g in self.groups() if g[0] is None)
        self.assertGreater(len(invalid), 40)
        self.run_group(limit, invalid, valid)

    def test_invalid_vectors_custom_max_payload(self):
        groups = [g for g in self.groups() if g[0] is not None]
        self.assertEqual(sorted(g[0] for g in groups), [0, 16])
        for limit, invalid, valid in groups:
            with self.subTest(max_payload=limit):
                self.run_group(limit, invalid, valid)


class SequenceAcrossRestarts(ConformanceCase):
    """A restarted producer has a new publisher id and starts at 1: not a gap."""

    def test_foreign_producers_restart_swift_subscriber(self):
        endpoint, n = self.endpoint("fan-in"), 4
        runs = [[sys.executable, PRODUCER_PY], [sys.executable, PRODUCER_PY]]
        if self.have_c_producer():
            runs.append([C_PRODUCER])
        sub = self.nbus_subscribe(["restart.>"], n * len(runs), bind=[endpoint])
        for argv in runs:   # one after the other, same name, each a fresh process
            producer = self.start("producer", [*argv, "restart.orders", "r{n}", "--count", str(n),
                                               "--connect", endpoint, "--timeout", str(TIMEOUT)])
            self.finish_ok(producer)
        out, err = self.finish_ok(sub)
        got, gaps = self.notifications(out)
        self.assertEqual(gaps, [], err)
        publishers = list(dict.fromkeys(g["publisherID"] for g in got))
        self.assertEqual(len(publishers), len(runs))
        for p in publishers:
            self.assertEqual([g["sequence"] for g in got if g["publisherID"] == p], list(range(1, n + 1)))
        self.assertEqual(self.summary(err, "nbus subscribe")[:2], (n * len(runs), 0))

    def test_nbus_publish_restart_python_consumer(self):
        endpoint, n = self.endpoint("fan-in"), 3
        consumer = self.consumer_py(["restart.swift"], 2 * n, bind=[endpoint])
        for _ in range(2):
            self.finish_ok(self.start("nbus-publish", [NBUS, "publish", "restart.swift", "s{n}", "--count", str(n),
                                                       "--connect", endpoint, "--timeout", str(TIMEOUT)]))
        out, err = self.finish_ok(consumer)
        got, gaps = self.notifications(out)
        self.assertEqual(gaps, [], err)
        publishers = list(dict.fromkeys(g["publisherID"] for g in got))
        self.assertEqual(len(publishers), 2)
        for p in publishers:
            self.assertEqual([g["sequence"] for g in got if g["publisherID"] == p], list(range(1, n + 1)))
        self.assertEqual(self.summary(err, "consumer.py")[:2], (2 * n, 0))

    def test_real_gap_is_reported_control(self):
        """The control: a skipped sequence number is loss (exactly 1), a restart with a new id
        is not, and a repeated sequence under the same id is not loss either: it is a duplicate,
        discarded (NBP-1 section 8), so the repeat is never printed."""
        endpoint = self.endpoint("gap")
        sock = self.xpub(bind=endpoint)
        first, second = 0x1111111111111111, 0x2222222222222222
        plan = [(first, 1), (first, 2), (first, 4), (second, 1), (second, 2), (first, 5), (first, 5)]
        # The repeat of (first, 5) goes first, so the last one printed shows it was not.
        delivered = plan[:-2] + [(first, 5), (second, 3)]
        plan = plan + [(second, 3)]
        swift = self.nbus_subscribe(["gap.>"], len(delivered), connect=[endpoint])
        python = self.consumer_py(["gap.>"], len(delivered), connect=[endpoint])
        self.wait_subscriptions(sock, b"gap.", 2)
        for publisher, seq in plan:
            sock.send(nbp.encode("gap.test", b"x", sequence=seq, publisher_id=publisher, timestamp_ns=time.time_ns()))
        for child, program in ((swift, "nbus subscribe"), (python, "consumer.py")):
            out, err = self.finish_ok(child)
            got, gaps = self.notifications(out)
            self.assertEqual([(int(g["publisherID"], 16), g["sequence"]) for g in got], delivered, program)
            self.assertEqual(len(gaps), 1, f"{program}: {gaps}")
            self.assertEqual(gaps[0]["count"], 1)
            self.assertEqual((gaps[0]["firstSequence"], gaps[0]["lastSequence"]), (3, 3))
            self.assertEqual(self.summary(err, program)[:2], (len(delivered), 1), err)
        sock.close()


class TwoBrokers(ConformanceCase):
    """Several brokers (NBP-1 section 17): consumer.py connected to two brokers prints the first
    copy of each notification of a Swift publisher sending through both, once and in order."""

    def test_consumer_py_through_two_brokers(self):
        brokers = []
        for label in ("a", "b"):
            frontend, backend = self.endpoint(f"frontend-{label}"), self.endpoint(f"backend-{label}")
            self.start(f"nbus-broker-{label}", [NBUS, "broker", "--frontend", frontend, "--backend", backend])
            brokers.append((frontend, backend))
        count = 500
        consumer = self.consumer_py(["ha.>"], count, connect=[b for _, b in brokers])
        publish = self.start("nbus-publish", [
            NBUS, "publish", "ha.py", "n {n}", "--count", str(count), "--subscribers", "1", "--timeout", str(TIMEOUT),
            *[x for f, _ in brokers for x in ("--connect", f)]])
        self.finish_ok(publish)
        out, err = self.finish_ok(consumer)
        got, gaps = self.notifications(out)
        self.assertEqual([g["sequence"] for g in got], list(range(1, count + 1)), err)
        self.assertEqual(gaps, [])
        self.assertEqual(self.summary(err, "consumer.py")[:2], (count, 0), err)


class TypedConsumerRefusesWhatSwiftRefuses(unittest.TestCase):
    """typed_consumer.py's as_order refuses the bodies Swift's decoder refuses (found by a review:
    it printed `order 1 nan` where `nbus subscribe --decode json` said undecodable)."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, HERE)
        import typed_consumer
        cls.as_order = staticmethod(typed_consumer.as_order)

    @staticmethod
    def body(text):
        return nbp.Notification(name="orders.created", publisher_id=7, sequence=1, payload=text.encode(), content_type=2)

    def test_refused(self):
        for text in ('{"id":1,"total":NaN}', '{"id":3,"total":-Infinity}', '{"id":99999999999999999999,"total":1}',
                     '{"id":-9223372036854775809,"total":1}', '{"id":1,"total":1e400}', '{"id":true,"total":1}', '[1]'):
            with self.assertRaises(ValueError, msg=text):
                self.as_order(self.body(text))

    def test_accepted(self):
        self.assertEqual(self.as_order(self.body('{"id":42,"total":9.5}')), (42, 9.5))
        self.assertEqual(self.as_order(self.body('{"id":-9223372036854775808,"total":1}')), (-(1 << 63), 1))


class PathMergeStart(unittest.TestCase):
    """consumer.py's PathMerge holds a stream's start as PathMergeStateMachine does (socket-free,
    the clock injected). Found by the two-brokers test under load: the faster broker's first copy
    was sequence 174, the slower one's copies of 1 to 173 were then taken for duplicates, and
    consumer.py printed 327 of 500 with nothing counted lost."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, HERE)
        import consumer
        cls.merge = consumer.PathMerge

    @staticmethod
    def n(sequence):
        return nbp.Notification(name="ha.py", publisher_id=7, sequence=sequence, payload=b"")

    def delivered(self, items):
        return [item[1].sequence for item in items if item[0] == "deliver"]

    def test_an_older_copy_from_the_slower_path_is_not_a_duplicate(self):
        merge, out = self.merge(2, 15.0), []
        for sequence in range(174, 180):
            out += merge.observe(1, self.n(sequence), 0.0)
        self.assertEqual(out, [], "a later first copy is held, not taken as the start")
        for sequence in range(1, 180):
            out += merge.observe(0, self.n(sequence), 0.01)
        self.assertEqual(self.delivered(out), list(range(1, 180)))
        self.assertEqual((merge.lost, merge.duplicates), (0, 6))

    def test_a_stream_joined_midway_starts_from_the_oldest_held_after_the_start_wait(self):
        merge = self.merge(2, 15.0)
        out = merge.observe(0, self.n(50), 0.0) + merge.observe(0, self.n(51), 0.2)
        self.assertEqual(out, [])
        self.assertEqual(merge.tick(0.9), [])
        self.assertEqual(self.delivered(merge.tick(1.1)), [50, 51])
        self.assertEqual(merge.lost, 0, "the first notification of a stream is never a loss")

    def test_sequence_one_starts_at_once_and_its_copy_is_a_duplicate(self):
        merge = self.merge(2, 15.0)
        out = merge.observe(0, self.n(1), 0.0) + merge.observe(1, self.n(1), 0.0) + merge.observe(0, self.n(2), 0.0)
        self.assertEqual(self.delivered(out), [1, 2])
        self.assertEqual(merge.duplicates, 1)

    def test_every_path_bringing_some_starts_without_waiting(self):
        merge = self.merge(2, 15.0)
        out = merge.observe(0, self.n(7), 0.0) + merge.observe(1, self.n(6), 0.0)
        self.assertEqual(self.delivered(out), [6, 7])


class BatchFrames(ConformanceCase):
    """Batch frames (NBP-1 section 2.3) through `nbus broker`, Swift and Python on either side."""

    def frames_read(self, err):
        m = re.search(r"consumer\.py: received \d+; .*; frames (\d+)", err)
        self.assertIsNotNone(m, err)
        return int(m.group(1))

    def publish_through_broker(self, count, *extra):
        broker, frontend, backend = self.broker()
        consumer = self.consumer_py(["batch.>"], count, connect=[backend])
        publish = self.start("nbus-publish", [
            NBUS, "publish", "batch.orders", "order {n}", "--count", str(count), "--connect", frontend,
            "--timeout", str(TIMEOUT), *extra])
        self.finish_ok(publish)
        out, err = self.finish_ok(consumer)
        broker.stop()
        got, gaps = self.notifications(out)
        self.assertEqual(gaps, [], err)
        self.assertEqual([g["sequence"] for g in got], list(range(1, count + 1)), "lost, repeated or reordered")
        self.assertEqual([payload_of(g) for g in got], [f"order {n}".encode() for n in range(1, count + 1)])
        self.assertEqual(self.summary(err, "consumer.py"), (count, 0, collections.Counter()))
        return self.frames_read(err)

    def test_nbus_publish_batches_reach_consumer_py_through_broker(self):
        count = 20000
        frames = self.publish_through_broker(count)
        # Posted as fast as nbus can: runs of the one name left the publisher as batch frames,
        # which the broker forwarded as they were.
        self.assertLess(frames, count, "no batch frame arrived")

    def test_nbus_publish_no_batch_sends_one_frame_each(self):
        count = 2000
        self.assertEqual(self.publish_through_broker(count, "--no-batch"), count)

    def test_foreign_batches_gaps_and_a_malformed_batch(self):
        """A raw producer's batches through the broker: gaps inside (8) and between (4) batches,
        a malformed batch (10-12, counted as batchInvalid, its 3 notifications reported and lost),
        then a single frame (13): both consumers deliver the same and count the same."""
        broker, frontend, backend = self.broker()
        pid = 0x0BA7C4
        def frame(seq):
            return nbp.encode("batch.raw", b"r%d" % seq, [("seq", str(seq))], sequence=seq, publisher_id=pid,
                              timestamp_ns=time.time_ns())
        def batch(seqs):
            return nbp.encode_batch([frame(s) for s in seqs])
        malformed = batch([10, 11, 12]) + b"\x00"
        plan = [batch([1, 2, 3]), batch([5, 6]), batch([7, 9]), malformed, frame(13)]
        delivered = [1, 2, 3, 5, 6, 7, 9, 13]
        swift = self.nbus_subscribe(["batch.>"], len(delivered), connect=[backend])
        python = self.consumer_py(["batch.raw"], len(delivered), connect=[backend])
        sock = self.xpub(connect=frontend)
        self.wait_subscriptions(sock, b"batch.", 1)
        self.wait_subscriptions(sock, b"batch.raw\x00", 1)
        for f in plan:
            sock.send(f)
        for child, program in ((swift, "nbus subscribe"), (python, "consumer.py")):
            out, err = self.finish_ok(child)
            got, gaps = self.notifications(out)
            self.assertEqual([g["sequence"] for g in got], delivered, program)
            for g in got:
                self.assertEqual(payload_of(g), b"r%d" % g["sequence"], program)
            self.assertEqual([(g["firstSequence"], g["lastSequence"]) for g in gaps], [(4, 4), (8, 8), (10, 12)],
                             f"{program}: {gaps}")
            self.assertEqual(self.summary(err, program),
                             (len(delivered), 5, collections.Counter({"batchInvalid": 1})), err)
            if program == "nbus subscribe":   # its JSON summary's field
                self.assertIn('"rejectedBatchNotifications":3', err)
            else:
                self.assertIn("notifications in rejected batches: 3", err)
        broker.stop()


class RequestReplyWithPython(ConformanceCase):
    """`nbus request` -> nbus broker -> responder.py (NBP-1 section 16) and back."""

    def wait_for_output(self, child, text, timeout=TIMEOUT):
        """Until `child` has written `text` to stdout (it says so once subscribed); bounded."""
        deadline = time.monotonic() + timeout
        while text not in child.stdout():
            if child.popen.poll() is not None or time.monotonic() > deadline:
                self.fail(f"{child.name} never wrote {text!r}\n{child.report()}")
            time.sleep(0.02)

    def test_python_responder_answers_nbus_request(self):
        _, frontend, backend = self.broker()
        responder = self.start("responder.py", [
            sys.executable, RESPONDER_PY, "math.>", "--count", "2", "--frontend", frontend, "--backend", backend])
        self.wait_for_output(responder, "ready")
        # The first as responder.py's docstring teaches it, with request's default --timeout (5 s):
        # a reply held until the requester's subscription was looked at again took all of it.
        for text, expected, wait in (("hello", "HELLO\n", []), ("café · ünï", "CAFÉ · ÜNÏ\n", ["--timeout", str(TIMEOUT)])):
            request = self.start("nbus-request", [
                NBUS, "request", "math.upper", text, "--frontend", frontend, "--backend", backend] + wait)
            out, _ = self.finish_ok(request)
            self.assertEqual(out, expected)
        out, _ = self.finish_ok(responder)
        self.assertEqual(out.count("replied to math.upper (ok)"), 2, out)

    def test_nbus_reply_answers_and_no_responders_is_exit_2(self):
        _, frontend, backend = self.broker()
        started = time.monotonic()
        nobody = self.start("nbus-request-nobody", [
            NBUS, "request", "nobody.home", "x", "--frontend", frontend, "--backend", backend, "--timeout", "30"])
        rc, _, err = nobody.finish(TIMEOUT)
        self.assertEqual(rc, 2, nobody.report())
        self.assertLess(time.monotonic() - started, 10, "no responders is said at once, not after --timeout")
        self.assertIn("no responders", err)


if __name__ == "__main__":
    unittest.main()
