#!/usr/bin/env python3
"""Soak: a broker, 3 publishers and 3 subscribers (real `nbus` processes) for a bounded time.

One subscriber is made slow on purpose: it is stopped (SIGSTOP) for STALL seconds every
STALL_EVERY seconds, long enough for what can queue for it to fill (the broker's high-water mark,
SOAK_BROKER_HWM, and the socket buffers: a stopped process's own libzmq thread is stopped too, so
its receive queue does not fill), so it loses notifications while the others keep up. The stalls end well before the run does, so it catches up and acknowledges the
publishers' end of stream.

Then it checks, per subscriber, the accounting identity (delivered + lost upstream == what its
publishers posted, delivered in order, the gaps' ranges and the delivered sequences partitioning
1...posted per publisher; the stalled one must have lost some) and that the RSS and the open file
descriptors of every process stayed flat (sampled from /proc/PID/status and /proc/PID/fd): the
publishers and the broker drop for the stalled subscriber instead of holding what it cannot take.
What the other two lost is reported, not judged: they keep up only while they get the CPU, and on
a shared machine they may not (the 1-minute load average is sampled and reported alongside); that
a subscriber that keeps up loses nothing is pinned by SlowSubscriberTests, deterministically.

Flat, after a warm-up (the first WARMUP_FRACTION of the run, at least 10 s, and at least until
10 s after the first stall ended, since draining a full queue is part of warming up): the samples
left are cut in thirds; RSS passes when the last third's maximum is at most the maximum before it
(after the warm-up) plus max(RSS_SLACK_MB, RSS_SLACK_FRACTION of it), i.e. no new peak at the end:
a leak keeps setting new peaks, while bounded queues that fill once (a stall, a burst of load) make
one step and stay there. The fd count passes when it never changes.

Every child is killed on every exit path: a finally block, SIGINT/SIGTERM handlers, and
PR_SET_PDEATHSIG (so even a SIGKILLed soak takes its children with it). Python 3 standard library
only. Exit status 0 when every check passes, 1 when one fails, 2 on a setup error.

Environment: SOAK_SECONDS (600), SOAK_RATE per publisher per second (200), SOAK_SIZE payload
bytes (100), SOAK_SAMPLE_SECONDS (5), SOAK_STALL_SECONDS (30, at most a sixth of the run; 0: no
stalls), SOAK_STALL_EVERY (60), NBUS (path to the nbus binary; or --nbus), SOAK_JSON (write the
samples and results there), SOAK_BROKER_HWM (the broker's --hwm, 1000).
"""

import argparse
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

WARMUP_FRACTION = 0.1
WARMUP_MIN_SECONDS = 10.0
RSS_SLACK_MB = 2.0
RSS_SLACK_FRACTION = 0.05
STOP_TIMEOUT_SECONDS = 60

PUBLISHERS = [("p1", "soak.p1"), ("p2", "soak.p2"), ("p3", "soak.p3")]
# Subscriber -> its patterns and the publishers whose names those match.
SUBSCRIBERS = [
    ("all", ["soak.>"], ["p1", "p2", "p3"]),
    ("p1+p2", ["soak.p1", "soak.p2"], ["p1", "p2"]),
    ("stalled", ["soak.*"], ["p1", "p2", "p3"]),
]
STALLED = "stalled"
FIRST_STALL_AT = 10.0


def stall_schedule(seconds, stall, every):
    """[(start, end)] offsets of the stalls: from FIRST_STALL_AT, each ending before the last
    max(15 s, a fifth) of the run."""
    if stall <= 0:
        return []
    latest_end = seconds - max(15.0, 0.2 * seconds)
    stalls = []
    start = FIRST_STALL_AT
    while start + stall <= latest_end:
        stalls.append((start, start + stall))
        start += max(every, 2 * stall)
    return stalls


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the soak process dies, however it dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Child:
    """One nbus process; stderr collected whole, stdout handed line by line to `on_line`."""

    def __init__(self, label, nbus, arguments, on_line=None):
        self.label = label
        self.arguments = arguments
        self.process = subprocess.Popen(
            [nbus] + arguments,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=die_with_parent,
        )
        self.stdout_lines = []  # kept only when there is no on_line
        self.stderr = []
        self.first_line = threading.Event()
        self.on_line = on_line
        self.readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    @property
    def pid(self):
        return self.process.pid

    def _read_stdout(self):
        for raw in self.process.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if self.on_line is not None:
                self.on_line(line)
            else:
                self.stdout_lines.append(line)
            self.first_line.set()
        self.first_line.set()

    def _read_stderr(self):
        for raw in self.process.stderr:
            self.stderr.append(raw.decode("utf-8", "replace"))

    def stderr_text(self):
        return "".join(self.stderr)

    def stop(self, timeout=STOP_TIMEOUT_SECONDS):
        """SIGTERM, then wait (bounded) for the exit and for both pipes to end; returns the status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            status = self.process.wait()
            self.stderr.append("\n[soak: did not exit within %d s of SIGTERM; killed]\n" % timeout)
        for reader in self.readers:
            reader.join(timeout=10)
        return status

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class StreamChecker:
    """What one subscriber printed (`--format json`), tracked per publisher id without keeping lines."""

    def __init__(self):
        self.lock = threading.Lock()
        self.streams = {}  # (publisherID, name) -> {"last": int, "delivered": int, "lost": int, "covered": list}
        self.problems = []
        self.unparsable = 0

    def on_line(self, line):
        try:
            event = json.loads(line)
        except ValueError:
            with self.lock:
                self.unparsable += 1
            return
        with self.lock:
            if "gap" in event:
                key = (event.get("publisherID"), event.get("name"))
                stream = self.streams.setdefault(key, {"last": 0, "delivered": 0, "lost": 0})
                first, last, count = event.get("firstSequence"), event.get("lastSequence"), event.get("count")
                if event["gap"] != "lostUpstream":
                    self.problems.append("unexpected gap cause: %s" % line)
                elif first != stream["last"] + 1 or last - first + 1 != count:
                    self.problems.append("gap does not continue the stream at %d: %s" % (stream["last"], line))
                stream["lost"] += count or 0
                stream["last"] = max(stream["last"], last or 0)
                return
            key = (event.get("publisherID"), event.get("name"))
            stream = self.streams.setdefault(key, {"last": 0, "delivered": 0, "lost": 0})
            sequence = event.get("sequence")
            if sequence != stream["last"] + 1:
                self.problems.append(
                    "%s/%s: sequence %s after %d with no gap between" % (key[0], key[1], sequence, stream["last"]))
            stream["last"] = max(stream["last"], sequence or 0)
            stream["delivered"] += 1


def read_sample(pid):
    """(RSS in kB, open fds) of a live process, or None."""
    try:
        with open("/proc/%d/status" % pid) as status:
            rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
        fds = len(os.listdir("/proc/%d/fd" % pid))
        return rss, fds
    except (OSError, StopIteration, ValueError):
        return None


def load_average():
    """The 1-minute load average, or -1."""
    try:
        with open("/proc/loadavg") as loadavg:
            return float(loadavg.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0


def flatness(samples, start_time, warmup_seconds):
    """Checks one process's samples [(t, rss_kb, fds)]; returns (ok, description)."""
    steady = [s for s in samples if s[0] - start_time >= warmup_seconds]
    if len(steady) < 3:
        return False, "only %d samples after the warm-up" % len(steady)
    third = len(steady) // 3
    first, before_last, last = steady[:third], steady[:-third], steady[-third:]
    first_max = max(s[1] for s in first)
    before_max = max(s[1] for s in before_last)
    last_max = max(s[1] for s in last)
    slack = max(RSS_SLACK_MB * 1024, RSS_SLACK_FRACTION * before_max)
    fd_counts = sorted(set(s[2] for s in steady))
    rss_ok = last_max <= before_max + slack
    fds_ok = len(fd_counts) == 1
    description = "RSS max: first third %.1f, before the last third %.1f, last third %.1f MB (slack %.1f)%s; fds %s%s" % (
        first_max / 1024, before_max / 1024, last_max / 1024, slack / 1024, "" if rss_ok else " NOT FLAT",
        fd_counts[0] if fds_ok else fd_counts, "" if fds_ok else " NOT FLAT")
    return rss_ok and fds_ok, description


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nbus", default=os.environ.get("NBUS", ".build/debug/nbus"))
    arguments = parser.parse_args()
    seconds = float(os.environ.get("SOAK_SECONDS", "600"))
    rate = float(os.environ.get("SOAK_RATE", "200"))
    size = int(os.environ.get("SOAK_SIZE", "100"))
    sample_every = float(os.environ.get("SOAK_SAMPLE_SECONDS", "5"))
    report_path = os.environ.get("SOAK_JSON")
    broker_hwm = int(os.environ.get("SOAK_BROKER_HWM", "1000"))
    stall = min(float(os.environ.get("SOAK_STALL_SECONDS", "30")), seconds / 6)
    stalls = stall_schedule(seconds, stall, float(os.environ.get("SOAK_STALL_EVERY", "60")))
    if not os.access(arguments.nbus, os.X_OK):
        print("soak: %s is not an executable (build it: swift build --product nbus)" % arguments.nbus, file=sys.stderr)
        return 2
    warmup = max(WARMUP_MIN_SECONDS, WARMUP_FRACTION * seconds, stalls[0][1] + 10 if stalls else 0)

    children = []
    folder = tempfile.mkdtemp(prefix="nbus-soak-")

    def on_signal(number, _frame):
        raise KeyboardInterrupt("signal %d" % number)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        frontend, backend = "ipc://%s/f.sock" % folder, "ipc://%s/b.sock" % folder
        broker = Child("broker", arguments.nbus, ["broker", "--frontend", frontend, "--backend", backend, "--hwm", str(broker_hwm)])
        children.append(broker)
        if not broker.first_line.wait(30) or not any("broker: frontend" in l for l in broker.stdout_lines):
            print("soak: the broker did not start:\n" + broker.stderr_text(), file=sys.stderr)
            return 2

        checkers = {}
        subscribers = []
        for label, patterns, _ in SUBSCRIBERS:
            checker = StreamChecker()
            checkers[label] = checker
            child = Child("subscriber " + label, arguments.nbus,
                          ["subscribe"] + patterns + ["--connect", backend, "--format", "json"], checker.on_line)
            children.append(child)
            subscribers.append(child)
        publishers = []
        for label, name in PUBLISHERS:
            wanted = sum(1 for _, _, sources in SUBSCRIBERS if label in sources)
            child = Child("publisher " + label, arguments.nbus,
                          ["publish", name, "%s-{n}" % label, "--count", "1000000000", "--rate", str(rate),
                           "--size", str(size), "--connect", frontend, "--subscribers", str(wanted),
                           "--timeout", "60", "--close-timeout", "30"])
            children.append(child)
            publishers.append(child)

        # Every subscriber has printed a line: everything is up and flowing.
        for child in subscribers:
            if not child.first_line.wait(90):
                print("soak: %s printed nothing within 90 s:\n%s" % (child.label, child.stderr_text()), file=sys.stderr)
                return 2
        print("soak: %d processes up; running %.0f s (rate %g/s per publisher, %d B, sample every %g s, warm-up %.0f s, "
              "subscriber '%s' stopped %d time(s) for %.0f s)"
              % (len(children), seconds, rate, size, sample_every, warmup, STALLED, len(stalls), stall), flush=True)

        stalled = subscribers[[label for label, _, _ in SUBSCRIBERS].index(STALLED)]
        start = time.monotonic()
        samples = {child.label: [] for child in children}
        loads = []
        next_progress = start + 60
        next_sample = start
        transitions = sorted([(begin, signal.SIGSTOP) for begin, _ in stalls] + [(end, signal.SIGCONT) for _, end in stalls])
        while True:
            now = time.monotonic()
            while transitions and transitions[0][0] <= now - start:
                _, number = transitions.pop(0)
                stalled.process.send_signal(number)
            if now < next_sample:
                time.sleep(max(0.0, min(next_sample, start + (transitions[0][0] if transitions else seconds)) - now))
                continue
            next_sample += sample_every
            loads.append(load_average())
            for child in children:
                sample = read_sample(child.pid) if child.process.poll() is None else None
                if sample is None:
                    print("soak: %s exited early (status %s):\n%s"
                          % (child.label, child.process.poll(), child.stderr_text()), file=sys.stderr)
                    return 1
                samples[child.label].append((now, sample[0], sample[1]))
            if now >= next_progress:
                print("soak: %.0f s, load %.1f, RSS MB %s" % (now - start, loads[-1], ", ".join(
                    "%s %.1f" % (c.label, samples[c.label][-1][1] / 1024) for c in children)), flush=True)
                next_progress += 60
            if now - start >= seconds:
                break
            next_sample = min(next_sample, start + seconds)
        stalled.process.send_signal(signal.SIGCONT)

        # Stop in order: publishers (their end of stream reaches the subscribers), then the
        # subscribers (they print what they had), then the broker.
        results = {"publishers": {}, "subscribers": {}, "processes": {}}
        failures = []
        posted = {}
        for (label, _), child in zip(PUBLISHERS, publishers):
            status = child.stop()
            text = child.stderr_text()
            match = re.search(r"posted (\d+), sent (\d+), unsent (\d+)", text)
            if status != 0 or not match or match.group(3) != "0" or match.group(1) != match.group(2):
                failures.append("%s: exit %s, summary %r" % (child.label, status, text.strip()[-300:]))
            posted[label] = int(match.group(1)) if match else 0
            results["publishers"][label] = {"exit": status, "posted": posted[label]}
        for (label, _, sources), child in zip(SUBSCRIBERS, subscribers):
            status = child.stop()
            text = child.stderr_text()
            # With --format json the summary is the last stderr line, one JSON object.
            match = None
            for line in reversed(text.splitlines()):
                if line.startswith('{"summary":"subscribe"'):
                    match = json.loads(line)
                    break
            received = match["printed"] if match else -1
            lost = match["lostUpstream"] if match else -1
            expected = sum(posted[source] for source in sources)
            checker = checkers[label]
            entry = {"exit": status, "expected": expected, "received": received, "lostUpstream": lost,
                     "problems": checker.problems[:10], "unparsable": checker.unparsable}
            results["subscribers"][label] = entry
            if status != 0 or not match:
                failures.append("%s: exit %s, summary %r" % (child.label, status, text.strip()[-300:]))
            if received + lost != expected:
                failures.append("%s: received %d + lost %d != posted %d" % (child.label, received, lost, expected))
            if label == STALLED and stalls and lost <= 0:
                failures.append("%s: lost nothing; the stalls did not overflow its queues" % child.label)

            if checker.problems or checker.unparsable:
                failures.append("%s: %d stream problem(s) %s, %d unparsable line(s)"
                                % (child.label, len(checker.problems), checker.problems[:3], checker.unparsable))
            # Per publisher: the printed stream accounts for every sequence it posted.
            by_name = {name: source for source, name in PUBLISHERS}
            seen = {}
            for (publisher_id, name), stream in checker.streams.items():
                source = by_name.get(name)
                if source is None or source not in sources:
                    failures.append("%s: a stream it should not see: %s %s" % (child.label, publisher_id, name))
                    continue
                seen[source] = seen.get(source, 0) + 1
                if stream["delivered"] + stream["lost"] != posted[source] or stream["last"] != posted[source]:
                    failures.append("%s: %s delivered %d + lost %d, last %d; posted %d"
                                    % (child.label, name, stream["delivered"], stream["lost"], stream["last"],
                                       posted[source]))
            for source in sources:
                if seen.get(source) != 1:
                    failures.append("%s: %s came from %s publisher ids" % (child.label, source, seen.get(source, 0)))
        broker_status = broker.stop()
        # The counters are logged (stderr); stdout carries only the endpoints banner.
        if broker_status != 0 or "nbus broker: stopped:" not in broker.stderr_text():
            failures.append("broker: exit %s, %r" % (broker_status, broker.stderr_text()[-400:]))

        for child in children:
            ok, description = flatness(samples[child.label], start, warmup)
            results["processes"][child.label] = {
                "flat": ok, "summary": description,
                "samples": [(round(t - start, 1), rss, fds) for t, rss, fds in samples[child.label]]}
            if not ok:
                failures.append("%s: %s" % (child.label, description))

        print("\nsoak: %.0f s, %d samples per process, 1-minute load average %.1f to %.1f on %d CPUs"
              % (seconds, len(samples[broker.label]), min(loads), max(loads), os.cpu_count() or 0))
        for label, entry in results["publishers"].items():
            print("  publisher %-9s posted %d" % (label, entry["posted"]))
        for label, entry in results["subscribers"].items():
            print("  subscriber %-9s received %d + lost upstream %d = %d, posted %d%s" % (
                label, entry["received"], entry["lostUpstream"], entry["received"] + entry["lostUpstream"],
                entry["expected"], "" if entry["received"] + entry["lostUpstream"] == entry["expected"] else "  MISMATCH"))
        for label, entry in results["processes"].items():
            print("  %-20s %s" % (label, entry["summary"]))
        results["failures"] = failures
        results["seconds"] = seconds
        results["loadAverages"] = loads
        if report_path:
            with open(report_path, "w") as report:
                json.dump(results, report, indent=1)
        if failures:
            print("\nsoak: FAILED\n  " + "\n  ".join(failures), file=sys.stderr)
            return 1
        print("\nsoak: passed (accounting exact for every subscriber, the stalled one lost and counted it; "
              "RSS and fds flat for every process)")
        return 0
    except KeyboardInterrupt as interruption:
        print("soak: interrupted (%s); killing the children" % interruption, file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        for child in children:
            child.kill()
        for name in os.listdir(folder):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass
        try:
            os.rmdir(folder)
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main())
