import ArgumentParser
import BusOperations
import Foundation
import ServiceLifecycle
import ToolSupport
import NotificationBus
import Subprocess
import Synchronization

/// `nbus reply` as the service of its group: answers until SIGINT/SIGTERM (the group's graceful
/// shutdown) or `--count`, then closes its bus and logs its summary.
struct ReplyService: Service {
    let command: ReplyCommand
    let bus: Bus
    let pattern: NamePattern
    let requests: NotificationSequence

    func run() async throws {
        let (bus, requests, requestPattern, endpoints) = (self.bus, self.requests, pattern, command.endpoints)
        let tally = ReplyTally(limit: command.count)
        let shellCommand = command.command
        let commandTimeout = SecondsOption.duration(command.commandTimeout)
        let traced = command.tracing.otlpEndpoint != nil
        // Requests are taken one at a time (a command runs alone), in a task of its own that
        // shutdown cancels and then awaits: a command still running is stopped then (Subprocess's
        // teardown of its session) before this process exits, instead of being left behind.
        // Replies are posted side by side: each waits for its requester's subscription to reach
        // this publisher (`Bus.reply`), and a requester that left holds up no other's reply.
        // Counted once posted (or given up), so --count never closes the bus before its last reply.
        let handling = Task {
            await withTaskGroup(of: Void.self) { replies in
                var posting = 0
                for await request in requests {
                    // This responder's own replies, where its pattern also matches their inbox
                    // names (`>`): not requests, not counted as received.
                    if request.publisherID == bus.publisherID {
                        tally.own()
                        continue
                    }
                    guard RequestReply.replyName(of: request) != nil else {
                        tally.ignored()
                        logLine(.warning, "reply", "\(request.name): ignored, no valid reply-to header")
                        continue
                    }
                    let reply =
                        if let shellCommand {
                            await ReplyCommand.run(shellCommand, for: request, timeout: commandTimeout)
                        } else {
                            Reply(payload: request.payload)
                        }
                    if posting >= ReplyTally.concurrentReplies, await replies.next() != nil { posting -= 1 }
                    posting += 1
                    replies.addTask {
                        do {
                            // Shielded from shutdown's cancellation: a reply taken is sent, the
                            // "responder is stopping" one of a command cut short included (its
                            // wait for the requester is bounded by `Bus.requesterWait`).
                            try await Task.detached {
                                try await TracingOptions.continuing(request, if: traced) { try await bus.reply(to: request, with: reply) }
                            }.value
                            tally.replied(isError: reply.isError)
                            logLine(.info, "reply", "\(request.name): \(reply.isError ? "error" : "ok"), \(reply.payload.count) bytes")
                        } catch {
                            tally.notSent()
                            logLine(.warning, "reply", "\(request.name): the reply was not sent: \(error)")
                        }
                    }
                }
            }
        }
        // "answering" means requests can reach us: the subscription is live at the broker. A
        // broker that refuses this responder (its key, or CURVE on one side only) never confirms
        // it: that is watched for as long as the responder runs, and ends it (exit 2) rather
        // than leave it waiting for ever.
        enum Ending: Sendable { case confirmed, unconfirmed, stopped, refused }
        // Bounded by a year: for as long as the responder runs. A refusal already seen is
        // reported at once, so each group below has its own wait.
        // A throw (no refusal within the wait, or the bus closed) is no refusal: nil, and the
        // other ending wins.
        @Sendable func refusal() async -> Ending? {
            (try? await bus.waitForHandshakeRefusal(timeout: .seconds(365 * 86_400))) != nil ? .refused : nil
        }
        let first = await firstResult(
            of: [
                { () async -> Ending? in
                    do {
                        try await bus.ready(requestPattern, timeout: .seconds(10))
                        return .confirmed
                    } catch {
                        return Task.isCancelled ? nil : .unconfirmed
                    }
                },
                refusal,
            ], otherwise: Ending.unconfirmed)
        var ending = first
        if ending != .refused {
            if ending == .unconfirmed {
                logLine(
                    .warning, "reply",
                    "no broker confirmed the subscription at \(endpoints.backend) within 10 s (is `nbus broker` running?); answering once one does")
            }
            logLine(.info, "reply", "answering \(requestPattern) (frontend \(endpoints.frontend), backend \(endpoints.backend))")
            ending = await firstResult(
                of: [
                    // gracefulShutdown throws only when cancelled: the group is over, nil is not read.
                    { () async -> Ending? in (try? await gracefulShutdown()).map { .stopped } },
                    { () async -> Ending? in
                        await tally.waitForLimit()
                        return Task.isCancelled ? nil : .stopped
                    },
                    refusal,
                ], otherwise: Ending.stopped)
        }
        requests.cancel()
        handling.cancel()
        await handling.value
        let stats = await bus.close()
        if ending == .refused {
            logLine(
                .error, "reply", refusedKeyMessage(
                    "reply", role: "responder", curveSecret: endpoints.curve.curveSecret, stats: stats,
                    allowFolders: "--allow-publishers and --allow-subscribers folders (a responder subscribes and posts)"))
            throw ExitCode(2)
        }
        // What went wrong, as a warning in the log; then the summary, not a log line, the last
        // line on stderr (docs/command-line.md).
        let (warning, summary) = (tally.warning(requests.stats), tally.summary(requests.stats))
        let format = CommandSummary.format(output: command.format, log: command.logging.logFormat)
        try await LastWords.atEnd {
            if let warning { logLine(.warning, "reply", warning) }
            summary.write(format)
        }
    }
}

/// What `nbus reply` did with the requests it took: replied (ok or error), replies not sent,
/// requests ignored; and a wait for `limit` of them handled.
private final class ReplyTally: Sendable {
    /// Replies waiting for their requester's subscription at once, at most (as `Bus.respond`).
    static let concurrentReplies = 256

    private struct Counts {
        var ok = 0
        var error = 0
        var notSent = 0
        var ignored = 0
        /// This responder's own posts its pattern matched (its replies): not requests.
        var own = 0
        var handled: Int { ok + error + notSent }
    }

    private let counts = Mutex(Counts())
    private let limit: Int?
    private let reached = OneShot<Void>()

    init(limit: Int?) {
        self.limit = limit
    }

    func replied(isError: Bool) {
        count { if isError { $0.error += 1 } else { $0.ok += 1 } }
    }

    func notSent() {
        count { $0.notSent += 1 }
    }

    func ignored() {
        counts.withLock { $0.ignored += 1 }
    }

    func own() {
        counts.withLock { $0.own += 1 }
    }

    /// Counts a request handled (a reply sent or given up), and says when `limit` is reached.
    private func count(_ change: (inout Counts) -> Void) {
        let handled = counts.withLock { counts in
            change(&counts)
            return counts.handled
        }
        if let limit, handled >= limit { reached.finish() }
    }

    /// Returns once `limit` requests were handled, or the task is cancelled (the signal ended the
    /// group); without a limit, only then.
    func waitForLimit() async {
        guard limit != nil else {
            // The sleep throws only when cancelled, which the loop's condition then sees.
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            return
        }
        _ = await reached.value
    }

    /// The last line: what came and what became of it, as broker, publish and subscribe end.
    /// Unanswered: requests taken but neither replied to, given up nor ignored (dropped from a
    /// full buffer, or still queued or being answered when the responder stopped).
    /// Replies not sent or requests unanswered, said as a warning before the summary; nil when
    /// every request was answered.
    func warning(_ stats: SubscriptionStats) -> String? {
        let counts = counts.withLock { $0 }
        let unanswered = max(0, Int(clamping: stats.received) - counts.own - counts.handled - counts.ignored)
        guard counts.notSent > 0 || unanswered > 0 else { return nil }
        return "\(counts.notSent) reply(ies) not sent (the requester's subscription did not come), "
            + "\(unanswered) request(s) unanswered (dropped from a full buffer, or still queued at the stop)"
    }

    func summary(_ stats: SubscriptionStats) -> CommandSummary {
        let counts = counts.withLock { $0 }
        let received = max(0, Int(clamping: stats.received) - counts.own)
        let unanswered = max(0, received - counts.handled - counts.ignored)
        let text = "received \(received) request(s): replied \(counts.ok + counts.error) (ok \(counts.ok), error \(counts.error)), "
            + "not sent \(counts.notSent), ignored \(counts.ignored) without a reply-to, unanswered \(unanswered)"
        return CommandSummary(
            command: "reply", text: text,
            fields: [
                ("received", .integer(Int64(received))), ("replied", .integer(Int64(counts.ok + counts.error))),
                ("ok", .integer(Int64(counts.ok))), ("error", .integer(Int64(counts.error))),
                ("notSent", .integer(Int64(counts.notSent))), ("ignored", .integer(Int64(counts.ignored))),
                ("unanswered", .integer(Int64(unanswered))),
            ])
    }
}
