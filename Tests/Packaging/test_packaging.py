"""What `make install` and `make deb` ship, tested (`make test-packaging`, which sets the paths):

- the installed nbus (static Swift runtime) runs with the toolchain hidden by a mount namespace;
- both systemd units pass `systemd-analyze verify`, and their command lines, expanded as systemd
  expands them, start brokers: the plain one on loopback only, the CURVE one from a credentials
  folder, as a two-broker pair that deployment.md's snippets use as written;
- the .deb holds what it should, is lintian clean, and installs, verifies and purges cleanly.

Environment: NBUS_STAGE (a DESTDIR that `make install-files` filled) and NBUS_STAGE_PREFIX (its
PREFIX), NBUS_DEB (the package). Tests that need what is not given, or root, skip saying why.
Every process is bounded in time and killed on every exit path."""

import glob
import os
import re
import select
import shlex
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")
STAGE = os.environ.get("NBUS_STAGE")
STAGE_PREFIX = os.environ.get("NBUS_STAGE_PREFIX", "/usr/local")
DEB = os.environ.get("NBUS_DEB")
IS_ROOT = os.geteuid() == 0
TIMEOUT = 60


def staged_nbus():
    return os.path.join(STAGE, STAGE_PREFIX.lstrip("/"), "bin", "nbus") if STAGE else None


def any_nbus():
    """The staged nbus, else NBUS, else a build of this tree (for the units' command lines)."""
    for path in (staged_nbus(), os.environ.get("NBUS"), os.path.join(ROOT, ".build", "release", "nbus"),
                 os.path.join(ROOT, ".build", "debug", "nbus")):
        if path and os.access(path, os.X_OK):
            return os.path.abspath(path)
    return None


def run(args, **kwargs):
    kwargs.setdefault("timeout", TIMEOUT)
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


def read(path):
    with open(path) as f:
        return f.read()


def toolchain_root():
    """The folder the Swift toolchain lives in (/opt/swift for /opt/swift/usr/bin/swift)."""
    swift = shutil.which(os.environ.get("SWIFT", "swift"))
    if not swift:
        return None
    bin_dir = os.path.dirname(os.path.realpath(swift))
    usr = os.path.dirname(bin_dir)
    return os.path.dirname(usr) if os.path.basename(usr) == "usr" else usr


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unit_service(text):
    """(Environment= assignments, ExecStart= words) of a unit's [Service] section."""
    env, exec_start = {}, None
    for line in text.splitlines():
        if line.startswith("Environment="):
            for word in shlex.split(line[len("Environment="):]):
                key, _, value = word.partition("=")
                env[key] = value
        elif line.startswith("ExecStart="):
            exec_start = line[len("ExecStart="):]
    return env, exec_start


def expand_exec_start(exec_start, env, credentials):
    """ExecStart= as systemd expands it: `%d` the credentials folder, an unbraced `$VAR` word split
    into words (systemd.service, "Command lines")."""
    words = []
    for word in exec_start.replace("%d", credentials).split():
        if word.startswith("$") and not word.startswith("${"):
            words.extend(env.get(word[1:], "").split())
        else:
            words.append(word)
    return words


def doc_snippet(name):
    text = read(os.path.join(DOCS, "deployment.md"))
    match = re.search(r"<!-- test: %s -->\n```\w*\n(.*?)\n```" % re.escape(name), text, re.S)
    if not match:
        raise AssertionError("no snippet %s in docs/deployment.md" % name)
    return match.group(1)


class Process:
    """A started process whose stdout lines are awaited with a deadline; killed by stop()."""

    def __init__(self, args, **kwargs):
        self.args = args
        # stderr to a file: a pipe nobody reads could fill and stall the process.
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.stderr, **kwargs)
        self.stdout_lines = []
        self.pending = b""

    def wait_for_line(self, predicate, seconds=20):
        """The first new stdout line satisfying predicate, or None at EOF or the deadline."""
        deadline = time.monotonic() + seconds
        while True:
            while b"\n" in self.pending:
                raw, self.pending = self.pending.split(b"\n", 1)
                line = raw.decode("utf-8", "replace")
                self.stdout_lines.append(line)
                if predicate(line):
                    return line
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.pending += chunk

    def stop(self):
        """Stops the process (again: nothing); its stderr."""
        if self.stderr.closed:
            return ""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.stderr.seek(0)
        text = self.stderr.read().decode("utf-8", "replace")
        self.stderr.close()
        return text

    def describe(self):
        return "%s\nstdout: %s" % (" ".join(self.args), "\n".join(self.stdout_lines[-20:]))


class InstalledBinaryTests(unittest.TestCase):
    """`make install`'s nbus runs where no Swift toolchain is."""

    def setUp(self):
        if not STAGE:
            self.skipTest("NBUS_STAGE is not set (make test-packaging installs into a staging folder)")
        self.nbus = staged_nbus()
        self.assertTrue(os.access(self.nbus, os.X_OK), self.nbus)

    def test_no_swift_library_is_needed(self):
        deps = run(["ldd", self.nbus])
        self.assertEqual(deps.returncode, 0, deps.stdout)
        self.assertNotIn("libswift", deps.stdout)
        self.assertNotIn("libFoundation", deps.stdout)
        self.assertIn("libzmq", deps.stdout)
        dynamic = run(["readelf", "-d", self.nbus]) if shutil.which("readelf") else None
        if dynamic:
            toolchain = toolchain_root()
            self.assertFalse(toolchain and toolchain in dynamic.stdout, "RUNPATH into the toolchain:\n" + dynamic.stdout)

    def test_runs_with_the_toolchain_hidden(self):
        if not IS_ROOT:
            self.skipTest("a mount namespace needs root (unshare -m)")
        toolchain = toolchain_root()
        if not toolchain or not os.path.isdir(toolchain):
            self.skipTest("no Swift toolchain found to hide")
        if not shutil.which("unshare"):
            self.skipTest("unshare (util-linux) is missing")
        work = tempfile.mkdtemp(prefix="nbus-hidden-")
        self.addCleanup(shutil.rmtree, work)
        core = glob.glob(os.path.join(toolchain, "**", "libswiftCore.so"), recursive=True)
        # In a private mount namespace: an empty tmpfs over the toolchain, proof that it is gone,
        # then the installed nbus: its version, a command's help, and keygen (files, Foundation).
        script = "\n".join([
            "set -e",
            'mount -t tmpfs nbus-hidden "$1"',
            '[ -z "$(ls -A "$1")" ]',
            '! [ -e "$3" ]',
            '"$2" --version',
            '"$2" broker --help >/dev/null',
            '"$2" keygen --output "$4/k"',
            'test -s "$4/k.pub"',
            "echo toolchain-hidden-ok",
        ])
        result = run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", toolchain, self.nbus,
                      core[0] if core else "/nonexistent", work])
        if result.returncode != 0 and "unshare failed" in result.stdout:
            self.skipTest("unshare -m is not permitted here: " + result.stdout.strip())
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("toolchain-hidden-ok", result.stdout)
        # The check means something: a binary linked against the toolchain's runtime fails there.
        dynamic = os.path.join(ROOT, ".build", "debug", "nbus")
        if os.access(dynamic, os.X_OK) and "libswiftCore" in run(["ldd", dynamic]).stdout:
            hidden = run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                          'mount -t tmpfs nbus-hidden "$1" && exec "$2" --version', "sh", toolchain, dynamic])
            self.assertNotEqual(hidden.returncode, 0, hidden.stdout)
            self.assertRegex(hidden.stdout, r"libswift\w*\.so: cannot open shared object file", hidden.stdout)


class UnitTests(unittest.TestCase):
    """Both units: systemd-analyze verify, and their command lines started as systemd would."""

    UNITS = ("nbus-broker.service", "nbus-broker-curve.service")

    def unit_text(self, name):
        if STAGE:
            return read(os.path.join(STAGE, STAGE_PREFIX.lstrip("/"), "share", "nbus", name))
        return read(os.path.join(DOCS, name))

    def unit_binary(self):
        return (STAGE_PREFIX if STAGE else "/usr/local") + "/bin/nbus"

    def setUp(self):
        self.nbus = any_nbus()
        if not self.nbus:
            self.skipTest("no nbus built (make test-packaging, or NBUS=path)")
        self.work = tempfile.mkdtemp(prefix="nbus-units-")
        self.addCleanup(shutil.rmtree, self.work)
        self.processes = []
        self.addCleanup(self.stop_all)

    def stop_all(self):
        for process in self.processes:
            process.stop()

    def start(self, args, **kwargs):
        process = Process(args, **kwargs)
        self.processes.append(process)
        return process

    def test_units_pass_systemd_analyze_verify(self):
        analyze = shutil.which("systemd-analyze")
        if not analyze:
            self.skipTest("systemd-analyze is missing (make packaging-test-deps installs systemd as root)")
        paths = []
        for name in self.UNITS:
            text = self.unit_text(name)
            self.assertIn("ExecStart=%s broker" % self.unit_binary(), text)
            # verify checks that the binary exists: the one under test, nothing else changed.
            path = os.path.join(self.work, name)
            with open(path, "w") as f:
                f.write(text.replace(self.unit_binary(), os.path.abspath(self.nbus)))
            paths.append(path)
        result = run([analyze, "verify"] + paths)
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertNotIn(".service:", result.stdout, "warnings about a unit:\n" + result.stdout)

    def test_plain_unit_binds_loopback_only(self):
        env, exec_start = unit_service(self.unit_text("nbus-broker.service"))
        words = expand_exec_start(exec_start, env, "/nonexistent")
        endpoints = [w for w in words if "://" in w or re.match(r"^[\d.]+:\d+$", w)]
        self.assertEqual(len(endpoints), 3, words)
        for endpoint in endpoints:
            self.assertRegex(endpoint, r"^(tcp://)?127\.0\.0\.1:\d+$", "the plain unit must bind loopback: %s" % words)
        # Started as written, with ports of its own: it serves on loopback and answers /healthz.
        http = free_port()
        args = [self.nbus] + [w.replace(":5550", ":*").replace(":5551", ":*").replace(":9464", ":%d" % http)
                              for w in words[1:]]
        broker = self.start(args)
        banner = broker.wait_for_line(lambda line: line.startswith("broker: frontend"))
        self.assertIsNotNone(banner, broker.describe())
        self.assertRegex(banner, r"^broker: frontend tcp://127\.0\.0\.1:\d+ backend tcp://127\.0\.0\.1:\d+$")

    def test_curve_pair_from_the_unit_and_the_docs(self):
        env, exec_start = unit_service(self.unit_text("nbus-broker-curve.service"))
        self.assertIn("LoadCredential=broker.key:/etc/nbus/broker.key", self.unit_text("nbus-broker-curve.service"))
        self.assertIn("DynamicUser=yes", self.unit_text("nbus-broker-curve.service"))
        etc = os.path.join(self.work, "etc", "nbus")
        clients = os.path.join(self.work, "clients")
        os.makedirs(clients)
        bin_dir = os.path.join(self.work, "bin")
        os.makedirs(bin_dir)
        os.symlink(os.path.abspath(self.nbus), os.path.join(bin_dir, "nbus"))
        # deployment.md's key setup as written, /etc/nbus in a temporary folder; systemctl is what
        # this test does below.
        keys = "\n".join(line for line in doc_snippet("curve-keys").splitlines() if not line.startswith("systemctl "))
        result = run(["sh", "-ec", keys.replace("/etc/nbus", etc)], cwd=clients,
                     env=dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"]))
        self.assertEqual(result.returncode, 0, keys + "\n" + result.stdout)
        self.assertIn("systemctl enable --now nbus-broker-curve", doc_snippet("curve-keys"))
        # LoadCredential=: a private folder holding a copy readable by the service's user alone.
        credentials = os.path.join(self.work, "credentials")
        os.makedirs(credentials, mode=0o700)
        shutil.copy(os.path.join(etc, "broker.key"), os.path.join(credentials, "broker.key"))
        os.chmod(os.path.join(credentials, "broker.key"), 0o400)
        words = expand_exec_start(exec_start, env, credentials)
        self.assertIn("0.0.0.0:5550", " ".join(words))
        brokers = {}
        for name in ("broker-a", "broker-b"):
            http = free_port()
            args = [self.nbus] + [w.replace("/etc/nbus", etc).replace("0.0.0.0:5550", "127.0.0.1:*")
                                  .replace("0.0.0.0:5551", "127.0.0.1:*").replace(":9464", ":%d" % http)
                                  for w in words[1:]]
            broker = self.start(args)
            banner = broker.wait_for_line(lambda line: line.startswith("broker: frontend"))
            if banner is None:
                self.fail(broker.describe() + "\n" + broker.stop())
            frontend, backend = re.match(r"^broker: frontend (\S+) backend (\S+)$", banner).groups()
            brokers[name] = (frontend, backend)

        def localised(line):
            for name, (frontend, backend) in brokers.items():
                line = line.replace("tcp://%s:5550" % name, frontend).replace("tcp://%s:5551" % name, backend)
            return line

        subscribe_line, publish_line = doc_snippet("curve-clients").splitlines()
        subscribe = shlex.split(localised(subscribe_line))
        publish = shlex.split(localised(publish_line))
        self.assertEqual((subscribe[0], publish[0]), ("nbus", "nbus"))
        subscriber = self.start([self.nbus] + subscribe[1:], cwd=clients)
        publisher = run([self.nbus] + publish[1:], cwd=clients)
        if publisher.returncode != 0:
            self.fail("%s\n%s" % (publisher.stdout, "\n".join(p.describe() + "\n" + p.stop() for p in self.processes)))
        line = subscriber.wait_for_line(lambda text: "orders.created" in text)
        if line is None:
            self.fail(subscriber.describe() + "\n" + subscriber.stop())
        # Once, not once per broker: nothing else arrives before the subscriber is stopped.
        self.assertIsNone(subscriber.wait_for_line(lambda text: "orders.created" in text, seconds=1),
                          subscriber.describe())
        # With broker-a stopped (as `systemctl stop nbus-broker-curve` would), broker-b carries the
        # next one alone, as the docs say.
        self.processes[0].stop()
        again = run([self.nbus] + publish[1:], cwd=clients)
        if again.returncode != 0:
            self.fail("with broker-a stopped: %s\n%s" % (again.stdout, subscriber.describe()))
        if subscriber.wait_for_line(lambda text: "orders.created" in text) is None:
            self.fail("nothing through broker-b alone:\n" + subscriber.describe() + "\n" + subscriber.stop())


class HelpTests(unittest.TestCase):
    """A first-time user's --help: publish and subscribe say where they connect by default."""

    def test_default_endpoints(self):
        nbus = any_nbus()
        if not nbus:
            self.skipTest("no nbus built (make test-packaging, or NBUS=path)")
        for command in ("publish", "subscribe"):
            result = run([nbus, command, "--help"])
            self.assertEqual(result.returncode, 0, result.stdout)
            text = " ".join(result.stdout.split())
            self.assertIn("tcp://127.0.0.1:5550 for publish, tcp://127.0.0.1:5551 for subscribe", text, command)


class DebianPackageTests(unittest.TestCase):
    """`make deb`'s package: contents, lintian, and dpkg -i / verify / purge on this machine."""

    def setUp(self):
        if not DEB:
            self.skipTest("NBUS_DEB is not set (make test-packaging builds the package)")
        self.assertTrue(os.path.isfile(DEB), DEB)

    def test_name_and_contents(self):
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        self.assertRegex(os.path.basename(DEB), r"^nbus_\d+\.\d+\.\d+_%s\.deb$" % re.escape(arch))
        info = run(["dpkg-deb", "--field", DEB, "Package", "Version", "Depends"])
        self.assertEqual(info.returncode, 0, info.stdout)
        self.assertIn("libzmq5", info.stdout)
        self.assertNotIn("swift", info.stdout.lower())
        listing = run(["dpkg-deb", "--contents", DEB]).stdout
        for path in ("./usr/bin/nbus", "./usr/share/man/man1/nbus.1.gz", "./usr/share/man/man1/nbus-broker.1.gz",
                     "./usr/share/bash-completion/completions/nbus", "./usr/share/zsh/vendor-completions/_nbus",
                     "./usr/share/fish/vendor_completions.d/nbus.fish", "/system/nbus-broker.service",
                     "/system/nbus-broker-curve.service", "./usr/lib/sysusers.d/nbus.conf", "./etc/default/nbus-broker",
                     "./usr/share/doc/nbus/deployment.md", "./usr/share/doc/nbus/NBP-1.md",
                     "./usr/share/doc/nbus/copyright", "./usr/share/doc/nbus/changelog.gz"):
            self.assertIn(path, listing)
        conffiles = run(["dpkg-deb", "--info", DEB, "conffiles"]).stdout
        self.assertIn("/etc/default/nbus-broker", conffiles)

    def test_lintian_clean(self):
        lintian = shutil.which("lintian")
        if not lintian:
            self.skipTest("lintian is not installed (make packaging-test-deps installs it as root)")
        result = run([lintian, "--fail-on", "error,warning", DEB], timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertFalse(re.search(r"^[EW]: ", result.stdout, re.M), result.stdout)

    def test_install_verify_purge(self):
        if not IS_ROOT:
            self.skipTest("dpkg -i needs root")
        installed = run(["dpkg-query", "-W", "-f", "${Status}", "nbus"])
        if installed.returncode == 0 and "installed" in installed.stdout and "not-installed" not in installed.stdout:
            self.skipTest("an nbus package is installed on this machine already: not replacing it")
        if os.path.exists("/usr/bin/nbus"):
            self.skipTest("/usr/bin/nbus exists and belongs to no nbus package: not replacing it")
        self.addCleanup(lambda: run(["dpkg", "--purge", "nbus"]))
        result = run(["dpkg", "-i", DEB], timeout=120)
        self.assertEqual(result.returncode, 0, result.stdout)
        files = [f for f in run(["dpkg-query", "-L", "nbus"]).stdout.splitlines() if f and not os.path.isdir(f)]
        self.assertIn("/usr/bin/nbus", files)
        version = run(["/usr/bin/nbus", "--version"])
        self.assertEqual(version.returncode, 0, version.stdout)
        self.assertEqual(run(["getent", "passwd", "nbus"]).returncode, 0, "no nbus system user")
        unit_dir = os.path.dirname([f for f in files if f.endswith("/nbus-broker.service")][0])
        wants = "/etc/systemd/system/multi-user.target.wants/nbus-broker.service"
        self.assertTrue(os.path.islink(wants), "nbus-broker.service is not enabled")
        self.assertFalse(os.path.lexists("/etc/systemd/system/multi-user.target.wants/nbus-broker-curve.service"))
        analyze = shutil.which("systemd-analyze")
        if analyze:
            # The installed units, as installed: their binary and paths are the package's.
            verify = run([analyze, "verify", unit_dir + "/nbus-broker.service", unit_dir + "/nbus-broker-curve.service"])
            self.assertEqual(verify.returncode, 0, verify.stdout)
            self.assertNotIn(".service:", verify.stdout, verify.stdout)
        man = run(["sh", "-c", "zcat /usr/share/man/man1/nbus-broker.1.gz"])
        self.assertIn("--subscriber-budget", man.stdout.replace("\\-", "-"))
        removed = run(["dpkg", "--purge", "nbus"], timeout=120)
        self.assertEqual(removed.returncode, 0, removed.stdout)
        left = [f for f in files if os.path.lexists(f)]
        self.assertEqual(left, [], "left after purge")
        self.assertFalse(os.path.lexists(wants), "the enablement link outlived the package")
        status = run(["dpkg-query", "-W", "-f", "${Status}", "nbus"])
        self.assertNotIn(" installed", status.stdout)


if __name__ == "__main__":
    unittest.main()
