import Foundation

/// The raw-libzmq baseline (`nbus-baseline`, C: libzmq alone, the bus's bytes in one frame)
/// started as child processes. `nbus bench throughput` and `nbus bench views` both measure the
/// bus against it in the same invocation, through this one type.
struct RawBaseline: Sendable {
    /// The group the children are registered in (stopped on every exit path).
    let group: ChildGroup
    /// The `nbus-baseline` executable.
    let executable: String
    /// A fresh folder for ipc endpoints.
    let folder: String
    let transport: ThroughputOptions.Transport
    /// Each child's own `--timeout`: it ends itself (SIGALRM) after this many seconds; the runner
    /// stops it 10 s later.
    let timeoutSeconds: Int

    /// What one PUB/SUB stream sends: `count` frames of `size` payload bytes named `name`.
    struct Stream: Sendable {
        var count: Int
        var size: Int
        var highWaterMark: Int32
        var name: String
        /// Frames per second (the publisher paces to monotonic deadlines and stamps each frame);
        /// nil: as fast as ZeroMQ takes them (one stamp for all).
        var rate: Int?
        /// The subscriber records send-stamp-to-receipt latency (meaningful with a rate).
        var latency: Bool
    }

    private var childTimeout: Duration { .seconds(timeoutSeconds + 10) }

    /// `ipc://<folder>/<tag>.sock`, or `tcp://127.0.0.1:*` (the binder reports its port).
    func endpoint(_ tag: String) -> String {
        switch transport {
        case .ipc: return "ipc://\(folder)/\(tag).sock"
        case .tcp: return "tcp://127.0.0.1:*"
        }
    }

    private func arguments(_ role: String, endpoint: String, count: Int, stream: Stream) -> [String] {
        [
            role, "--endpoint", endpoint, "--count", "\(count)", "--size", "\(stream.size)",
            "--hwm", "\(stream.highWaterMark)", "--name", stream.name,
            "--timeout", "\(timeoutSeconds)", "--exit-on-stdin-eof",
        ]
    }

    /// XPUB (NODROP) -> SUB: `stream.count` frames; the subscriber's result line.
    ///
    /// `through`: a proxy's (frontend, backend): the publisher connects to the first, the subscriber
    /// to the second (brokered); nil: the publisher binds, the subscriber connects to it.
    func publishSubscribe(
        tag: String, _ stream: Stream, through proxy: (frontend: String, backend: String)? = nil
    ) async throws -> RawSubscriberResult {
        var publisherArguments = arguments("pub", endpoint: proxy?.frontend ?? endpoint(tag), count: stream.count, stream: stream)
        if proxy != nil { publisherArguments.append("--connect") }
        if let rate = stream.rate { publisherArguments += ["--rate", "\(rate)"] }
        let paced = stream.rate == nil ? "" : " --rate"
        let pair = try await group.runPair(
            binder: ("raw publisher (nbus-baseline pub\(paced))", executable, publisherArguments),
            connector: ("raw subscriber (nbus-baseline sub\(stream.latency ? " --latency" : ""))", executable, {
                arguments("sub", endpoint: proxy?.backend ?? $0, count: stream.count, stream: stream)
                    + (stream.latency ? ["--latency"] : [])
            }),
            timeout: childTimeout, acceptFailedConnector: true)
        return try pair.connector.requireResult(RawSubscriberResult.self, event: "result")
    }

    /// REQ/REP: `count` measured round trips of one `stream.size` frame after `warmup`.
    func roundTrip(tag: String, count: Int, warmup: Int, _ stream: Stream) async throws -> RawRoundTripResult {
        let pair = try await group.runPair(
            binder: ("raw REP (nbus-baseline rep)", executable,
                     arguments("rep", endpoint: endpoint(tag), count: count, stream: stream) + ["--warmup", "\(warmup)"]),
            connector: ("raw REQ (nbus-baseline req)", executable, {
                arguments("req", endpoint: $0, count: count, stream: stream) + ["--warmup", "\(warmup)"]
            }),
            timeout: childTimeout)
        return try pair.connector.requireResult(RawRoundTripResult.self, event: "rtt")
    }
}
