import NotificationBus

/// How `nbus publish` ends: from what happened (`Ending`), the publisher's counters once closed
/// and its options, the lines it writes and its exit status, by the rules its help text and
/// docs/command-line.md state:
///
/// - 0: sent;
/// - 1: unsent notifications (still queued at close), or another failure;
/// - 2: no subscriber in time, no broker answered, nothing sent (`--no-wait` with nobody wanting
///   them), a key the server refused, a handshake that never completed (with `--no-wait` too), or
///   skipped input lines. (An unusable endpoint or key file is 2 as well, and
///   bad arguments 64, before any of this: the command never starts.)
package enum PublishOutcome {
    /// What the publisher was asked, as far as its ending depends on it; set the fields that apply.
    package struct Options: Sendable {
        /// `--lines`: the summary counts skipped lines (without it, the text leaves them out).
        package var readsLines = false
        /// `--subscribers`, and `--timeout` in seconds: what the wait was for.
        package var subscriberCount = 1
        package var waitSeconds = 10.0
        /// `--close-timeout` in seconds.
        package var closeTimeout = 5.0
        /// The endpoints it connects to (the default one when none is given), for "no broker
        /// answered at ...".
        package var connectEndpoints: [String] = []
        /// `--curve-secret`, if any.
        package var curveSecret: String?

        package init() {}
    }

    /// How the wait for subscribers ended.
    package enum Wait: Sendable, Equatable {
        /// `--subscribers` arrived.
        case ready
        /// A CURVE server refused this publisher's key (or met it with another mechanism).
        case refused
        /// The time ran out with `arrived` of them there.
        case timedOut(arrived: Int)
        /// The time ran out and nothing answered at any --connect endpoint: no connection came up
        /// and no handshake was even tried (no broker running there).
        case nothingAnswered
        /// The refusal watch ended without a refusal (internal: never the wait's outcome).
        case noRefusal
    }

    /// What happened to the run, the bus closed since.
    package enum Ending: Sendable, Equatable {
        /// The wait for subscribers of `name` ended with `wait` (not `.ready`): nothing was posted.
        case subscribersMissing(Wait, name: NotificationName)
        /// Posting ended (everything posted, or a signal stopped it) with `skippedLines` input
        /// lines skipped; `verdict`: what closing found of the handshakes, when it looked
        /// (`--no-wait` with nothing sent and no connection up).
        case finished(name: NotificationName, skippedLines: Int, verdict: HandshakeVerdict?)
        /// Something else stopped it (reading standard input failed, the bus failed): `reason`.
        case failed(reason: String)
    }

    /// The lines and the exit status for `ending`, given the closed bus's `stats`.
    package static func of(_ ending: Ending, stats: BusStats, options: Options) -> CommandOutcome {
        switch ending {
        case .failed(let reason):
            // Nothing counted is worth a summary: the reason is the last line.
            return CommandOutcome(lines: [.init(.error, reason)], exitCode: 1)
        case .subscribersMissing(let wait, let name):
            // The summary still ends the run (posted 0): a script reading the last line finds it.
            return CommandOutcome(
                lines: [.init(.error, waitMessage(wait, name: name, stats: stats, options: options))],
                summary: summary(stats, skippedLines: options.readsLines ? 0 : nil), exitCode: 2)
        case .finished(let name, let skipped, let verdict):
            return finished(name: name, skippedLines: skipped, verdict: verdict, stats: stats, options: options)
        }
    }

    private static func finished(
        name: NotificationName, skippedLines: Int, verdict: HandshakeVerdict?, stats: BusStats, options: Options
    ) -> CommandOutcome {
        let summary = summary(stats, skippedLines: options.readsLines ? skippedLines : nil)
        if verdict?.isRefusal == true {
            // Nothing reached anyone: what the wait would have reported (exit 2), not a "sent"
            // summary that reads like success.
            let message = refusedKeyMessage("publish", role: "publisher", curveSecret: options.curveSecret, stats: stats)
            return CommandOutcome(lines: [.init(.error, message)], summary: summary, exitCode: 2)
        }
        var lines: [CommandOutcome.Line] = []
        if stats.endOfStreamUnacknowledged > 0 {
            // The end of stream is how a subscriber learns of a lost tail: one that never got it
            // (its broker dropped or frozen at the end, or it left first) may not know what it missed.
            lines.append(.init(.warning,
                "nbus publish: \(stats.endOfStreamUnacknowledged) subscriber(s) did not confirm the end of stream within --close-timeout (\(options.closeTimeout) s): if they missed notifications (a broker lost, frozen or dropped by --stall-limit meanwhile), they may not know it; unless they simply left first"))
        }
        // Nothing at all went out because nobody wanted it (--no-wait with no subscriber yet, or no
        // broker at all): an error and exit 2, so a run that reached nobody does not read like
        // success.
        let reachedNobody = stats.posted > 0 && stats.sent == 0 && stats.unwanted == stats.posted && stats.unwantedAfterSending == 0
        if reachedNobody {
            let text =
                verdict == .nothingThere
                ? "nbus publish: nothing was sent: \(noBrokerMessage(options))"
                : "nbus publish: nothing was sent: no subscriber of \(name) had reached this publisher (--no-wait does not wait for one; without it, publish waits up to --timeout)"
            lines.append(.init(.error, text))
        }
        // Unsent notifications are the worse failure: 1 even when lines were skipped too.
        let exitCode: Int32 = stats.unsent > 0 ? 1 : skippedLines > 0 || reachedNobody ? 2 : 0
        return CommandOutcome(lines: lines, summary: summary, exitCode: exitCode)
    }

    /// Why the wait for subscribers of `name` failed.
    static func waitMessage(_ wait: Wait, name: NotificationName, stats: BusStats, options: Options) -> String {
        switch wait {
        case .refused:
            return refusedKeyMessage("publish", role: "publisher", curveSecret: options.curveSecret, stats: stats)
        case .timedOut(let arrived):
            let who = options.subscriberCount == 1 ? "no subscriber" : "\(arrived) of \(options.subscriberCount) subscribers"
            return "nbus publish: \(who) for \(name) reached this publisher within \(options.waitSeconds) s "
                + "(is the broker or subscriber running? --no-wait sends anyway)\(handshakeNote(stats, usingCurve: options.curveSecret != nil))"
        case .nothingAnswered:
            return "nbus publish: \(noBrokerMessage(options, within: options.waitSeconds))"
        case .ready, .noRefusal:
            return "nbus publish: the wait for subscribers of \(name) ended unexpectedly"
        }
    }

    /// What a publisher that reached nothing says: where it looked, and what to start.
    static func noBrokerMessage(_ options: Options, within seconds: Double? = nil) -> String {
        let time = seconds.map { " within \($0) s" } ?? ""
        return "no broker answered at \(options.connectEndpoints.joined(separator: ", "))\(time): start one with `nbus broker`, "
            + "or give --connect the endpoint where one (or a subscriber with --bind) listens"
    }

    /// What a publisher did, once closed: the line and the fields of docs/command-line.md.
    /// `skippedLines` is nil without --lines (the text then leaves it out; JSON says 0).
    package static func summary(_ stats: BusStats, skippedLines: Int?) -> CommandSummary {
        var text = "posted \(stats.posted), sent \(stats.sent), unsent \(stats.unsent)"
        if let skippedLines { text += ", skipped \(skippedLines) malformed or unsendable line(s)" }
        // Posts no subscription covered were never sent (filtered at this publisher). Those of a
        // name sent before were wanted: their subscribers were out of reach (a broker restarting)
        // or gone, and one still there counts them as lost: said as what happened to them.
        let neverWanted = stats.unwanted &- stats.unwantedAfterSending
        let afterLeaving = stats.unwantedAfterSending &- stats.unwantedWhileDisconnected
        if neverWanted > 0 { text += ", unwanted \(neverWanted) (no subscriber)" }
        if stats.unwantedWhileDisconnected > 0 {
            text += ", lost \(stats.unwantedWhileDisconnected) while the broker was unreachable (its subscribers count them as gaps)"
        }
        if afterLeaving > 0 {
            text += ", not sent \(afterLeaving) after their subscribers went (gone, or not back yet after a reconnection: one that returns counts them as gaps)"
        }
        // A binding publisher keeping its subscribers' budget: who was cut off, or sent past.
        if stats.stalledSubscribersDisconnected > 0 {
            text += "; disconnected \(stats.stalledSubscribersDisconnected) stalled subscriber(s) past their budget (they reconnect and count what they missed as gaps)"
        }
        if stats.slowSubscribersDisconnected > 0 {
            text += "; disconnected \(stats.slowSubscribersDisconnected) slow subscriber(s) past their budget for 10 s (they reconnect and count what they missed as gaps)"
        }
        if stats.sentPastSlowSubscribers > 0 {
            text += "; sent \(stats.sentPastSlowSubscribers) notification(s) past slow subscribers in \(stats.slowSubscriberEpisodes) episode(s) (they count them as gaps)"
        }
        if stats.pathsParked > 0 {
            text += "; a broker refused sends \(stats.pathsParked) time(s): \(stats.pathDrops) notification(s) went through the others only"
        }
        if stats.endOfStreamUnacknowledged > 0 {
            text += "; \(stats.endOfStreamUnacknowledged) subscriber(s) did not acknowledge the end of stream"
        }
        // A binding publisher keeps its own retained values, bounded: what it could not keep.
        if stats.ownRetainedEvictions > 0 {
            text += "; evicted \(stats.ownRetainedEvictions) retained value(s) past its bound (subscribers that ask later do not get them)"
        }
        if stats.ownRetainedExpirations > 0 { text += "; \(stats.ownRetainedExpirations) retained value(s) expired" }
        return CommandSummary(
            command: "publish", text: text,
            fields: [
                ("posted", .unsigned(stats.posted)), ("sent", .unsigned(stats.sent)), ("unsent", .unsigned(stats.unsent)),
                ("unwanted", .unsigned(stats.unwanted)), ("unwantedAfterSending", .unsigned(stats.unwantedAfterSending)),
                ("unwantedWhileDisconnected", .unsigned(stats.unwantedWhileDisconnected)),
                ("skippedLines", .integer(Int64(skippedLines ?? 0))),
                ("framesSent", .unsigned(stats.framesSent)),
                ("pathsParked", .unsigned(stats.pathsParked)), ("pathDrops", .unsigned(stats.pathDrops)),
                ("stalledSubscribersDisconnected", .unsigned(stats.stalledSubscribersDisconnected)),
                ("slowSubscribersDisconnected", .unsigned(stats.slowSubscribersDisconnected)),
                ("subscriberWaits", .unsigned(stats.subscriberWaits)),
                ("slowSubscriberEpisodes", .unsigned(stats.slowSubscriberEpisodes)),
                ("sentPastSlowSubscribers", .unsigned(stats.sentPastSlowSubscribers)),
                ("endOfStreamUnacknowledged", .unsigned(stats.endOfStreamUnacknowledged)),
                ("ownRetainedEvictions", .unsigned(stats.ownRetainedEvictions)),
                ("ownRetainedExpirations", .unsigned(stats.ownRetainedExpirations)),
                ("handshakesRefused", .unsigned(stats.handshakesRefused)), ("handshakesFailed", .unsigned(stats.handshakesFailed)),
            ])
    }
}
