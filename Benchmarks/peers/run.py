#!/usr/bin/env python3
"""NotificationBus through `nbus broker` against NATS, Redis and bare ZeroMQ on one workload.

For each run and each system (the order rotates from run to run, so the machine's noise falls on
every system alike), each test with a fresh server on 127.0.0.1:
  throughput  1 publisher -> 1 subscriber on bench.a, N x 256 B, then one END message
  filtered    the publisher cycles bench.0 .. bench.9 (N in all), the subscriber takes bench.3
  fanout      1 publisher -> 4 subscribers on bench.a, N/4 x 256 B each (N copies delivered in all)
  latency     ping/pong round trips of 16 B: 1,000 warm-up, then --lat-n measured
after which the server is stopped by its PID. Per process (publisher, server, subscriber) each
throughput test records the CPU time (user + system) and the peak private memory (RssAnon).

Readiness is signalled, never slept for: a server is ready when it prints its ready line, a
subscriber (or ponger) when it has created its --ready file (only once its subscription is live).
Every process is bounded in time and killed by its PID past its bound.

Writes WORK/results/LABEL.jsonl (one record per test, and a first record describing the run),
then the report: WORK/results/LABEL.md (tables) and LABEL.html (tables and charts), see report.py.
Usage: run.py --nbus .build/release/nbus --clients .build/peers/bin [--runs 3] [--n 1000000]
(`make bench-peers` installs the servers, builds everything and runs this.)
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import select
import shlex
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLK = os.sysconf("SC_CLK_TCK")
SYSTEMS = ("nats", "redis", "zmqraw", "nbus", "relay")
TESTS = ("throughput", "filtered", "fanout", "latency")


def system_specs(clients, nbus, nbus_client):
    """Each system: its server command, the line it prints when ready, its client command."""
    nbus_client_cmd = shlex.split(nbus_client) if nbus_client else [
        nbus, "bench", "peer-client", "--frontend=tcp://127.0.0.1:15550", "--backend=tcp://127.0.0.1:15551"]
    return {
        "nats": dict(
            server=["nats-server", "-a", "127.0.0.1", "-p", "14222"], ready="Server is ready",
            client=[f"{clients}/natsbench", "-url=nats://127.0.0.1:14222"]),
        "redis": dict(
            server=["redis-server", "--bind", "127.0.0.1", "--port", "16379", "--save", "", "--appendonly", "no",
                    "--daemonize", "no", "--logfile", "", "--protected-mode", "yes"],
            ready="Ready to accept connections", client=[f"{clients}/redisbench", "--port=16379"],),
        # Bare libzmq, lossless: the publisher's XPUB with ZMQ_XPUB_NODROP, a proxy with HWM 1,000,000.
        "zmqraw": dict(
            server=[f"{clients}/zmqraw", "--mode=proxy", "--hwm=1000000",
                    "--frontend=tcp://127.0.0.1:15560", "--backend=tcp://127.0.0.1:15561"],
            ready="proxy: frontend",
            client=[f"{clients}/zmqraw", "--nodrop=1", "--frontend=tcp://127.0.0.1:15560",
                    "--backend=tcp://127.0.0.1:15561"]),
        # NotificationBus with its defaults: `nbus broker`, the clients `nbus bench peer-client`.
        "nbus": dict(
            server=[nbus, "broker", "--frontend", "tcp://127.0.0.1:15550", "--backend", "tcp://127.0.0.1:15551"],
            ready="broker: frontend", client=nbus_client_cmd),
        # The broker's floor: the same bus clients through a bare TCP relay that copies bytes from
        # the publisher's connection to the subscriber's (ZMTP end to end, no broker), so its CPU
        # is what moving the same frames through the kernel costs (not in the default --systems).
        "relay": dict(
            server=[f"{clients}/tcprelay", "--frontend=tcp://127.0.0.1:15570", "--backend=tcp://127.0.0.1:15571"],
            ready="relay: frontend",
            client=[x.replace(":15550", ":15570").replace(":15551", ":15571") for x in nbus_client_cmd]),
    }


# ---- processes ---------------------------------------------------------------------------------

class Child:
    """A client process reaped by os.wait4 in a thread: its own CPU time and peak RSS (rusage),
    not its children's, and a wait bounded in time (killed by its PID past the bound)."""

    def __init__(self, cmd, out_path):
        self.cmd = cmd
        with open(out_path, "w") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        self.status = None
        self.rusage = None
        self.killed = False
        self.exited = threading.Event()
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self):
        _, status, rusage = os.wait4(self.pid, 0)
        self.status, self.rusage = status, rusage
        self.proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen never waits on it again
        self.exited.set()

    def wait(self, seconds):
        """True if it exited within `seconds`; otherwise it is killed (SIGKILL, by PID)."""
        if self.exited.wait(seconds):
            return True
        self.killed = True
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.exited.wait(10)
        return False

    def exit_code(self):
        return self.proc.returncode

    def cpu_s(self):
        return round(self.rusage.ru_utime + self.rusage.ru_stime, 4) if self.rusage else None


class Server:
    """A server whose output is read in a thread: ready when its ready line appears, the output
    kept in a log file (read to the end, so a chatty server never blocks on a full pipe)."""

    def __init__(self, spec, log_path, timeout=30):
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(spec["server"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.ready = threading.Event()
        self.marker = spec["ready"]
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server not ready within {timeout} s: {' '.join(spec['server'])} (see {log_path})")

    def _read(self):
        for line in iter(self.proc.stdout.readline, b""):
            self.log.write(line.decode(errors="replace"))
            self.log.flush()
            if self.marker.encode() in line:
                self.ready.set()

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # by PID only
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class ReadyFile:
    """Waits for a file to be created in a directory: inotify (IN_CREATE, IN_MOVED_TO, IN_CLOSE_WRITE)
    wakes the wait when it appears; the exit of the process that should create it ends the wait too."""

    IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x8, 0x80, 0x100

    def __init__(self, path):
        self.path = path
        self.fd = -1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
            if fd >= 0 and libc.inotify_add_watch(fd, os.path.dirname(path).encode(),
                                                  self.IN_CREATE | self.IN_MOVED_TO | self.IN_CLOSE_WRITE) >= 0:
                self.fd = fd
            elif fd >= 0:
                os.close(fd)
        except (OSError, AttributeError):
            self.fd = -1

    def wait(self, child, timeout=60):
        deadline = time.monotonic() + timeout
        try:
            while not os.path.exists(self.path):
                if child.exited.is_set():
                    raise RuntimeError(f"{child.cmd[0]} exited before it was ready (code {child.exit_code()})")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{child.cmd[0]} not ready within {timeout} s")
                # Woken by the file's creation; without inotify, by a short poll. The 0.1 s bound
                # only lets the loop notice a client that died.
                if self.fd >= 0:
                    if select.select([self.fd], [], [], min(left, 0.1))[0]:
                        try:
                            os.read(self.fd, 65536)
                        except BlockingIOError:
                            pass
                else:
                    child.exited.wait(min(left, 0.005))
        finally:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1


# ---- /proc -------------------------------------------------------------------------------------

def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def server_cpu_s(pid):
    """A server's CPU time so far, seconds: the sum of its threads' run time in schedstat (ns, where
    /proc/PID/stat counts 10 ms ticks, too coarse for a short test), else the ticks. Servers keep
    their threads for their life, so no thread's time is lost between two readings."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        return proc_cpu_s(pid)


def proc_minor_faults(pid):
    """A process's minor page faults so far, all its threads (each one a fresh page touched:
    a heap that grows, or gives pages back and takes them again, shows here)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except (OSError, ValueError, IndexError):
        return None


def proc_status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


class AnonPeak:
    """Each process's peak RssAnon (private memory: heap and queues, not the shared libraries
    that VmHWM also counts), sampled every 20 ms in a thread, in kB."""

    def __init__(self, pids):
        self.pids = pids
        self.peak = {k: 0 for k in pids}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            for key, pid in self.pids.items():
                try:
                    self.peak[key] = max(self.peak[key], proc_status_kb(pid, "RssAnon") or 0)
                except OSError:
                    pass  # exited: its peak is kept
            self.stop.wait(0.02)

    def done(self):
        self.stop.set()
        self.thread.join()
        return self.peak


def last_json(path):
    with open(path, errors="replace") as f:
        text = f.read()
    for line in reversed(text.splitlines()):
        if line.strip().startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    raise RuntimeError(f"no JSON result in {path}: {text[-600:]}")


# ---- tests -------------------------------------------------------------------------------------

def bound_seconds(n):
    """How long one publisher or subscriber may take: generous for a loaded machine (10,000
    notifications a second would be far below every system here), never unbounded."""
    return 120 + n / 10_000


def pubsub(spec, server, base, test, n, sub_subject, pub_subjects, end_subject, subs=1):
    """One publisher, `subs` subscribers of `sub_subject`. With several (fan-out), "sub" is their
    sum: received and CPU added up (CPU per delivered copy), the rate the median subscriber's,
    peak RssAnon the largest; each subscriber's own result is kept in "subs"."""
    rec = dict(test=test, n=n, loadavg_before=loadavg())
    server_cpu0 = server_cpu_s(server.pid)
    server_faults0 = proc_minor_faults(server.pid)
    children = []
    for k in range(subs):
        tag = "sub" if subs == 1 else f"sub{k}"
        ready = f"{base}.{tag}.ready" if subs > 1 else base + ".ready"
        if os.path.exists(ready):
            os.unlink(ready)
        waiter = ReadyFile(ready)
        child = Child(spec["client"] + ["--mode=sub", f"--subject={sub_subject}", f"--ready={ready}"], f"{base}.{tag}.out")
        children.append((tag, child))
        try:
            waiter.wait(child)
        except RuntimeError as error:
            for _, c in children:
                c.wait(0)
            rec["error"] = str(error)
            return rec
    pub = Child(spec["client"] + ["--mode=pub", f"--n={n}", "--size=256", f"--subject={pub_subjects}",
                                  f"--end-subject={end_subject}"], base + ".pub.out")
    pids = dict(pub=pub.pid, server=server.pid)
    pids.update({tag: c.pid for tag, c in children})
    anon = AnonPeak(pids)
    bound = bound_seconds(n)
    pub_ok = pub.wait(bound)
    subs_ok = [c.wait(bound if pub_ok else 0) for _, c in children]
    peaks = anon.done()
    if subs > 1:
        peaks["sub"] = max(peaks[tag] for tag, _ in children)
    rec["anon_peak_kb"] = peaks
    rec["server_cpu_s"] = round(server_cpu_s(server.pid) - server_cpu0, 5)
    faults = proc_minor_faults(server.pid)
    if faults is not None and server_faults0 is not None:
        rec["server_minor_faults"] = faults - server_faults0
    rec["pub_cpu_s"] = pub.cpu_s()
    sub_cpus = [c.cpu_s() for _, c in children]
    rec["sub_cpu_s"] = None if any(v is None for v in sub_cpus) else round(sum(sub_cpus), 5)
    problems = []
    for role, child, ok in [("pub", pub, pub_ok)] + [(tag, c, ok) for (tag, c), ok in zip(children, subs_ok)]:
        if not ok:
            problems.append(f"{role} killed after {bound:.0f} s")
        elif child.exit_code() != 0:
            problems.append(f"{role} exited {child.exit_code()}")
        try:
            rec[role] = last_json(f"{base}.{role}.out")
        except RuntimeError as error:
            problems.append(str(error))
    if subs > 1 and not problems:
        each = [rec.pop(tag) for tag, _ in children]
        rates = sorted(r["rate"] for r in each)
        rec["subs"] = each
        rec["sub"] = dict(rate=rates[len(rates) // 2], slowest_rate=rates[0], received=sum(r["received"] for r in each),
                          end_marker=all(r.get("end_marker") for r in each), subscribers=subs)
    if problems:
        rec["error"] = "; ".join(problems)
    return rec


def latency(spec, base, n):
    ready = base + ".ready"
    if os.path.exists(ready):
        os.unlink(ready)
    rec = dict(test="latency", n=n, loadavg_before=loadavg())
    waiter = ReadyFile(ready)
    pong = Child(spec["client"] + ["--mode=pong", f"--ready={ready}"], base + ".pong.out")
    try:
        waiter.wait(pong)
    except RuntimeError as error:
        pong.wait(0)
        rec["error"] = str(error)
        return rec
    ping = Child(spec["client"] + ["--mode=ping", f"--n={n}", "--warmup=1000", "--size=16",
                                   f"--dump={base}.rtt_ns.txt"], base + ".ping.out")
    bound = 60 + n / 1_000  # 1 ms a round trip would be ten times the slowest system here
    ping_ok = ping.wait(bound)
    pong.wait(15)  # it ends on the ping's Q; killed past 15 s
    if not ping_ok:
        rec["error"] = f"ping killed after {bound:.0f} s"
    elif ping.exit_code() != 0:
        rec["error"] = f"ping exited {ping.exit_code()}: " + open(base + ".ping.out", errors="replace").read()[-600:]
    else:
        rec["ping"] = last_json(base + ".ping.out")
    return rec


# ---- the run -----------------------------------------------------------------------------------

def command_version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        return None


def git(*args):
    try:
        out = subprocess.run(["git", "-C", HERE] + list(args), capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def describe(a, specs, systems):
    commit = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    versions = {}
    if "nats" in systems:
        versions["nats-server"] = (command_version(["nats-server", "--version"]) or "").split(":")[-1].strip() or None
    if "redis" in systems:
        line = command_version(["redis-server", "--version"]) or ""
        versions["redis-server"] = next((w[2:] for w in line.split() if w.startswith("v=")), line or None)
    if "zmqraw" in systems or "nbus" in systems:
        versions["libzmq"] = command_version(["pkg-config", "--modversion", "libzmq"])
    if "nbus" in systems and not a.nbus_client:
        versions["nbus"] = command_version([a.nbus, "--version"])
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
    except OSError:
        pass
    return dict(
        meta=True, label=a.label, date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        commit=(commit + ("+changes" if dirty else "")) if commit else None, runs=a.runs, n=a.n, lat_n=a.lat_n,
        systems=systems, tests=a.tests.split(","), cores=os.cpu_count(), cpu=model, kernel=platform.release(),
        loadavg=loadavg(), versions=versions, command=" ".join(shlex.quote(x) for x in sys.argv))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nbus", default=".build/release/nbus", help="the nbus binary (a release build)")
    ap.add_argument("--nbus-client", default=None, help="another command for the nbus client (the same flags)")
    ap.add_argument("--clients", default=".build/peers/bin", help="where build.sh put natsbench, redisbench, zmqraw")
    ap.add_argument("--work", default=".build/peers", help="results/ and logs/ go here")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--systems", default=",".join(s for s in SYSTEMS if s != "relay"),
                    help="a comma list of " + ",".join(SYSTEMS) + " (relay: the bare TCP relay, the broker's floor)")
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("--n", type=int, default=1_000_000, help="notifications per throughput and filtered test (a quarter of it per fan-out subscriber)")
    ap.add_argument("--lat-n", type=int, default=20_000, help="measured round trips per latency test")
    ap.add_argument("--label", default=None, help="names the result files (default: the date and time)")
    a = ap.parse_args()
    systems = [s for s in a.systems.split(",") if s]
    unknown = [s for s in systems if s not in SYSTEMS] + [t for t in a.tests.split(",") if t not in TESTS]
    if unknown or a.runs < 1 or a.n < 10 or a.lat_n < 1:
        ap.error(f"unknown systems or tests {unknown}; --runs >= 1, --n >= 10, --lat-n >= 1")
    a.label = a.label or datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    specs = system_specs(os.path.abspath(a.clients), a.nbus, a.nbus_client)
    for name in systems:
        for program in (specs[name]["server"][0], specs[name]["client"][0]):
            if not (os.path.isfile(program) or any(os.path.isfile(os.path.join(d, program))
                                                   for d in os.environ.get("PATH", "").split(os.pathsep))):
                ap.error(f"{name}: {program} not found (make bench-peers installs and builds everything)")
    runs_dir, logs_dir = f"{a.work}/results/runs", f"{a.work}/logs"
    os.makedirs(runs_dir, exist_ok=True)
    os.makedirs(logs_dir, exist_ok=True)
    raw_path = f"{a.work}/results/{a.label}.jsonl"
    failures = 0
    with open(raw_path, "w") as out:
        out.write(json.dumps(describe(a, specs, systems)) + "\n")
        for r in range(1, a.runs + 1):
            shift = (r - 1) % len(systems)
            for name in systems[shift:] + systems[:shift]:
                spec, tag = specs[name], f"{a.label}.{name}.r{r}"
                base = f"{runs_dir}/{tag}"
                recs = []
                # A fresh server for each test: what one test leaves in the server's memory (its
                # allocator rarely gives it back) is not counted in the next test's peak.
                for test in [t for t in TESTS if t in a.tests.split(",")]:
                    # The relay joins one publisher's connection to one subscriber's: the round
                    # trip's two clients each publish and subscribe, so it has no latency test.
                    # (Nor a fan-out: it joins one publisher to one subscriber.)
                    if name == "relay" and test in ("latency", "fanout"):
                        continue
                    try:
                        server = Server(spec, f"{logs_dir}/{tag}.{test}.server.log")
                    except RuntimeError as error:
                        recs.append(dict(test=test, error=str(error)))
                        continue
                    try:
                        if test == "throughput":
                            recs.append(pubsub(spec, server, base + ".throughput", "throughput", a.n,
                                               "bench.a", "bench.a", "bench.a"))
                        elif test == "fanout":
                            recs.append(pubsub(spec, server, base + ".fanout", "fanout", a.n // 4,
                                               "bench.a", "bench.a", "bench.a", subs=4))
                        elif test == "filtered":
                            names = ",".join(f"bench.{i}" for i in range(10))
                            recs.append(pubsub(spec, server, base + ".filtered", "filtered", a.n,
                                               "bench.3", names, "bench.3"))
                        else:
                            recs.append(latency(spec, base + ".latency", a.lat_n))
                    finally:
                        server.stop()
                for rec in recs:
                    rec.update(system=name, run=r)
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    brief = dict(system=name, test=rec["test"], run=r)
                    if "error" in rec:
                        failures += 1
                        brief["error"] = rec["error"]
                    elif rec["test"] == "latency":
                        brief.update(p50_us=rec["ping"]["p50_us"], p99_us=rec["ping"]["p99_us"])
                    else:
                        brief.update(sub_rate=round(rec["sub"]["rate"]), received=rec["sub"]["received"],
                                     end=rec["sub"]["end_marker"])
                    print(json.dumps(brief), flush=True)
    sys.path.insert(0, HERE)
    import report
    md_path, html_path = report.write(raw_path)
    print(f"raw: {raw_path}\ntables: {md_path}\nreport: {html_path}")
    with open(md_path) as f:
        print(f.read())
    if failures:
        print(f"{failures} test(s) failed: see the NOTE lines above and {logs_dir}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
