#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ToolSupport
import Testing
import TestSupport

/// `nbus broker --http`, `nbus subscribe --http`, logs, `--version` and completions, with real
/// processes, real sockets and Debian's own checkers (promtool, systemd-analyze).
@Suite("Operations: monitoring endpoints, logs, version (real processes)", .serialized, .timeLimit(.minutes(2)))
struct OperationsTests {
    static let promtool = findTool("promtool")

    /// Starts a broker with `--http 127.0.0.1:0` and returns it with its monitoring port, read
    /// from its log line.
    func startMonitoredBroker(_ children: Children, _ extra: [String] = []) async throws -> (
        broker: Child, frontend: String, backend: String, port: Int
    ) {
        let (broker, frontend, backend) = try await children.startBroker(["--http", "127.0.0.1:0"] + extra)
        try #require(await broker.waitForStderr(containing: "monitoring on http://"), "\(broker.describe())")
        let port = try #require(monitoringPort(in: broker.output.stderrText), "\(broker.describe())")
        return (broker, frontend, backend, port)
    }

    @Test(
        "/metrics after known traffic: promtool accepts it, and the figures match what was sent",
        .enabled(if: promtool != nil || getuid() == 0, "promtool is missing and this is not root (make deps installs Debian's prometheus as root)"))
    func metricsAfterTraffic() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend, port) = try await startMonitoredBroker(children, ["--log-level", "debug"])
        let subscriber = try children.start(
            "subscriber", ["subscribe", "ops.>", "--connect", backend, "--count", "5", "--timeout", "30", "--format", "json"])
        let payload = String(repeating: "p", count: 100)
        let publisher = try await children.run(
            "publisher", ["publish", "ops.created", payload, "--count", "5", "--connect", frontend, "--subscribers", "1"])
        #expect(publisher?.status == 0)
        let received = await subscriber.waitForExit()
        #expect(received?.status == 0 && received?.stdoutLines.count == 5, "\(subscriber.describe())")

        // Both clients gone, as the broker's debug lines say (written once its records are updated).
        #expect(await broker.waitForStderr(containing: "publisher disconnected"), "\(broker.describe())")
        #expect(await broker.waitForStderr(containing: "subscriber disconnected"), "\(broker.describe())")
        #expect(try httpGet(port: port, "/connz").body.contains("\"count\" : 0"), "\(bodyOf(port, "/connz"))")
        let metrics = try httpGet(port: port, "/metrics")
        #expect(metrics.status == 200)
        let body = metrics.body
        let fromPublishers = try #require(metricValue(body, #"nbus_broker_notifications_total{direction="from_publishers"}"#), "\(body)")
        let toSubscribers = try #require(metricValue(body, #"nbus_broker_notifications_total{direction="to_subscribers"}"#))
        let messages = try #require(metricValue(body, #"nbus_broker_messages_total{direction="from_publishers"}"#))
        #expect(messages >= 2 && messages <= fromPublishers, "\(body)")
        let bytesIn = try #require(metricValue(body, #"nbus_broker_bytes_total{direction="from_publishers"}"#))
        // 5 notifications and the publisher's end-of-stream record(s); every one went on.
        #expect(fromPublishers >= 6 && toSubscribers == fromPublishers, "\(body)")
        #expect(bytesIn >= 5 * Double(payload.count + "ops.created".count), "\(body)")
        #expect((metricValue(body, "nbus_broker_subscription_messages_total") ?? 0) >= 1)
        #expect(metricValue(body, #"nbus_broker_connections{side="subscriber"}"#) == 0)
        #expect(metricValue(body, #"nbus_broker_connections{side="publisher"}"#) == 0)
        #expect(metricValue(body, "nbus_broker_connections_peak") == 2)
        #expect(metricValue(body, "nbus_broker_slow_subscriber_episodes_total") == 0)
        #expect((metricValue(body, "nbus_broker_uptime_seconds") ?? 0) > 0)
        #expect(body.contains("nbus_build_info{version=\"\(try Self.releasedVersion())\"} 1"), "\(body)")
        // The process's own figures, as every Prometheus client library names them.
        Self.expectProcessMetrics(body, pid: broker.pid)
        #expect(metricValue(body, "nbus_broker_memory_limit_bytes") == Double(4_096 << 20), "\(body)")
        #expect((metricValue(body, "nbus_broker_subscription_topics") ?? -1) >= 0, "\(body)")
        #expect(body.contains("# TYPE nbus_broker_subscriber_unsent_bytes gauge"), "\(body)")

        // /varz says the same, with the version and settings.
        let varz = try JSONSerialization.jsonObject(with: Data(try httpGet(port: port, "/varz").body.utf8)) as? [String: Any]
        let counters = varz?["counters"] as? [String: Any]
        #expect(counters?["notificationsFromPublishers"] as? Double == fromPublishers)
        #expect(counters?["fromPublishers"] as? Double == messages)
        #expect(varz?["backend"] as? String == backend)
        #expect(varz?["version"] as? String == (try Self.releasedVersion()), "\(varz ?? [:])")
        // Settings and counters are JSON numbers, not strings.
        let settings = varz?["settings"] as? [String: Any] ?? [:]
        #expect(settings["hwm"] as? Int == 10_000, "\(settings)")
        #expect(settings["slowAfterSeconds"] as? Double == 0.5, "\(settings)")
        #expect(settings.count >= 8 && settings.values.allSatisfy { $0 is NSNumber && !($0 is String) }, "\(settings)")
        #expect(counters?.values.allSatisfy { $0 is NSNumber && !($0 is String) } == true, "\(counters ?? [:])")
        #expect(varz?["startTimeSeconds"] is NSNumber && varz?["uptimeSeconds"] is NSNumber)
        let rawVarz = try httpGet(port: port, "/varz").body
        #expect(rawVarz.contains("\"hwm\" : 10000") && !rawVarz.contains("\"10000\""), "\(rawVarz)")
        #expect(try httpGet(port: port, "/nonexistent").status == 404)
        // GET / lists the endpoints.
        let index = try httpGet(port: port, "/")
        #expect(index.status == 200)
        for path in ["/metrics", "/healthz", "/varz", "/connz", "/subsz", "/retainedz"] {
            #expect(index.body.contains("\n\(path) "), "\(index.body)")
        }

        guard let promtool = Self.promtool else {
            Issue.record("promtool is missing as root: make deps should have installed Debian's prometheus")
            return
        }
        let check = try await runTool(promtool, ["check", "metrics"], input: body)
        #expect(check.status == 0, "promtool check metrics: \(check.output)\n\(body)")
    }

    @Test("/connz lists the processes started (by pid over ipc) and forgets the ones killed; /subsz counts them")
    func connectionsComeAndGo() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend, port) = try await startMonitoredBroker(children, ["--log-level", "debug"])
        let first = try children.start("first", ["subscribe", "jobs.>", "--connect", backend])
        let second = try children.start("second", ["subscribe", "jobs.>", "audit.*", "--connect", backend])
        func pids() throws -> Set<Int32>? {
            let body = try httpGet(port: port, "/connz").body
            guard let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                let list = object["connections"] as? [[String: Any]]
            else { return nil }
            return Set(list.filter { $0["side"] as? String == "subscriber" }.compactMap { ($0["processID"] as? Int).map(Int32.init) })
        }
        for child in [first, second] {
            #expect(await broker.waitForStderr(containing: "subscriber connected on \(backend) (pid \(child.pid))"))
        }
        #expect(try pids() == [first.pid, second.pid], "connz: \(bodyOf(port, "/connz"))")

        // Publishers that wait for their subscribers: once they have seen them, the broker has
        // recorded their announcements (it records a subscription before passing it on).
        for (name, count) in [("jobs.x", 2), ("audit.login", 1)] {
            let publisher = try await children.run(
                "publisher \(name)", ["publish", name, "--count", "1", "--connect", frontend, "--subscribers", "\(count)"])
            #expect(publisher?.status == 0, "\(publisher?.stderrText ?? "")")
        }
        let subsz = try JSONSerialization.jsonObject(with: Data(try httpGet(port: port, "/subsz").body.utf8)) as? [String: Any]
        let patterns = subsz?["patterns"] as? [[String: Any]] ?? []
        #expect(patterns.first { $0["pattern"] as? String == "jobs.>" }?["subscribers"] as? Int == 2, "\(bodyOf(port, "/subsz"))")
        #expect(patterns.first { $0["pattern"] as? String == "audit.*" }?["subscribers"] as? Int == 1, "\(bodyOf(port, "/subsz"))")
        #expect(subsz?["foreignPrefixes"] as? Int == 0)

        first.signal(SIGKILL)
        #expect(await broker.waitForStderr(containing: "subscriber disconnected from \(backend) (pid \(first.pid))"))
        #expect(try pids() == [second.pid], "connz: \(bodyOf(port, "/connz"))")
        // The killed bus's unsubscriptions reach the broker in their own time (libzmq sends them as
        // the pipe ends; no event says when): asked for until they show, bounded.
        let after = try await eventually { () -> Bool? in
            let body = try httpGet(port: port, "/subsz").body
            return body.contains("\"subscribers\" : 1") && !body.contains("\"subscribers\" : 2") ? true : nil
        }
        #expect(after == true, "subsz: \(bodyOf(port, "/subsz"))")

        // SIGTERM: the broker and its HTTP server stop in order, exit 0.
        broker.signal(SIGTERM)
        let stopped = await broker.waitForExit()
        #expect(stopped?.status == 0 && stopped?.bySignal == false, "\(broker.describe())")
        #expect(stopped?.stderrText.contains("nbus broker: stopped:") == true)
    }

    @Test("a stopped subscriber's backlog shows on the broker's /metrics by its pid, and drains once it runs again")
    func subscriberBacklog() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, backend, port) = try await startMonitoredBroker(children, ["--log-level", "debug"])
        let subscriber = try children.start("subscriber", ["subscribe", "big.>", "--connect", backend])
        #expect(await broker.waitForStderr(containing: "subscriber connected on \(backend) (pid \(subscriber.pid))"), "\(broker.describe())")
        let series = #"nbus_broker_subscriber_unsent_bytes{endpoint=""# + backend + #"",peer="pid:"# + "\(subscriber.pid)\"}"
        let idle = try httpGet(port: port, "/metrics").body
        #expect(metricValue(idle, series) == 0, "\(idle)")

        // 2 MB for it while it is stopped: far more than a socket buffer, far less than its budget.
        subscriber.signal(SIGSTOP)
        await subscriber.waitUntilStoppedOrGone()
        let publisher = try await children.run(
            "publisher",
            ["publish", "big.x", String(repeating: "b", count: 1_000), "--count", "2000", "--connect", frontend, "--subscribers", "1"])
        #expect(publisher?.status == 0, "\(publisher?.stderrText ?? "")")
        let backlog = try await eventually { () -> Double? in
            let value = metricValue(try httpGet(port: port, "/metrics").body, series) ?? 0
            return value > 16_384 ? value : nil
        }
        #expect(backlog != nil, "\(bodyOf(port, "/metrics"))")

        subscriber.signal(SIGCONT)
        let drained = try await eventually { () -> Bool? in
            metricValue(try httpGet(port: port, "/metrics").body, series) == 0 ? true : nil
        }
        #expect(drained == true, "\(bodyOf(port, "/metrics"))")
    }

    @Test("an --http port already taken: the broker exits 2 before it binds or says it is ready, saying why")
    func httpPortTaken() async throws {
        let children = try Children()
        defer { children.killAll() }
        let taken = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(taken) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(taken, $0, length) == 0 && listen(taken, 1) == 0 && getsockname(taken, $0, &length) == 0
            }
        }
        try #require(listening)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let broker = try #require(await children.run(
            "broker", ["broker", "--frontend", children.folder.ipc("f.sock"), "--backend", children.folder.ipc("b.sock"),
                       "--http", "127.0.0.1:\(port)"]))
        #expect(broker.status == 2, "\(broker.stderrText)")
        #expect(broker.stderrText.contains("error nbus broker: cannot serve --http 127.0.0.1:\(port): Address already in use"), "\(broker.stderrText)")
        #expect(broker.stdoutText.isEmpty, "a script waiting for the ready line would have gone on: \(broker.stdoutText)")
    }

    @Test("an --http address this machine does not have: publish exits 2 before posting, saying why in one line")
    func httpAddressNotHere() async throws {
        let children = try Children()
        defer { children.killAll() }
        // 192.0.2.1 is TEST-NET-1 (RFC 5737): on no machine's interfaces.
        let publisher = try #require(await children.run(
            "publisher", ["publish", "h.x", "hi", "--no-wait", "--connect", children.folder.ipc("f.sock"), "--http", "192.0.2.1:0"]))
        #expect(publisher.status == 2, "\(publisher.stderrText)")
        #expect(
            publisher.stderrText.contains("error nbus publish: cannot serve --http 192.0.2.1:0: Cannot assign requested address (errno 99)"),
            "\(publisher.stderrText)")
        #expect(!publisher.stderrText.contains("posted"), "it posted before finding out: \(publisher.stderrText)")
    }

    @Test("with CURVE, /connz shows each connection's admitted key and /metrics counts the refusals")
    func curveKeysOnConnz() async throws {
        let children = try Children()
        defer { children.killAll() }
        let keys = try await TestKeys(children)
        let frontend = children.folder.ipc("f.sock")
        let backend = children.folder.ipc("b.sock")
        let broker = try children.start(
            "broker",
            ["broker", "--frontend", frontend, "--backend", backend, "--curve-secret", "broker.key",
             "--allow-publishers", "pubs", "--allow-subscribers", "subs", "--http", "127.0.0.1:0", "--log-level", "debug"])
        try #require(await broker.waitForStderr(containing: "monitoring on http://"), "\(broker.describe())")
        let port = try #require(monitoringPort(in: broker.output.stderrText))
        let bob = try children.start("bob", ["subscribe", "k.>", "--connect", backend] + TestKeys.client("subs/bob"))
        // Connected and admitted, as the broker logs both (after recording them).
        #expect(await broker.waitForStderr(containing: "subscriber connected on \(backend) (pid \(bob.pid))"), "\(broker.describe())")
        #expect(await broker.waitForStderr(containing: "admitted subscriber 'bob'"), "\(broker.describe())")
        let object = try JSONSerialization.jsonObject(with: Data(try httpGet(port: port, "/connz").body.utf8)) as? [String: Any]
        let list = object?["connections"] as? [[String: Any]] ?? []
        let found = list.first { $0["processID"] as? Int == Int(bob.pid) }
        #expect(found?["curveKey"] as? String == keys.bob, "connz: \(bodyOf(port, "/connz"))")
        #expect(found?["side"] as? String == "subscriber")

        // An unlisted key is refused: counted on /metrics, and never listed with a key.
        let mallory = try await children.run(
            "mallory", ["subscribe", "k.>", "--connect", backend, "--count", "1", "--timeout", "30"] + TestKeys.client("mallory"))
        #expect(mallory?.status == 2, "\(mallory?.stderrText ?? "")")
        let body = try httpGet(port: port, "/metrics").body
        #expect((metricValue(body, #"nbus_broker_curve_handshakes_total{side="subscriber",outcome="refused_key"}"#) ?? 0) >= 1, "\(body)")
        #expect(metricValue(body, #"nbus_broker_curve_handshakes_total{side="subscriber",outcome="admitted"}"#) == 1, "\(body)")
        #expect(!bodyOf(port, "/connz").contains(keys.mallory))
    }

    /// The forwarding thread logs connections at debug level, synchronously, on standard error. A
    /// standard error nobody reads (a stalled log collector) fills its pipe and blocks that thread
    /// for real: SIGSTOP would stop the HTTP server too, this stops the forwarding loop alone.
    @Test("/healthz fails while the forwarding thread is stuck (blocked writing to a full log pipe), and recovers")
    func healthFailsWhenForwardingIsStuck() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let backendPath = folder.path + "/b.sock"
        let stderr = try Pipe2()
        let process = try SpawnedProcess.spawn(
            try NBusBinary.url().path,
            [
                "broker", "--frontend", folder.ipc("f.sock"), "--backend", "ipc://" + backendPath,
                "--http", "127.0.0.1:0", "--log-level", "debug",
            ], standardOutput: .null, standardError: .descriptor(stderr.writing))
        close(stderr.writing)
        defer {
            process.send(SIGKILL)
            process.waitUntilExit()
            close(stderr.reading)
        }
        // Read stderr up to the monitoring line, then stop reading it.
        let reader = stderr.reading
        let (port, seen) = try await runBlocking { () -> (Int?, String) in
            var seen = ""
            var port: Int?
            var byte: UInt8 = 0
            while port == nil, read(reader, &byte, 1) == 1 {
                seen.unicodeScalars.append(UnicodeScalar(byte))
                if byte == UInt8(ascii: "\n") { port = monitoringPort(in: seen) }
            }
            return (port, seen)
        }
        let monitoring = try #require(port, "no monitoring line: \(seen)")
        #expect(try httpGet(port: monitoring, "/healthz").status == 200)

        // Connections that come and go: each one is two debug lines from the forwarding thread,
        // until the pipe (64 KiB) is full and the thread blocks in write().
        var stuck: HTTPReply?
        for _ in 0..<20 where stuck == nil {
            for _ in 0..<200 { connectAndClose(unixSocket: backendPath) }
            stuck = try await eventually(timeout: .seconds(8)) { () -> HTTPReply? in
                let reply = try httpGet(port: monitoring, "/healthz")
                return reply.status == 503 ? reply : nil
            }
        }
        let reply = try #require(stuck, "/healthz never failed")
        #expect(reply.body.contains("stuck"), "\(reply.body)")

        // Read the log again: the thread writes on, and the broker is healthy again.
        let drain = Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while read(reader, &buffer, buffer.count) > 0 {}
        }
        drain.start()
        let healthy = try await eventually { try httpGet(port: monitoring, "/healthz").status == 200 ? true : nil }
        #expect(healthy == true)
    }

    /// The `process_*` metrics of process `pid` in `body`: present, with HELP and TYPE lines, and
    /// plausible against what /proc says of that process now.
    static func expectProcessMetrics(_ body: String, pid: Int32, sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, type) in [
            ("process_cpu_seconds_total", "counter"), ("process_open_fds", "gauge"), ("process_max_fds", "gauge"),
            ("process_virtual_memory_bytes", "gauge"), ("process_virtual_memory_max_bytes", "gauge"),
            ("process_resident_memory_bytes", "gauge"), ("process_start_time_seconds", "gauge"),
        ] {
            #expect(body.contains("# TYPE \(name) \(type)\n"), "no \(name) \(type)", sourceLocation: sourceLocation)
            #expect(body.contains("# HELP \(name) "), "no HELP for \(name)", sourceLocation: sourceLocation)
        }
        let openFiles = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        let reported = metricValue(body, "process_open_fds") ?? 0
        // The scrape's own connection comes and goes: a few either way.
        #expect(reported >= 5 && abs(reported - Double(openFiles)) <= 8, "open fds \(reported), /proc says \(openFiles)", sourceLocation: sourceLocation)
        #expect((metricValue(body, "process_max_fds") ?? 0) >= 1_024, sourceLocation: sourceLocation)
        let resident = metricValue(body, "process_resident_memory_bytes") ?? 0
        #expect(resident > 1_000_000 && resident < 4e9, "resident \(resident)", sourceLocation: sourceLocation)
        #expect((metricValue(body, "process_virtual_memory_bytes") ?? 0) > resident, sourceLocation: sourceLocation)
        let start = metricValue(body, "process_start_time_seconds") ?? 0
        let now = Date().timeIntervalSince1970
        #expect(start > now - 300 && start <= now + 1, "start \(start), now \(now)", sourceLocation: sourceLocation)
        #expect((metricValue(body, "process_cpu_seconds_total") ?? -1) >= 0, sourceLocation: sourceLocation)
    }

    /// The body at `path`, for a failure message ("?" when it cannot be had).
    func bodyOf(_ port: Int, _ path: String) -> String {
        (try? httpGet(port: port, path).body) ?? "?"
    }

    /// Connects a plain Unix socket to `path` and closes it: the broker accepts a connection that
    /// then goes away.
    func connectAndClose(unixSocket path: String) {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    @Test(
        "nbus subscribe --http: its bus's and subscription's counters on /metrics, accepted by promtool",
        .enabled(if: promtool != nil || getuid() == 0, "promtool is missing and this is not root (make deps installs Debian's prometheus as root)"))
    func subscriberMetrics() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("direct.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "m.>", "--bind", endpoint, "--http", "127.0.0.1:0", "--metrics-interval", "0.2"])
        try #require(await subscriber.waitForStderr(containing: "monitoring on http://"), "\(subscriber.describe())")
        let port = try #require(monitoringPort(in: subscriber.output.stderrText))
        let publisher = try await children.run(
            "publisher", ["publish", "m.x", "hello", "--count", "3", "--connect", endpoint, "--subscribers", "1"])
        #expect(publisher?.status == 0)
        #expect(await subscriber.waitForStdoutLines(3))
        let body = try httpGet(port: port, "/metrics").body
        #expect(metricValue(body, #"nbus_subscription_delivered_total{pattern="m.>"}"#) == 3, "\(body)")
        #expect(metricValue(body, "nbus_bus_lost_upstream_total") == 0, "\(body)")
        #expect(body.contains("nbus_build_info{version=\""), "\(body)")
        Self.expectProcessMetrics(body, pid: subscriber.pid)
        // The three printed notifications, each timed from its publish timestamp.
        #expect(metricValue(body, "nbus_delivery_latency_seconds_count") == 3, "\(body)")
        #expect(metricValue(body, #"nbus_delivery_latency_seconds_bucket{le="+Inf"}"#) == 3, "\(body)")
        #expect((metricValue(body, "nbus_delivery_latency_seconds_sum") ?? -1) >= 0, "\(body)")
        #expect(try httpGet(port: port, "/").body.contains("\n/healthz "))
        #expect(try httpGet(port: port, "/healthz").status == 200)
        if let promtool = Self.promtool {
            let check = try await runTool(promtool, ["check", "metrics"], input: body)
            // Unfiltered: every metric has its HELP line (HelpTextMetricsFactory), so promtool's
            // lint has nothing to say.
            #expect(check.status == 0 && check.output.isEmpty, "promtool check metrics: \(check.output)\n\(body)")
        } else {
            Issue.record("promtool is missing as root: make deps should have installed Debian's prometheus")
        }
    }

    @Test("nbus publish --http: its bus's counters on /metrics while it posts, then it stops on SIGINT")
    func publisherMetrics() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("direct.sock")
        let subscriber = try children.start("subscriber", ["subscribe", "p.>", "--bind", endpoint, "--format", "json"])
        let publisher = try children.start(
            "publisher",
            ["publish", "p.x", "n{n}", "--count", "100000", "--rate", "20", "--connect", endpoint, "--subscribers", "1",
             "--http", "127.0.0.1:0"])
        try #require(await publisher.waitForStderr(containing: "monitoring on http://"), "\(publisher.describe())")
        let port = try #require(monitoringPort(in: publisher.output.stderrText))
        // Three notifications printed: at least three posted and sent, once the counters the
        // scrape reads caught up with the sends (a scrape right after the third line once read 2
        // on a loaded machine): scraped again until they do, bounded.
        #expect(await subscriber.waitForStdoutLines(3), "\(subscriber.describe())")
        var body = try httpGet(port: port, "/metrics").body
        let deadline = ContinuousClock.now + standardWait
        while (metricValue(body, "nbus_bus_sent_total") ?? 0) < 3, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            body = try httpGet(port: port, "/metrics").body
        }
        #expect((metricValue(body, "nbus_bus_posted_total") ?? 0) >= 3, "\(body)")
        #expect((metricValue(body, "nbus_bus_sent_total") ?? 0) >= 3, "\(body)")
        #expect(metricValue(body, "nbus_bus_unsent_total") == 0, "\(body)")
        publisher.signal(SIGINT)
        let stopped = try #require(await publisher.waitForExit())
        #expect(stopped.status == 0, "\(publisher.describe())")
        #expect((try? httpGet(port: port, "/healthz")) == nil, "the server stops with the command")
    }

    @Test("--log-format json: every stderr line is a JSON object with a timestamp and a level; stdout stays data")
    func jsonLogs() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("direct.sock")
        let subscriber = try children.start(
            "subscriber", ["subscribe", "j.>", "--bind", endpoint, "--count", "2", "--timeout", "30", "--log-format", "json"])
        let publisher = try await children.run(
            "publisher", ["publish", "j.x", "data", "--count", "2", "--connect", endpoint, "--subscribers", "1", "--log-format", "json"])
        #expect(publisher?.status == 0)
        let output = try #require(await subscriber.waitForExit())
        #expect(output.status == 0)
        #expect(output.stdoutLines.count == 2 && output.stdoutLines.allSatisfy { $0.hasPrefix("j.x seq=") }, "\(output.stdoutText)")
        for text in [output.stderrText, publisher?.stderrText ?? ""] {
            let lines = text.split(separator: "\n")
            #expect(!lines.isEmpty)
            // Log lines, then the summary: a JSON object too, the last line, without a timestamp.
            for line in lines.dropLast() {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["timestamp"] is String && object?["level"] is String && object?["message"] is String, "\(line)")
            }
            let last = try lines.last.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(last??["summary"] is String && last??["timestamp"] == nil, "\(text)")
        }
        #expect(summaryCounts(output.stderrText, "subscribe", "printed") == [2], "\(output.stderrText)")
        #expect(summaryCounts(publisher?.stderrText, "publish", "posted", "sent") == [2, 2], "\(publisher?.stderrText ?? "")")
    }

    @Test("--log-level critical drops the error a publish that reached nobody logs; log lines carry a timestamp and a level, the summary not")
    func logLevels() async throws {
        let children = try Children()
        defer { children.killAll() }
        let quiet = try await children.run("quiet", ["publish", "l.x", "--no-wait", "--connect", children.folder.ipc("none.sock"), "--log-level", "critical"])
        // The summary is not a log line: it stays, whatever the level.
        #expect(
            quiet?.status == 2 && quiet?.stderrText == "nbus publish: posted 1, sent 0, unsent 0, unwanted 1 (no subscriber)\n",
            "\(quiet?.stderrText ?? "")")
        let loud = try await children.run("loud", ["publish", "l.x", "--no-wait", "--connect", children.folder.ipc("none.sock")])
        let lines = (loud?.stderrText ?? "").split(separator: "\n").map(String.init)
        #expect(
            lines.first?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z error nbus publish: nothing was sent"#, options: .regularExpression)
                != nil, "\(lines)")
        #expect(lines.last == "nbus publish: posted 1, sent 0, unsent 0, unwanted 1 (no subscriber)", "\(lines)")
    }

    /// The newest version `CHANGELOG.md` gives a heading to (`## 0.2.0 (2026-12-06)`), skipping
    /// `## Unreleased`.
    static func releasedVersion() throws -> String {
        let changelog = try String(contentsOf: DocSnippetTests.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let heading = try #require(changelog.firstMatch(of: /\n## (\d+\.\d+\.\d+)/), "no release heading in CHANGELOG.md")
        return String(heading.output.1)
    }

    @Test("nbus --version prints the version; --generate-completion-script makes a bash script")
    func versionAndCompletions() async throws {
        let children = try Children()
        defer { children.killAll() }
        let version = try #require(await children.run("version", ["--version"]))
        #expect(version.status == 0)
        // One number everywhere: the binary, CHANGELOG's newest release and README's dependency line.
        let released = try Self.releasedVersion()
        #expect(version.stdoutText == released + "\n", "nbus --version says \(version.stdoutText), CHANGELOG \(released)")
        let readme = try String(contentsOf: DocSnippetTests.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains(#"from: "\#(released)")"#), "README's dependency line does not name \(released)")
        let completion = try #require(await children.run("completion", ["--generate-completion-script", "bash"]))
        #expect(completion.status == 0)
        #expect(completion.stdoutText.contains("complete") && completion.stdoutText.contains("_nbus"))
        if let bash = findTool("bash") {
            // The script is valid bash.
            let check = try await runTool(bash, ["-n"], input: completion.stdoutText)
            #expect(check.status == 0, "\(check.output)")
        }
    }

    @Test(
        "docs/nbus-broker.service passes systemd-analyze verify",
        .enabled(if: findTool("systemd-analyze") != nil || getuid() == 0, "systemd-analyze is missing and this is not root (make deps installs Debian's systemd as root)"))
    func systemdUnit() async throws {
        let analyze = try #require(findTool("systemd-analyze"))
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/nbus-broker.service")
        let unit = try String(contentsOf: source, encoding: .utf8)
        // The unit names /usr/local/bin/nbus; verify checks that the binary exists, so point it at
        // the one built here (the only change).
        let binary = try NBusBinary.url().path
        #expect(unit.contains("ExecStart=/usr/local/bin/nbus broker"))
        let folder = try TempFolder()
        defer { folder.remove() }
        let path = folder.path + "/nbus-broker.service"
        try unit.replacingOccurrences(of: "/usr/local/bin/nbus", with: binary).write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await runTool(analyze, ["verify", path])
        #expect(result.status == 0, "systemd-analyze verify: \(result.output)")
        #expect(!result.output.contains("nbus-broker.service:"), "warnings about the unit: \(result.output)")
    }
}

@Suite("A command says when its bus cannot reach what it connects to", .timeLimit(.minutes(1)))
struct UnreachableEndpointTests {
    @Test("subscribe to an endpoint nobody binds: a warning after 3 s, a notice once a publisher binds it")
    func warnsThenConnects() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("late.sock")
        // No --count: the subscriber runs until the notice is seen (it is logged at the watch's
        // next look, which a subscriber done with one notification might not wait for).
        // --connect-timeout 0: waiting for ever, it is still there when the publisher comes.
        let subscriber = try children.start("subscriber", ["subscribe", "late.>", "--connect", endpoint, "--connect-timeout", "0"])
        #expect(
            await subscriber.waitForStderr(containing: "warning nbus subscribe: not connected to \(endpoint) after "),
            "\(subscriber.describe())")
        // Paced, so the connection stays up across several of the watch's looks (every 250 ms).
        let publisher = try children.start("publisher", ["publish", "late.x", "--bind", endpoint, "--count", "3", "--rate", "1"])
        #expect(await subscriber.waitForStderr(containing: "notice nbus subscribe: connected to \(endpoint) after"), "\(subscriber.describe())")
        expectExit(await publisher.waitForExit(), 0, publisher)
        #expect(await subscriber.waitForStdoutLine(containing: "late.x seq=1") != nil, "\(subscriber.describe())")
        subscriber.signal(SIGINT)
        expectExit(await subscriber.waitForExit(), 0, subscriber)
    }
}

