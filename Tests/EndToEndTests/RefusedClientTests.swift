#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

// Issue 29, item 5: clients a CURVE broker will not have. A plaintext `nbus publish --no-wait`
// exited 0 in 15 of 20 runs ("nothing was sent: no subscriber"), closing before libzmq reported
// the refused handshake; `nbus reply` with an unlisted key never exited; `nbus request` with one
// said "no broker reached". A client that never completed a handshake has sent nothing: exit 2,
// saying why. Every wait is on the process's exit.

@Suite("clients a CURVE broker refuses (real processes)", .serialized, .timeLimit(.minutes(2)))
struct RefusedClientTests {
    @Test("plaintext publish --no-wait against a CURVE broker exits 2, every time, saying the broker uses CURVE")
    func plaintextNoWaitPublishExits2() async throws {
        let children = try Children()
        defer { children.killAll() }
        _ = try await TestKeys(children)
        let (_, frontend, _) = try await startSecuredBroker(children)
        // Five runs: the old code passed each with a chance of 1 in 4.
        for run in 1...5 {
            let output = try #require(
                try await children.run(
                    "plaintext publisher \(run)", ["publish", "x.plain", "p-{n}", "--count", "3", "--no-wait", "--connect", frontend]))
            #expect(!output.bySignal && output.status == 2, "run \(run): \(output.stderrText)")
            #expect(output.stderrText.contains("refuses plaintext peers"), "run \(run): \(output.stderrText)")
            #expect(!output.stderrText.contains("nothing was sent: no subscriber"), "run \(run): \(output.stderrText)")
        }
    }

    @Test("reply with a key the broker refuses exits 2 at once, naming the allow-list folders")
    func refusedResponderExits() async throws {
        let children = try Children()
        defer { children.killAll() }
        _ = try await TestKeys(children)
        let (_, frontend, backend) = try await startSecuredBroker(children)
        let responder = try children.start(
            "unlisted responder",
            ["reply", "math.double", "--echo", "--frontend", frontend, "--backend", backend] + TestKeys.client("mallory"))
        // Before the fix it waited for ever ("answering once one does").
        let output = await responder.waitForExit(timeout: .seconds(30))
        expectExit(output, 2, responder)
        #expect(
            output?.stderrText.contains("the server refused this responder's key (mallory.key)") == true, "\(responder.describe())")
        #expect(output?.stderrText.contains("--allow-publishers and --allow-subscribers") == true, "\(responder.describe())")
        // Plaintext against the CURVE broker: the same, saying the broker uses CURVE.
        let plain = try children.start("plaintext responder", ["reply", "math.double", "--echo", "--frontend", frontend, "--backend", backend])
        let plainOutput = await plain.waitForExit(timeout: .seconds(30))
        expectExit(plainOutput, 2, plain)
        #expect(plainOutput?.stderrText.contains("refuses plaintext peers") == true, "\(plain.describe())")
    }

    @Test("request with a key the broker refuses says the key was refused, not that no broker was reached")
    func refusedRequesterIsToldWhy() async throws {
        let children = try Children()
        defer { children.killAll() }
        _ = try await TestKeys(children)
        let (_, frontend, backend) = try await startSecuredBroker(children)
        let output = try #require(
            try await children.run(
                "unlisted requester",
                ["request", "math.double", "21", "--frontend", frontend, "--backend", backend, "--timeout", "5"]
                    + TestKeys.client("mallory")))
        #expect(!output.bySignal && output.status == 2, "\(output.stderrText)")
        #expect(output.stderrText.contains("the server refused this requester's key (mallory.key)"), "\(output.stderrText)")
        #expect(!output.stderrText.contains("no broker reached"), "\(output.stderrText)")
    }
}
