import NotificationBus

/// How `nbus subscribe` ends: from what ended it (`Ending`), what it printed, the counters and its
/// options, the lines it writes and its exit status, by the rules its help text and
/// docs/command-line.md state:
///
/// - 0: done (`--count` reached, the streams ended, or stopped by a signal);
/// - 1: `--count` not reached before `--timeout`;
/// - 2: a key the server refused, or no broker answered (nothing came up at any `--connect`
///   endpoint within `--connect-timeout`, or `--timeout` if sooner). (An unusable endpoint or key file is 2 as well, and bad
///   arguments 64, before any of this: the command never starts.)
package enum SubscribeOutcome {
    /// What the subscriber was asked, as far as its ending and summary depend on it; set the
    /// fields that apply.
    package struct Options: Sendable {
        /// `--count` and `--timeout` (seconds).
        package var count: Int?
        package var timeout: Double?
        /// `--stats`: the per-pattern and bus details too.
        package var showsStats = false
        /// `--max-memory` in MiB, for the summary's memory resets.
        package var maxMemory = 0
        /// `--curve-secret`, if any.
        package var curveSecret: String?
        /// `--decode`: payloads that do not decode are counted (`undecodable`), not printed.
        package var decodes = false
        /// The endpoints it connects to (the default one when none is given), for "no broker
        /// answered at ...", and how long it waited for one of them (seconds).
        package var connectEndpoints: [String] = []
        package var connectWait = 0.0

        package init() {}
    }

    /// What ended the subscriber first.
    package enum Ending: Sendable, Equatable {
        /// The printing ended: `--count` reached, or every stream ended.
        case printingEnded
        /// `--timeout` passed.
        case timedOut
        /// SIGINT or SIGTERM.
        case signalled
        /// A CURVE server refused this subscriber's key (or met it with another mechanism).
        case refused
        /// Nothing answered at any `--connect` endpoint in time: no connection came up and no
        /// handshake was even tried (no broker running there).
        case nothingAnswered
    }

    /// What the subscriber did: notifications printed, each pattern's counters (command-line
    /// order) and the closed bus's.
    package struct Counts: Sendable {
        package var printed: Int
        package var perPattern: [(String, SubscriptionStats)]
        package var bus: BusStats

        package init(printed: Int, perPattern: [(String, SubscriptionStats)], bus: BusStats) {
            self.printed = printed
            self.perPattern = perPattern
            self.bus = bus
        }
    }

    /// The lines and the exit status for `ending`.
    package static func of(_ ending: Ending, counts: Counts, options: Options) -> CommandOutcome {
        var outcome = CommandOutcome()
        if ending == .refused {
            outcome.lines.append(.init(.error,
                refusedKeyMessage("subscribe", role: "subscriber", curveSecret: options.curveSecret, stats: counts.bus)))
            outcome.exitCode = 2
        } else if ending == .nothingAnswered {
            outcome.lines.append(.init(.error,
                "nbus subscribe: no broker answered at \(options.connectEndpoints.joined(separator: ", ")) within \(options.connectWait) s: "
                    + "start one with `nbus broker`, or give --connect the endpoint where one (or a publisher with --bind) listens "
                    + "(--connect-timeout 0 waits for ever)"))
            outcome.exitCode = 2
        } else if ending == .timedOut, let target = options.count, counts.printed < target {
            outcome.lines.append(.init(.error, "printed \(counts.printed) of \(target) before the \(options.timeout ?? 0) s timeout"))
            outcome.exitCode = 1
        }
        // Stopped before the streams ended: a stream still tracked may have lost its tail uncounted.
        outcome.summary = summary(counts, options: options, tailUnknown: ending == .signalled || ending == .timedOut)
        outcome.detailLines = statsLines(counts, options: options)
        return outcome
    }

    /// A rejected batch frame is one rejection: say how many notifications such frames held.
    static func batchNote(_ bus: BusStats) -> String {
        bus.rejectedBatchNotifications == 0 ? "" : " (\(bus.rejectedBatchNotifications) notifications in rejected batches)"
    }

    /// What a subscriber did, once closed: the line and the fields of docs/command-line.md. With
    /// --stats the JSON object holds the details too; the text has them in lines of their own
    /// (`statsLines`), written before it.
    /// `tailUnknown`: the subscriber stopped (a signal, --timeout) before --count, so a stream it
    /// still tracks (no end of stream came) may have lost its tail uncounted.
    package static func summary(_ counts: Counts, options: Options, tailUnknown: Bool = false) -> CommandSummary {
        let (printed, perPattern, bus) = (counts.printed, counts.perPattern, counts.bus)
        // Upstream loss from the bus: counted once per lost message, however many patterns match
        // its name (each of their subscriptions sees the gap). Local drops are per buffer.
        let lost = bus.lostUpstream
        let dropped = perPattern.reduce(UInt64(0)) { $0 + $1.1.droppedLocalBuffer }
        var text = "printed \(printed); lost upstream \(lost), dropped locally \(dropped), "
            + "rejected malformed \(bus.rejectedTotal)\(batchNote(bus))\(handshakeNote(bus, usingCurve: options.curveSecret != nil))"
            + (bus.duplicatesDiscarded > 0 ? ", duplicates discarded \(bus.duplicatesDiscarded)" : "")
        // A bound subscriber's memory guard dropped every connection: what was in flight then is
        // lost (counted as gaps where a later notification shows them).
        if bus.memoryLimitResets > 0 {
            text += ", memory resets \(bus.memoryLimitResets) (over --max-memory \(options.maxMemory) MiB: every connection dropped)"
        }
        // NBP-1 §8, §15.2: a gap shows only at a stream's next notification or its end-of-stream
        // record. A stream without either (a publisher still running, or one that finished while
        // its broker was frozen or unreachable, or was killed) may have lost its tail uncounted.
        let tailUnknownStreams = tailUnknown ? bus.trackedStreams : 0
        if tailUnknownStreams > 0 {
            text += "; tail unknown for \(tailUnknownStreams) stream(s): no end of stream came from their publisher "
                + "(still running, or it closed while its broker was frozen or unreachable): what it sent after the last "
                + "notification printed is not counted here"
        }
        // NBP-1 §8: a stream first seen past sequence 1 is no loss (a late join looks the same), so
        // its head is in no gap; said here, so a head that never arrived is not silent.
        if bus.streamsJoinedLate > 0 {
            text += "; joined \(bus.streamsJoinedLate) stream(s) after their start: the \(bus.notificationsBeforeJoining) "
                + "notification(s) before the first printed of each are not counted here (sent before this subscriber "
                + "joined, or lost before it heard of the stream, e.g. while its broker restarted)"
        }
        // NBP-1 §12.1's SHOULD counters, said when not 0 (a peer sent what this version does not
        // act on: never delivered, not silent either).
        if bus.unknownControlMessages > 0 {
            text += "; unknown control messages \(bus.unknownControlMessages) (names under _nbus this version does not know: not printed)"
        }
        // Issue 42, item 5: what --decode refused, said whenever it checks (0 included).
        let undecodable = perPattern.reduce(UInt64(0)) { $0 + $1.1.undecodable }
        if options.decodes {
            text += "; undecodable \(undecodable) (payloads that did not decode: counted per pattern, not printed)"
        }
        // Issue 39 item 3: a broker that restarted was asked again for the retained values.
        if bus.retainedRenewals > 0 {
            text += "; retained values asked again \(bus.retainedRenewals) time(s) after reconnecting (a broker restarted): "
                + "\(bus.retainedRepeats) already seen, not printed twice"
        }
        if bus.malformedEndOfStreamRecords > 0 {
            text += "; malformed end-of-stream records \(bus.malformedEndOfStreamRecords) (a tail they would have reported may be uncounted)"
        }
        var fields: [(String, CommandSummary.Value)] = [
            ("printed", .integer(Int64(printed))), ("lostUpstream", .unsigned(lost)), ("droppedLocally", .unsigned(dropped)),
            ("rejectedMalformed", .unsigned(bus.rejectedTotal)),
            ("rejectedBatchNotifications", .unsigned(bus.rejectedBatchNotifications)),
            ("handshakesRefused", .unsigned(bus.handshakesRefused)), ("handshakesFailed", .unsigned(bus.handshakesFailed)),
            ("duplicatesDiscarded", .unsigned(bus.duplicatesDiscarded)), ("memoryResets", .unsigned(bus.memoryLimitResets)),
            ("tailUnknownStreams", .integer(Int64(tailUnknownStreams))),
            // The names of `BusStats` and NBP-1 §12.1, one set everywhere (here, the text, /metrics).
            ("streamsJoinedLate", .unsigned(bus.streamsJoinedLate)),
            ("notificationsBeforeJoining", .unsigned(bus.notificationsBeforeJoining)),
            ("unknownControlMessages", .unsigned(bus.unknownControlMessages)),
            ("malformedEndOfStreamRecords", .unsigned(bus.malformedEndOfStreamRecords)),
            ("undecodable", .unsigned(undecodable)),
        ]
        if bus.retainedRenewals > 0 {
            fields.append(("retainedRenewals", .unsigned(bus.retainedRenewals)))
            fields.append(("retainedRepeats", .unsigned(bus.retainedRepeats)))
        }
        if options.showsStats {
            fields.append(("patterns", .array(perPattern.map { pattern, stats in
                .object([
                    ("pattern", .string(pattern)), ("received", .unsigned(stats.received)),
                    ("delivered", .unsigned(stats.delivered)), ("filteredOut", .unsigned(stats.filteredOut)),
                    ("lostUpstream", .unsigned(stats.lostUpstream)), ("droppedLocalBuffer", .unsigned(stats.droppedLocalBuffer)),
                    ("discardedAtEnd", .unsigned(stats.discardedAtEnd)), ("buffered", .unsigned(stats.buffered)),
                    ("undecodable", .unsigned(stats.undecodable)),
                ])
            })))
            fields.append(("bus", .object([
                ("framesReceived", .unsigned(bus.framesReceived)), ("notificationsReceived", .unsigned(bus.notificationsReceived)),
                ("unmatched", .unsigned(bus.unmatched)), ("trackedStreams", .integer(Int64(bus.trackedStreams))),
                ("streamsForgotten", .unsigned(bus.streamsForgotten)),
            ])))
            fields.append(("rejected", .object(bus.rejected.sorted { $0.key < $1.key }.map { ("\($0.key)", .unsigned($0.value)) })))
        }
        return CommandSummary(command: "subscribe", text: text, fields: fields)
    }

    /// With --stats and a text summary: the details, one plain line each (the summary line's
    /// own numbers not repeated), written before it.
    package static func statsLines(_ counts: Counts, options: Options) -> [String] {
        guard options.showsStats else { return [] }
        let bus = counts.bus
        var lines = counts.perPattern.map { pattern, stats in "nbus subscribe: \(pattern): \(stats)" }
        lines.append(
            "nbus subscribe: bus: framesReceived=\(bus.framesReceived) notificationsReceived=\(bus.notificationsReceived) unmatched=\(bus.unmatched) trackedStreams=\(bus.trackedStreams) streamsForgotten=\(bus.streamsForgotten)")
        for (reason, count) in bus.rejected.sorted(by: { $0.key < $1.key }) {
            lines.append("nbus subscribe: rejected \(reason): \(count)")
        }
        return lines
    }
}
