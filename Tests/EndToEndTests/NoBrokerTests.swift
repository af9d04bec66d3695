#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// Issue 40, "the first hour": what a newcomer meets who forgot `nbus broker`. Each command says
// "no broker answered at ENDPOINT", names what to start, exits 2, and does so within its own
// bound (--timeout, --connect-timeout, the 2 s a --no-wait publisher gives a handshake). The
// endpoints are a tcp port nothing listens on (connection refused, as at a default endpoint with
// no broker) and an ipc socket file that is not there.
@Suite("No broker running: said, exit 2, in bounded time", .timeLimit(.minutes(2)))
struct NoBrokerTests {
    /// Runs `nbus arguments...` to its end; the output and the wall time it took.
    /// What these commands may take, start and close included: their stderr says which timeout
    /// ended them ("within 1.0 s"), so this only tells an end from a hang (nothing else would stop
    /// them before `run`'s 30 s). A debug build's start and close took 12-13 s beside `stress-ng
    /// --cpu 2` and a full `make test` (CI, 2026-12-06), where 10 s was given before.
    static let bound = 25.0

    static func timed(_ children: Children, _ label: String, _ arguments: [String]) async throws -> (output: ChildOutput, seconds: Double) {
        let clock = ContinuousClock()
        let start = clock.now
        let output = try #require(try await children.run(label, arguments, timeout: .seconds(30)))
        let elapsed = clock.now - start
        return (output, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    @Test("publish: 'no broker answered at ENDPOINT' after --timeout, exit 2, not 'no subscriber'")
    func publishSaysNoBroker() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = "tcp://127.0.0.1:\(try DeploymentDocTests.freePort())"
        let (output, seconds) = try await Self.timed(children, "publish", ["publish", "x.y", "hi", "--connect", endpoint, "--timeout", "1"])
        #expect(!output.bySignal && output.status == 2, "\(output)")
        #expect(output.stderrText.contains("no broker answered at \(endpoint) within 1.0 s: start one with `nbus broker`"), "\(output.stderrText)")
        #expect(!output.stderrText.contains("no subscriber"), "\(output.stderrText)")
        #expect(seconds < Self.bound, "took \(seconds) s")
    }

    @Test("publish --no-wait that sent nothing: exit 2 saying no broker answered (tcp refused, ipc file missing)")
    func noWaitPublishSentNothing() async throws {
        let children = try Children()
        defer { children.killAll() }
        for endpoint in ["tcp://127.0.0.1:\(try DeploymentDocTests.freePort())", children.folder.ipc("none.sock")] {
            let (output, seconds) = try await Self.timed(children, "publish", ["publish", "x.y", "hi", "--no-wait", "--connect", endpoint])
            #expect(!output.bySignal && output.status == 2, "\(endpoint): \(output)")
            #expect(output.stderrText.contains("nothing was sent: no broker answered at \(endpoint)"), "\(output.stderrText)")
            #expect(output.stderrText.hasSuffix("nbus publish: posted 1, sent 0, unsent 0, unwanted 1 (no subscriber)\n"), "\(output.stderrText)")
            // The 2 s a handshake is given, and a process's start and close.
            #expect(seconds < Self.bound, "\(endpoint): took \(seconds) s")
        }
    }

    @Test("subscribe: 'no broker answered at ENDPOINT' after --connect-timeout (or a sooner --timeout), exit 2")
    func subscribeSaysNoBroker() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = "tcp://127.0.0.1:\(try DeploymentDocTests.freePort())"
        let (output, seconds) = try await Self.timed(children, "subscribe", ["subscribe", "x.>", "--connect", endpoint, "--connect-timeout", "1"])
        #expect(!output.bySignal && output.status == 2, "\(output)")
        #expect(output.stderrText.contains("no broker answered at \(endpoint) within 1.0 s: start one with `nbus broker`"), "\(output.stderrText)")
        #expect(seconds < Self.bound, "took \(seconds) s")

        let sooner = try #require(try await children.run(
            "subscribe", ["subscribe", "x.>", "--connect", children.folder.ipc("none.sock"), "--count", "1", "--timeout", "0.5"]))
        #expect(!sooner.bySignal && sooner.status == 2, "\(sooner)")
        #expect(sooner.stderrText.contains("no broker answered at \(children.folder.ipc("none.sock")) within 0.5 s"), "\(sooner.stderrText)")
    }

    @Test("subscribe --connect-timeout 0 waits for a broker started later, and gets what it sends")
    func subscribeWaitsForLateBroker() async throws {
        let children = try Children()
        defer { children.killAll() }
        let subscriber = try children.start(
            "subscriber", ["subscribe", "late.x", "--connect", children.folder.ipc("b.sock"), "--connect-timeout", "0", "--count", "1"])
        let (_, frontend, _) = try await children.startBroker()
        let publisher = try #require(try await children.run("publisher", ["publish", "late.x", "hello", "--connect", frontend, "--timeout", "20"]))
        #expect(publisher.status == 0, "\(publisher)")
        let output = try #require(await subscriber.waitForExit(), "\(subscriber.describe())")
        #expect(output.status == 0 && output.stdoutText.contains("hello"), "\(output)")
    }

    @Test("subscribe whose publisher answered and then left: --timeout says timed out (exit 1), not 'no broker'")
    func subscribeAfterPublisherLeftTimesOut() async throws {
        let children = try Children()
        defer { children.killAll() }
        let endpoint = children.folder.ipc("gone.sock")
        // It received one of two, then the binding publisher exited: the connection is down when
        // --timeout ends the wait, but something did answer (a lost publisher, or one that cut
        // this subscriber off under load, is not a missing broker).
        let publisher = try children.start(
            "publisher", ["publish", "gone.x", "one", "--bind", endpoint, "--subscribers", "1", "--timeout", "30"])
        let subscriber = try children.start(
            "subscriber", ["subscribe", "gone.x", "--connect", endpoint, "--count", "2", "--timeout", "4"])
        let published = try #require(await publisher.waitForExit(), "\(publisher.describe())")
        #expect(published.status == 0, "\(published)")
        let output = try #require(await subscriber.waitForExit(), "\(subscriber.describe())")
        #expect(!output.bySignal && output.status == 1, "\(output)")
        #expect(output.stdoutText.contains("one"), "\(output)")
        #expect(output.stderrText.contains("printed 1 of 2 before the 4.0 s timeout"), "\(output.stderrText)")
        #expect(!output.stderrText.contains("no broker answered"), "\(output.stderrText)")
    }

    @Test("request --timeout 3 with no broker ends within its timeout (not timeout + 2 s), exit 2 saying so")
    func requestBoundedByItsTimeout() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (frontend, backend) = ("tcp://127.0.0.1:\(try DeploymentDocTests.freePort())", "tcp://127.0.0.1:\(try DeploymentDocTests.freePort())")
        let (output, seconds) = try await Self.timed(
            children, "request",
            ["request", "math.double", "21", "--frontend", frontend, "--backend", backend, "--timeout", "3", "--log-level", "debug"])
        #expect(!output.bySignal && output.status == 2, "\(output)")
        #expect(output.stderrText.contains("no broker reached at \(frontend) and \(backend) within 3.0 s"), "\(output.stderrText)")
        // From its first log line (the request starts) to its last (the bus closed, the error
        // said): 3 s and a close, where it used to be 5 s. The process's own start, slow on a
        // loaded machine, is left out.
        let stamps = output.stderrText.split(separator: "\n").compactMap { line -> Date? in
            guard line.count > 24, line.dropFirst(23).first == "Z" else { return nil }
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.date(from: String(line.prefix(24)))
        }
        let first = try #require(stamps.first, "\(output.stderrText)")
        let last = try #require(stamps.last, "\(output.stderrText)")
        let inside = last.timeIntervalSince(first)
        #expect(inside >= 2.9 && inside < 3.9, "from start to error \(inside) s:\n\(output.stderrText)")
        #expect(seconds < Self.bound, "took \(seconds) s")
    }
}
