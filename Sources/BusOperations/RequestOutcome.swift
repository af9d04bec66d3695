import NotificationBus

/// How `nbus request` ends: from the request's result and what became of its handshakes, what it
/// writes and its exit status, by the rules its help text states:
///
/// - 0: a reply (its payload on standard output, with a newline after it if it has none);
/// - 1: no reply within `--timeout`;
/// - 2: no responders (nothing subscribes to NAME at the broker), no broker reached within
///   `--timeout`, a key the broker refused, or another failure of the bus (an unusable endpoint
///   before any of this, too);
/// - 3: the responder replied with status error (its reason on standard error).
/// (Bad arguments are 64: the command never starts.)
package enum RequestOutcome {
    /// What the requester was asked besides NAME, as far as its ending depends on it; set the
    /// fields that apply.
    package struct Options: Sendable {
        /// `--frontend` and `--backend` (or the defaults), for the messages.
        package var frontend = ""
        package var backend = ""
        /// `--timeout`, seconds.
        package var timeout = 0.0
        /// `--curve-secret`, if any.
        package var curveSecret: String?

        package init() {}
    }

    /// The lines and the exit status for `result` (of a request to `name`), given `verdict` (`.connected`: both sides
    /// reached the broker, so "no responders" means nobody answers, not an unreachable broker)
    /// and the closed bus's `stats`.
    package static func of(
        _ result: Result<BusNotification, BusError>, name: NotificationName, verdict: HandshakeVerdict, stats: BusStats,
        options: Options
    ) -> CommandOutcome {
        if verdict.isRefusal {
            return failure(2, refusedKeyMessage(
                "request", role: "requester", curveSecret: options.curveSecret, stats: stats,
                allowFolders: "--allow-publishers and --allow-subscribers folders (a requester posts and subscribes)"))
        }
        let reached = verdict == .connected
        switch result {
        case .success(let reply):
            if reply.headers[RequestReply.statusHeader] == RequestReply.error {
                return failure(3, "the responder failed: \(String(decoding: reply.payload, as: UTF8.self))")
            }
            var outcome = CommandOutcome()
            outcome.standardOutput = reply.payload
            if reply.payload.last != UInt8(ascii: "\n") { outcome.standardOutput.append(UInt8(ascii: "\n")) }
            return outcome
        case .failure(let error) where error.code == .noResponders:
            return failure(2, reached
                ? "no responders: nothing subscribes to \(name) at \(options.frontend)"
                : "no responders to \(name): no broker reached at \(options.frontend) and \(options.backend) (is nbus broker running there?)")
        case .failure(let error) where error.code == .timedOut && !reached:
            return failure(2,
                "no broker reached at \(options.frontend) and \(options.backend) within \(options.timeout) s "
                    + "(is nbus broker running there?): no reply to \(name)")
        case .failure(let error) where error.code == .timedOut:
            return failure(1, "no reply to \(name) within \(options.timeout) s")
        case .failure(let error):
            return failure(2, "\(error)")
        }
    }

    private static func failure(_ exitCode: Int32, _ text: String) -> CommandOutcome {
        CommandOutcome(lines: [.init(.error, text)], exitCode: exitCode)
    }
}
