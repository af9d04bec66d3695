"""The peers comparison (Benchmarks/peers, `make bench-peers`) works: its report from a recorded
run, its make target, its argument checks, and a small real run per system whose server and
client are at hand (skipped, with the reason, when one is not: `make bench-peers-clients` installs
and builds them). Every run is bounded in count (a few thousand notifications) and time."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(ROOT, "Benchmarks", "peers")
SAMPLE = os.path.join(PEERS, "testdata", "sample.jsonl")
sys.path.insert(0, PEERS)
import report  # noqa: E402

# Where the test builds the clients: inside .build (ignored by git), its Go cache kept between runs.
CLIENTS = os.path.join(ROOT, ".build", "peers-test", "bin")
SMOKE_N = 4000
SMOKE_LAT_N = 300


def read(path):
    with open(path) as f:
        return f.read()


def available(program):
    return shutil.which(program) is not None


class ReportTests(unittest.TestCase):
    """report.py on a recorded run of every system (testdata/sample.jsonl)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="peers-report-")
        self.raw = os.path.join(self.dir, "sample.jsonl")
        shutil.copy(SAMPLE, self.raw)
        self.md_path, self.html_path = report.write(self.raw)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_tables_have_every_system_and_test(self):
        md = read(self.md_path)
        for heading in ("## 1 publisher -> 1 subscriber", "## filtered", "## round trip"):
            self.assertIn(heading, md)
        rows = [line for line in md.splitlines() if line.startswith("| ")]
        for system in ("nbus", "nats", "redis", "zmqraw"):
            self.assertEqual(sum(1 for r in rows if r.startswith(f"| {system} |")), 3, system)
        self.assertIn("- nbus against nats:", md)
        self.assertNotIn("NOTE", md)

    def test_figures_are_the_records(self):
        meta, recs = report.load(self.raw)
        s = report.Summary(meta, recs)
        rec = next(r for r in recs if r["system"] == "nats" and r["test"] == "throughput")
        self.assertEqual(s.rate("nats", "throughput"), rec["sub"]["rate"])
        pub, server, sub = s.cost("nats", "throughput")
        self.assertAlmostEqual(pub, 1e6 * rec["pub_cpu_s"] / rec["sub"]["received"])
        self.assertAlmostEqual(server, 1e6 * rec["server_cpu_s"] / rec["sub"]["received"])
        self.assertAlmostEqual(sub, 1e6 * rec["sub_cpu_s"] / rec["sub"]["received"])
        self.assertAlmostEqual(s.anon_mb("nats", "throughput", "sub"), rec["anon_peak_kb"]["sub"] / 1024)
        md = read(self.md_path)
        ratio = s.rate("nbus", "throughput") / s.rate("nats", "throughput")
        self.assertIn(f"1 -> 1 {ratio:.2f}x", md)

    def test_html_is_self_contained_with_charts(self):
        page = read(self.html_path)
        self.assertTrue(page.startswith("<!DOCTYPE html>"))
        self.assertNotIn("<script", page)
        self.assertNotIn("src=", page)
        svgs = [page[i:page.index("</svg>", i) + 6] for i in range(len(page)) if page.startswith("<svg", i)]
        self.assertEqual(len(svgs), 5)  # rate, CPU, memory, round trip p50 and p99
        for svg in svgs:
            root = ElementTree.fromstring(svg)  # well-formed
            self.assertGreater(len(root.findall(".//{http://www.w3.org/2000/svg}rect")), 4)
        self.assertEqual(page.count("<table"), 4)  # three of figures, one of the run

    def test_fanout_is_per_subscriber(self):
        # A recorded fan-out run (testdata/fanout.jsonl): four subscribers a system.
        raw = os.path.join(self.dir, "fanout.jsonl")
        shutil.copy(os.path.join(PEERS, "testdata", "fanout.jsonl"), raw)
        md_path, _ = report.write(raw)
        md = read(md_path)
        self.assertIn("## fan-out: 1 publisher -> 4 subscribers", md)
        meta, recs = report.load(raw)
        s = report.Summary(meta, recs)
        for rec in (r for r in recs if r["test"] == "fanout"):
            self.assertEqual(len(rec["subs"]), 4)
            self.assertEqual(rec["sub"]["received"], sum(x["received"] for x in rec["subs"]))
            self.assertEqual(s.lost(rec), 0)
            rates = sorted(x["rate"] for x in rec["subs"])
            self.assertEqual(rec["sub"]["rate"], rates[2])
            self.assertEqual(rec["anon_peak_kb"]["sub"], max(rec["anon_peak_kb"][f"sub{k}"] for k in range(4)))
        ratio = s.rate("nbus", "fanout") / s.rate("nats", "fanout")
        self.assertIn(f"fan-out per subscriber {ratio:.2f}x", md)

    def test_failed_test_is_reported(self):
        with open(self.raw, "a") as f:
            f.write(json.dumps(dict(system="redis", run=2, test="throughput", n=10, error="sub exited 1")) + "\n")
        md_path, html_path = report.write(self.raw)
        self.assertIn("NOTE redis throughput run 2: sub exited 1", read(md_path))
        self.assertIn("verdict flagged", read(html_path))

    def test_command_line(self):
        out = subprocess.run([sys.executable, os.path.join(PEERS, "report.py"), self.raw],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), [self.md_path, self.html_path])


class DriverTests(unittest.TestCase):
    def test_make_target(self):
        if not available("make"):
            self.skipTest("make is not installed")
        out = subprocess.run(["make", "-n", "bench-peers", "PEERS_N=5000", "PEERS_RUNS=2"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        text = out.stdout
        for step in ("Benchmarks/peers/deps.sh", "Benchmarks/peers/build.sh", "--product nbus",
                     "Benchmarks/peers/run.py", "--n 5000", "--runs 2", "--systems nats,redis,zmqraw,nbus"):
            self.assertIn(step, text)

    def test_bad_arguments(self):
        for args in (["--systems", "nats,mqtt"], ["--tests", "soak"], ["--runs", "0"]):
            out = subprocess.run([sys.executable, os.path.join(PEERS, "run.py")] + args,
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 2, args)
            self.assertIn("error:", out.stderr)

    def test_missing_client_is_named(self):
        out = subprocess.run([sys.executable, os.path.join(PEERS, "run.py"), "--systems", "zmqraw",
                              "--clients", "/nonexistent"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 2)
        self.assertIn("/nonexistent/zmqraw not found", out.stderr)


def nbus_binary():
    for path in (os.environ.get("NBUS"), os.path.join(ROOT, ".build", "release", "nbus"),
                 os.path.join(ROOT, ".build", "debug", "nbus")):
        if path and os.access(path, os.X_OK):
            return path
    return None


class SmokeRunTests(unittest.TestCase):
    """run.py end to end, one system at a time, SMOKE_N notifications: every test ends with END,
    loses nothing, and the records hold the CPU and memory figures."""

    build_error = None

    @classmethod
    def setUpClass(cls):
        tools = ("go", "cc", "pkg-config")
        missing = [t for t in tools if not available(t)]
        headers = ("/usr/include/hiredis/hiredis.h", "/usr/include/zmq.h", "/usr/share/gocode/src/github.com/nats-io/nats.go")
        missing += [h for h in headers if not os.path.exists(h)]
        if missing:
            cls.build_error = "missing " + ", ".join(missing) + " (make bench-peers-clients installs them)"
            return
        out = subprocess.run(["sh", os.path.join(PEERS, "build.sh"), CLIENTS], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise AssertionError(f"build.sh failed: {out.stdout}{out.stderr}")

    def smoke(self, system, server, nbus="nbus"):
        if self.build_error:
            self.skipTest(self.build_error)
        if server and not available(server):
            self.skipTest(f"{server} is not installed (make bench-peers-clients installs it)")
        work = tempfile.mkdtemp(prefix="peers-smoke-")
        self.addCleanup(shutil.rmtree, work)
        out = subprocess.run([sys.executable, os.path.join(PEERS, "run.py"), "--systems", system, "--runs", "1",
                              "--n", str(SMOKE_N), "--lat-n", str(SMOKE_LAT_N), "--clients", CLIENTS,
                              "--nbus", nbus, "--work", work, "--label", "smoke"],
                             cwd=ROOT, capture_output=True, text=True, timeout=150)
        self.assertEqual(out.returncode, 0, out.stdout[-3000:] + out.stderr[-3000:])
        meta, recs = report.load(os.path.join(work, "results", "smoke.jsonl"))
        self.assertEqual(meta["n"], SMOKE_N)
        self.assertEqual(sorted(r["test"] for r in recs), ["fanout", "filtered", "latency", "throughput"])
        for rec in recs:
            self.assertNotIn("error", rec)
            if rec["test"] == "latency":
                self.assertEqual(rec["ping"]["n"], SMOKE_LAT_N)
                self.assertGreater(rec["ping"]["p50_us"], 0)
                continue
            # Fan-out: SMOKE_N / 4 to each of four subscribers.
            expected = SMOKE_N // 10 if rec["test"] == "filtered" else SMOKE_N
            self.assertEqual(rec["sub"]["received"], expected, rec)
            self.assertTrue(rec["sub"]["end_marker"], rec)
            self.assertGreater(rec["sub_cpu_s"], 0)
            self.assertGreater(rec["anon_peak_kb"]["server"], 0)
        for suffix in (".md", ".html"):
            self.assertTrue(os.path.getsize(os.path.join(work, "results", "smoke" + suffix)) > 0)

    def test_nats(self):
        self.smoke("nats", "nats-server")

    def test_redis(self):
        self.smoke("redis", "redis-server")

    def test_zmqraw(self):
        self.smoke("zmqraw", None)

    def test_nbus(self):
        nbus = nbus_binary()
        if nbus is None:
            self.skipTest("no nbus built (NBUS=path, or swift build --product nbus)")
        self.smoke("nbus", None, nbus=nbus)


if __name__ == "__main__":
    unittest.main()
