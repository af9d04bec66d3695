#!/usr/bin/env python3
"""Subscribe to NBP/1 notifications from Python (pyzmq + protocol/python/nbp.py).

    python3 examples/python/consumer.py 'orders.>'                # from `nbus broker`'s backend
    python3 examples/python/consumer.py orders.created --connect ipc:///tmp/orders.sock --count 10

For every PATTERN it subscribes to the ZeroMQ prefix of NBP-1 section 5.1
(``nbp.Pattern.compile(p).prefix``), so the producer filters; it then runs the
receiver checks of section 7 on every message (``nbp.decode_all``: one
notification, or a batch of one name's notifications, section 2.3), matches the
name against the patterns locally (a wildcard prefix selects a superset), and
prints one line per notification on stdout. Malformed messages are dropped and
counted by reason; sequence numbers are tracked per (publisher id, name) and a
gap is printed in-band and counted as lost upstream (section 8). It also
listens for NotificationBus end-of-stream records (``_nbus.eos.<publisher>``,
section 15), so a lost tail of a Swift publisher is counted too. With several
--connect endpoints (one bus through several brokers, section 17) it keeps one
socket per broker and prints the first copy of each notification, in order.

The summary goes to stderr when it stops: after --count notifications, after
--timeout seconds (exit 1 if --count was not reached), or on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import random
import base64
import json
import os
import signal
import struct
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "protocol", "python"))

import nbp  # noqa: E402

try:
    import zmq
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("consumer.py: pyzmq is missing: python3 -m pip install pyzmq "
             "(or on Debian: apt-get install python3-zmq, then use /usr/bin/python3)")

DEFAULT_BACKEND = "tcp://127.0.0.1:5551"  # `nbus broker`'s default backend
END_OF_STREAM = "_nbus.eos."               # NBP-1 section 15


def parse_args(argv):
    p = argparse.ArgumentParser(prog="consumer.py", description="Print the NBP/1 notifications matching PATTERN...")
    p.add_argument("patterns", nargs="+", metavar="PATTERN", help="orders.created, orders.*.eu, orders.>, >")
    p.add_argument("-c", "--count", type=int, help="stop after this many notifications")
    p.add_argument("--timeout", type=float, help="stop after this many seconds (exit 1 if --count was not reached)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    p.add_argument("--retained", action="store_true",
                   help="start each PATTERN with the current values a broker keeps (NBP-1 section 18), "
                        "marked retained (one --connect only)")
    p.add_argument("--max-payload", type=int, default=nbp.DEFAULT_MAX_PAYLOAD, metavar="BYTES",
                   help=f"largest payload accepted (default {nbp.DEFAULT_MAX_PAYLOAD})")
    p.add_argument("--gap-wait", type=float, default=15.0, metavar="SECONDS",
                   help="with several --connect (brokers): how long a hole one broker left is held for the "
                        "others to fill (default 15, as nbus)")
    p.add_argument("--connect", action="append", default=[], metavar="ENDPOINT",
                   help=f"connect to ENDPOINT, repeatable (default {DEFAULT_BACKEND}, the broker backend)")
    p.add_argument("--bind", action="append", default=[], metavar="ENDPOINT",
                   help="bind ENDPOINT, repeatable (fan-in: producers connect here)")
    a = p.parse_args(argv)
    try:
        a.compiled = [nbp.Pattern.compile(x) for x in a.patterns]
    except ValueError as e:
        p.error(str(e))
    if a.count is not None and a.count < 1:
        p.error("--count must be at least 1")
    if a.timeout is not None and a.timeout <= 0:
        p.error("--timeout must be positive")
    if not a.connect and not a.bind:
        a.connect = [DEFAULT_BACKEND]
    return a


def end_of_stream_entries(payload: bytes):
    """An end-of-stream record's (name, last sequence) entries (NBP-1 section 15), and 1 if it
    broke off at a malformed entry (the entries before it apply, the rest cannot), else 0."""
    entries, pos = [], 0
    while pos < len(payload):
        n = payload[pos]
        end = pos + 1 + n
        try:
            if n == 0 or end + 8 > len(payload):
                raise ValueError("entry cut short")
            name = payload[pos + 1:end].decode("utf-8")
        except ValueError:   # UnicodeDecodeError too
            return entries, 1
        (final,) = struct.unpack_from("!Q", payload, end)
        entries.append((name, final))
        pos = end + 8
    return entries, 0


class Streams:
    """Last sequence per (publisher id, name): gap detection of NBP-1 section 8, and the first
    copy wins when several brokers bring every notification (section 17)."""

    def __init__(self):
        self.last = {}
        self.lost = 0
        self.duplicates = 0
        self.malformed_end_of_stream = 0   # records cut short or with a bad name (NBP-1 15.1)

    def observe(self, publisher_id: int, name: str, sequence: int):
        """The notifications lost just before this one, or None for a duplicate (never printed)."""
        key = (publisher_id, name)
        last = self.last.get(key)
        if last is None:                # first message of a stream (a restarted producer: a new id)
            self.last[key] = sequence
            return 0
        if sequence <= last:            # a copy another broker brought first, or a replay: discard
            self.duplicates += 1
            return None
        missing = sequence - last - 1
        self.last[key] = sequence
        self.lost += missing
        return missing

    def end_of_stream(self, publisher_id: int, payload: bytes):
        """Apply an end-of-stream record: [(name, lost, last)] for the tracked streams it closes."""
        gaps = []
        entries, malformed = end_of_stream_entries(payload)
        self.malformed_end_of_stream += malformed
        for name, final in entries:
            tracked = self.last.pop((publisher_id, name), None)
            if tracked is not None and final > tracked:
                self.lost += final - tracked
                gaps.append((name, final - tracked, tracked + 1, final))
        return gaps


class PathMerge:
    """Several brokers (NBP-1 section 17), one SUB socket each: the first copy of each
    (publisher id, name, sequence) is printed, in order; a hole one broker left is held while
    another broker that carries the stream and has not passed it may still fill it, at most
    `wait` seconds; then it is a gap. The reference for a foreign consumer of two brokers.

    A stream's start is held too (as NotificationBus's PathMergeStateMachine holds it): two
    brokers forward a new subscriber's first notifications at slightly different moments, so the
    first copy to arrive may be a later sequence than the slower broker's first. Taken as the
    start, every older copy would be discarded as a duplicate and never printed nor counted. What
    arrives is held until sequence 1 arrives, every path brought some of the stream, or
    `START_WAIT` (1 s) passed; then the stream starts from the oldest held."""

    START_WAIT = 1.0

    def __init__(self, paths: int, wait: float):
        self.paths, self.wait = paths, wait
        self.streams = {}     # key -> {"delivered", "seen": [..], "held": {seq: n}, "since"}
        self.lost = 0
        self.duplicates = 0
        self.malformed_end_of_stream = 0

    def _can_still_bring(self, s, missing):
        return any(0 < seen < missing for seen in s["seen"])

    def _settle(self, key, s, now, out):
        """Declares holes no path can fill (or waited for long enough); returns what to print."""
        if not s["started"]:
            if not s["held"]:
                return
            first = min(s["held"])
            every_path_brought = all(seen > 0 for seen in s["seen"])
            if not (first == 1 or every_path_brought or now - s["since"] >= min(self.wait, self.START_WAIT)):
                return
            s["started"] = True
            s["delivered"] = first - 1
            self._release(key, s, out)
            s["since"] = now
        while s["held"] or (s["end"] is not None and s["delivered"] < s["end"]):
            missing = s["delivered"] + 1
            if now - s["since"] < self.wait and self._can_still_bring(s, missing):
                return
            upto = min(s["held"]) - 1 if s["held"] else s["end"]
            self.lost += upto - missing + 1
            out.append(("gap", key, upto - missing + 1, missing, upto))
            s["delivered"] = upto
            self._release(key, s, out)
            s["since"] = now

    def _release(self, key, s, out):
        while s["delivered"] + 1 in s["held"]:
            s["delivered"] += 1
            out.append(("deliver", s["held"].pop(s["delivered"])))

    def observe(self, path: int, n: nbp.Notification, now: float):
        """What to print, in order: ("deliver", n) and ("gap", key, count, first, last) items."""
        key, out = (n.publisher_id, n.name), []
        s = self.streams.get(key)
        if s is None:                   # first of a stream, whichever broker brings it: held (see above)
            s = self.streams[key] = {"delivered": 0, "seen": [0] * self.paths, "held": {},
                                     "since": now, "end": None, "started": False}
        s["seen"][path] = max(s["seen"][path], n.sequence)
        if (s["started"] and n.sequence <= s["delivered"]) or n.sequence in s["held"]:
            self.duplicates += 1
            return out
        if not s["held"]:
            s["since"] = now
        s["held"][n.sequence] = n
        if s["started"]:
            self._release(key, s, out)
        self._settle(key, s, now, out)
        return out

    def end_of_stream(self, path: int, publisher_id: int, payload: bytes, now: float):
        """An end-of-stream record from one broker: that path brings nothing more of its streams."""
        out = []
        entries, malformed = end_of_stream_entries(payload)
        self.malformed_end_of_stream += malformed
        for name, final in entries:
            s = self.streams.get((publisher_id, name))
            if s is None:
                continue
            s["seen"][path] = max(s["seen"][path], final)
            s["end"] = max(s["end"] or 0, final)
            if s["started"] and s["delivered"] < final and not s["held"]:
                s["since"] = now
            self._settle((publisher_id, name), s, now, out)
        return out

    def tick(self, now: float):
        out = []
        for key, s in self.streams.items():
            self._settle(key, s, now, out)
        return out


# Content types by the names `nbus publish --content-type` takes; other codes print as decimal text.
CONTENT_TYPE_NAMES = {0: "unspecified", 1: "text", 2: "json", 3: "cbor", 4: "msgpack", 5: "protobuf"}


def rfc3339(nanoseconds: int) -> str:
    """`timestamp` as `nbus subscribe --format json` writes it in `time`: UTC, nine fractional digits."""
    seconds, fraction = divmod(nanoseconds, 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".%09dZ" % fraction


def render(n: nbp.Notification, fmt: str) -> str:
    if fmt == "json":  # the same keys as `nbus subscribe --format json`
        obj = {"name": n.name, "sequence": n.sequence, "publisherID": f"{n.publisher_id:016x}",
               "time": rfc3339(n.timestamp), "timestamp": n.timestamp,
               "contentType": CONTENT_TYPE_NAMES.get(n.content_type, str(n.content_type)),
               "headers": dict(n.headers)}
        if n.is_retained:  # a kept current value (NBP-1 section 18), as `nbus subscribe` marks it
            obj["retained"] = True
        try:
            obj["payload"] = n.payload.decode("utf-8")
        except UnicodeDecodeError:
            obj["payloadBase64"] = base64.b64encode(n.payload).decode("ascii")
        return json.dumps(obj, sort_keys=True, ensure_ascii=False)
    try:
        payload = n.payload.decode("utf-8")
    except UnicodeDecodeError:
        payload = "base64:" + base64.b64encode(n.payload).decode("ascii")
    line = f"{n.name} seq={n.sequence} publisher={n.publisher_id:x}"
    if n.headers:
        line += " headers=[" + ",".join(f"{k}={v}" for k, v in n.headers) + "]"
    if n.content_type:
        line += f" type={nbp.CONTENT_TYPES.get(n.content_type, n.content_type)}"
    if n.is_retained:
        line += " retained"
    return line + f" payload={payload}"


def render_gap(name: str, publisher_id: int, count: int, first: int, last: int, fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"gap": "lostUpstream", "count": count, "name": name, "publisherID": f"{publisher_id:016x}",
                           "firstSequence": first, "lastSequence": last}, sort_keys=True, ensure_ascii=False)
    return f"! gap(lostUpstream, {count}) {name} publisher={publisher_id:x} sequences {first}...{last}"


class Stop(Exception):
    pass


def main(argv=None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)

    def on_signal(signum, frame):
        raise Stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    ctx = zmq.Context()
    # Several brokers (NBP-1 section 17): one SUB socket per broker, so each copy's path is known
    # and the first copy wins; otherwise one socket for every endpoint.
    several = len(a.connect) > 1 and not a.bind
    socks = [ctx.socket(zmq.SUB) for _ in (a.connect if several else [None])]
    try:
        for endpoint in a.bind:
            socks[0].bind(endpoint)
        for index, endpoint in enumerate(a.connect):
            socks[index if several else 0].connect(endpoint)
    except zmq.ZMQError as e:
        print(f"consumer.py: {e}", file=sys.stderr)
        for sock in socks:
            sock.close(0)
        ctx.term()
        return 2
    poller = zmq.Poller()
    for sock in socks:
        for prefix in dict.fromkeys(p.prefix for p in a.compiled):   # one ZMQ_SUBSCRIBE per distinct prefix
            sock.setsockopt(zmq.SUBSCRIBE, prefix)
        sock.setsockopt(zmq.SUBSCRIBE, END_OF_STREAM.encode())       # end-of-stream records (optional)
        poller.register(sock, zmq.POLLIN)
    # Retained values (NBP-1 section 18): per pattern, the exact reply name, then the request, on
    # the same socket after the pattern's prefix; the broker answers under the reply name alone.
    snapshots = {}
    if a.retained and not several:
        bus_id = random.randrange(1, 1 << 64)
        for number, pattern in enumerate(a.compiled, start=1):
            reply = nbp.retained_reply_name(bus_id, number)
            request = nbp.retained_request_topic(bus_id, number, pattern.text)
            snapshots[reply] = (pattern, request)
            socks[0].setsockopt(zmq.SUBSCRIBE, reply.encode() + b"\x00")
            socks[0].setsockopt(zmq.SUBSCRIBE, request)

    out = sys.stdout
    rejects = Counter()
    streams = PathMerge(len(socks), a.gap_wait) if several else Streams()
    received = filtered = frames_read = in_rejected_batches = 0
    deadline = None if a.timeout is None else time.monotonic() + a.timeout
    timed_out = False

    def emit(items):
        """Prints a PathMerge's output; returns how many notifications it printed."""
        printed = 0
        for item in items:
            if item[0] == "gap":
                _, (publisher_id, name), count, first, last = item
                if any(p.matches(name) for p in a.compiled):
                    out.write(render_gap(name, publisher_id, count, first, last, a.format) + "\n")
            else:
                out.write(render(item[1], a.format) + "\n")
                printed += 1
        return printed

    try:
        while a.count is None or received < a.count:
            wait = -1 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            if several:
                wait = 100 if wait < 0 else min(wait, 100)              # held holes are settled on time
            ready = dict(poller.poll(wait))
            if several:
                received += emit(streams.tick(time.monotonic()))
            if not ready:
                if deadline is not None and time.monotonic() >= deadline:
                    timed_out = True
                    break
                continue
            for path, sock in enumerate(socks):
                if sock not in ready:
                    continue
                frames = sock.recv_multipart()                      # every frame: the count is checked
                frames_read += 1
                try:
                    batch = nbp.decode_all(frames, max_payload=a.max_payload)   # 1 notification, or a batch
                except nbp.Rejected as e:
                    rejects[e.reason] += 1
                    in_rejected_batches += e.records or 0               # what a rejected batch held
                    continue
                for n in batch:
                    if n.name.split(".", 1)[0] == "_nbus":            # the bus's own control traffic
                        if n.name in snapshots:                        # our retained snapshot
                            pattern, request = snapshots[n.name]
                            for kept in nbp.retained_snapshot_entries(n, max_payload=a.max_payload):
                                # Tracking starts at the kept value's sequence: no gap before the live one.
                                if pattern.matches(kept.name) and streams.observe(kept.publisher_id, kept.name,
                                                                                  kept.sequence) is not None:
                                    out.write(render(kept, a.format) + "\n")
                                    received += 1
                            if n.header_dict.get("final") == "1":
                                socks[0].setsockopt(zmq.UNSUBSCRIBE, request)
                                socks[0].setsockopt(zmq.UNSUBSCRIBE, n.name.encode() + b"\x00")
                                del snapshots[n.name]
                            continue
                        if n.name.startswith(END_OF_STREAM):
                            if several:
                                received += emit(streams.end_of_stream(path, n.publisher_id, n.payload, time.monotonic()))
                                continue
                            for name, count, first, last in streams.end_of_stream(n.publisher_id, n.payload):
                                if any(p.matches(name) for p in a.compiled):
                                    out.write(render_gap(name, n.publisher_id, count, first, last, a.format) + "\n")
                        continue
                    if not any(p.matches(n.name) for p in a.compiled):   # wildcard prefixes select a superset
                        filtered += 1
                        continue
                    if several:
                        received += emit(streams.observe(path, n, time.monotonic()))
                    else:
                        missing = streams.observe(n.publisher_id, n.name, n.sequence)
                        if missing is None:                              # a duplicate: never printed
                            continue
                        if missing:
                            out.write(render_gap(n.name, n.publisher_id, missing, n.sequence - missing,
                                                 n.sequence - 1, a.format) + "\n")
                        out.write(render(n, a.format) + "\n")
                        received += 1
                    if a.count is not None and received >= a.count:
                        break
                if a.count is not None and received >= a.count:
                    break
            out.flush()
    except Stop:
        pass
    finally:
        out.flush()
        for sock in socks:
            sock.close(0)
        ctx.term()

    print(f"consumer.py: received {received}; lost upstream {streams.lost}, filtered out {filtered}, "
          f"duplicates {streams.duplicates}, rejected malformed {sum(rejects.values())}; "
          f"frames {frames_read}", file=sys.stderr)
    if in_rejected_batches:
        print(f"  notifications in rejected batches: {in_rejected_batches}", file=sys.stderr)
    if streams.malformed_end_of_stream:
        print(f"  malformed end-of-stream records: {streams.malformed_end_of_stream} "
              "(a tail they would have reported is not counted)", file=sys.stderr)
    for reason in sorted(rejects):
        print(f"  rejected {reason}: {rejects[reason]}", file=sys.stderr)
    if timed_out and a.count is not None and received < a.count:
        print(f"consumer.py: received {received} of {a.count} before the {a.timeout} s timeout", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
