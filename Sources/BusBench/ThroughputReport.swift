import Foundation

/// Everything one `nbus bench throughput` invocation measured, with the targets of issue 3.
package struct ThroughputReport: Codable, Sendable {
    /// Bus/raw throughput target: at least this (0.7 in issue 3; issue 41 raised it to 0.9).
    package static let throughputRatioTarget = 0.9
    /// Bus p50 latency over raw libzmq PUB/SUB's one way at the same pace, defaults: at most this.
    package static let latencyRatioTarget = 1.3
    /// Bus p99 latency over raw libzmq PUB/SUB's one-way p99 at the same pace: at most this.
    package static let latencyTailRatioTarget = 2.0
    /// Embedded bus over Foundation `NotificationCenter`, in one process: at least this.
    package static let inProcessRatioTarget = 1.0

    package var count: Int
    package var size: Int
    package var highWaterMark: Int32
    package var transport: ThroughputOptions.Transport
    /// Direct, or through a broker.
    package var topology: ThroughputOptions.Topology
    /// The bus publisher's largest batch frame, bytes (`BusConfiguration.batching`; 0: off).
    package var batchBytes: Int
    package var runs: Int
    package var latencyRate: Int
    package var date: String
    package var host: String
    package var processors: Int

    /// Raw libzmq runs, in order.
    package var raw: [RawThroughputRun] = []
    /// Bus runs, in order (alternating with the raw ones).
    package var bus: [BusThroughputRun] = []
    /// Raw REQ/REP round trip.
    package var rawRoundTrip: RawRoundTrip?
    /// The bus at a moderate fixed rate, defaults (the worker, an nbus command, consumes on
    /// `bus.executor`; posts made while the loop sleeps are sent by the posting thread): the
    /// headline latency.
    package var pacedLatency: BusThroughputRun?
    /// The same paced run with the consumer in a plain task, as application code that asks for
    /// no executor: one hand-off more (information).
    package var pacedLatencyPlainTask: BusThroughputRun?
    /// The same paced run in the low-latency setting: the idle spin on (`latencySpinMicroseconds`)
    /// on both buses.
    package var pacedLatencyIdleSpin: BusThroughputRun?
    /// The idle spin of that run, microseconds.
    package var latencySpinMicroseconds: Int
    /// Raw libzmq PUB/SUB at the same rate, one way: the latency targets' baseline.
    package var rawPacedLatency: RawPacedLatency?
    /// Foundation `NotificationCenter`, block observer, in this process.
    package var foundation: [InProcessSample] = []
    /// Foundation bridged into an `AsyncStream` (information only).
    package var foundationAsyncStream: InProcessSample?
    /// The embedded bus, `for await` consumer, in this process.
    package var embedded: [InProcessSample] = []
    /// The embedded runs' subscription counters.
    package var embeddedCounters: [SubscriptionCounters] = []
    /// Every accounting failure (lost, malformed or missing messages); empty when all is well.
    package var accountingErrors: [String] = []

    init(options: ThroughputOptions) {
        count = options.count
        size = options.size
        highWaterMark = options.highWaterMark
        transport = options.transport
        topology = options.topology
        batchBytes = options.batchBytes
        runs = options.runs
        latencyRate = options.latencyRate
        latencySpinMicroseconds = options.latencySpinMicroseconds
        date = ISO8601DateFormatter().string(from: Date())
        host = ProcessInfo.processInfo.hostName
        processors = ProcessInfo.processInfo.activeProcessorCount
    }

    /// Batching on or off, and with it on, how many notifications a frame carried on average
    /// in the throughput runs (from the publishers' `sent` and `framesSent`).
    package var batchingSummary: String {
        guard batchBytes > 0 else { return "off (one frame per notification)" }
        let publishers = bus.compactMap(\.publisher)
        let sent = publishers.reduce(UInt64(0)) { $0 + $1.bus.sent }
        let frames = publishers.reduce(UInt64(0)) { $0 + $1.bus.framesSent }
        let on = "on (frames up to \(batchBytes) B"
        guard frames > 0 else { return on + ")" }
        return on + ", \(String(format: "%.1f", Double(sent) / Double(frames))) notifications per frame on average)"
    }

    // MARK: Derived figures

    /// Median raw rate, messages per second.
    package var rawRate: Double { median(raw.map(\.rate)) }
    /// Median bus rate, notifications per second.
    package var busRate: Double { median(bus.map(\.subscriber.rate)) }
    /// Median bus rate over median raw rate.
    package var throughputRatio: Double { rawRate > 0 ? busRate / rawRate : 0 }
    /// `run`'s p50 (or p99) over raw PUB/SUB's one way at the same pace.
    private func ratioToRawOneWay(_ run: BusThroughputRun?, tail: Bool = false) -> Double? {
        guard let run, let raw = rawPacedLatency else { return nil }
        let base = Double(tail ? raw.latency.p99 : raw.latency.p50)
        guard base > 0 else { return nil }
        return Double(tail ? run.subscriber.latency.p99 : run.subscriber.latency.p50) / base
    }
    /// The paced run's p50 over raw PUB/SUB's one-way p50 (target `latencyRatioTarget`).
    package var latencyRatio: Double? { ratioToRawOneWay(pacedLatency) }
    /// The paced run's p99 over raw PUB/SUB's one-way p99 (target `latencyTailRatioTarget`).
    package var latencyTailRatio: Double? { ratioToRawOneWay(pacedLatency, tail: true) }
    /// The plain-task paced run's p50 over raw PUB/SUB's one-way p50 (information).
    package var latencyRatioPlainTask: Double? { ratioToRawOneWay(pacedLatencyPlainTask) }
    /// The idle-spin paced run's p50 over raw PUB/SUB's one-way p50 (information).
    package var latencyRatioIdleSpin: Double? { ratioToRawOneWay(pacedLatencyIdleSpin) }
    /// Median Foundation rate.
    package var foundationRate: Double { median(foundation.map(\.rate)) }
    /// Median embedded-bus rate.
    package var embeddedRate: Double { median(embedded.map(\.rate)) }
    /// Embedded bus over Foundation.
    package var inProcessRatio: Double? { foundationRate > 0 && !embedded.isEmpty ? embeddedRate / foundationRate : nil }

    /// Whether each target is met (nil: not measured).
    package var targets: [String: Bool] {
        // The bus/raw target is for the direct topology; through a broker the bar is NATS.
        var targets = topology == .direct ? ["throughputRatio": throughputRatio >= Self.throughputRatioTarget] : [:]
        if let latencyRatio { targets["latencyRatio"] = latencyRatio <= Self.latencyRatioTarget }
        if let latencyTailRatio { targets["latencyTailRatio"] = latencyTailRatio <= Self.latencyTailRatioTarget }
        if let inProcessRatio { targets["inProcessRatio"] = inProcessRatio >= Self.inProcessRatioTarget }
        return targets
    }

    /// The frame size on the wire.
    package var frameBytes: Int { raw.first?.frameBytes ?? (ThroughputOptions.notificationName.utf8.count + 1 + 32 + size) }

    // MARK: Accounting

    mutating func checkAccounting() {
        var errors: [String] = []
        for (index, run) in raw.enumerated() where run.count != count || run.gaps != 0 || run.badSize != 0 {
            errors.append("raw run \(index + 1): received \(run.count) of \(count), gaps \(run.gaps), bad size \(run.badSize)")
        }
        if let paced = rawPacedLatency, paced.gaps != 0 || UInt64(paced.count) != paced.latency.count {
            errors.append("raw latency run: received \(paced.count), gaps \(paced.gaps)")
        }
        var busRuns = bus.enumerated().map { ("bus run \($0.offset + 1)", $0.element) }
        if let pacedLatency { busRuns.append(("bus latency run", pacedLatency)) }
        if let pacedLatencyIdleSpin { busRuns.append(("bus latency run, idle spin", pacedLatencyIdleSpin)) }
        if let pacedLatencyPlainTask { busRuns.append(("bus latency run, plain task", pacedLatencyPlainTask)) }
        for (label, run) in busRuns {
            let s = run.subscriber
            if !s.complete || s.subscription.received != UInt64(s.expected) {
                errors.append(
                    "\(label): consumed \(s.count) of \(s.expected) (ended by \(s.endedBy)); received "
                        + "\(s.subscription.received), lostUpstream \(s.subscription.lostUpstream), droppedLocalBuffer "
                        + "\(s.subscription.droppedLocalBuffer), rejected \(s.bus.rejected)")
            }
            if let publisher = run.publisher, publisher.bus.unsent != 0 || publisher.bus.sent < UInt64(publisher.count) {
                errors.append("\(label): publisher sent \(publisher.bus.sent) of \(publisher.count), unsent \(publisher.bus.unsent)")
            }
        }
        for (index, sample) in embedded.enumerated() where sample.delivered != sample.posted {
            errors.append("embedded bus run \(index + 1): delivered \(sample.delivered) of \(sample.posted)")
        }
        for (index, counters) in embeddedCounters.enumerated()
        where counters.lostUpstream != 0 || counters.droppedLocalBuffer != 0 {
            errors.append(
                "embedded bus run \(index + 1): lostUpstream \(counters.lostUpstream), droppedLocalBuffer \(counters.droppedLocalBuffer)")
        }
        for (index, sample) in foundation.enumerated() where sample.delivered != sample.posted {
            errors.append("Foundation run \(index + 1): delivered \(sample.delivered) of \(sample.posted)")
        }
        accountingErrors = errors
    }

    // MARK: Rendering

    /// The report as one JSON object (sorted keys), with the derived figures under `summary`.
    package func json() throws -> String {
        struct Envelope: Encodable {
            let report: ThroughputReport
            let summary: Summary
        }
        struct Summary: Encodable {
            let rawRate: Double
            let busRate: Double
            let throughputRatio: Double
            let busLatencyP50: UInt64?
            let busLatencyP99: UInt64?
            let rawHalfRoundTripP50: Double?
            let rawHalfRoundTripP99: Double?
            let rawPacedOneWayP50: UInt64?
            let rawPacedOneWayP99: UInt64?
            let latencyRatio: Double?
            let latencyTailRatio: Double?
            let busLatencyPlainTaskP50: UInt64?
            let latencyRatioPlainTask: Double?
            let busLatencyIdleSpinP50: UInt64?
            let latencyRatioIdleSpin: Double?
            let foundationRate: Double
            let embeddedRate: Double
            let inProcessRatio: Double?
            let targets: [String: Bool]
            let accountingOK: Bool
        }
        let summary = Summary(
            rawRate: rawRate, busRate: busRate, throughputRatio: throughputRatio,
            busLatencyP50: pacedLatency?.subscriber.latency.p50, busLatencyP99: pacedLatency?.subscriber.latency.p99,
            rawHalfRoundTripP50: rawRoundTrip?.halfP50, rawHalfRoundTripP99: rawRoundTrip?.halfP99,
            rawPacedOneWayP50: rawPacedLatency?.latency.p50, rawPacedOneWayP99: rawPacedLatency?.latency.p99,
            latencyRatio: latencyRatio, latencyTailRatio: latencyTailRatio,
            busLatencyPlainTaskP50: pacedLatencyPlainTask?.subscriber.latency.p50, latencyRatioPlainTask: latencyRatioPlainTask, busLatencyIdleSpinP50: pacedLatencyIdleSpin?.subscriber.latency.p50,
            latencyRatioIdleSpin: latencyRatioIdleSpin, foundationRate: foundationRate, embeddedRate: embeddedRate,
            inProcessRatio: inProcessRatio, targets: targets, accountingOK: accountingErrors.isEmpty)
        return try ReportJSON.encode(Envelope(report: self, summary: summary))
    }

    /// The report as a terminal table.
    package func table() -> String {
        var lines: [String] = []
        func row(_ label: String, _ value: String, _ note: String = "") {
            lines.append(Format.row(label, value, note, labelWidth: 52))
        }
        let debug = RunContext.isDebugBuild
        func verdict(_ met: Bool?) -> String {
            met.map { $0 ? "met" : debug ? "NOT MET (debug build: see the warning)" : "NOT MET" } ?? "n/a"
        }

        let brokered = topology == .brokered
        lines.append(
            "nbus bench throughput: \(Format.count(count)) x \(size) B payload (\(frameBytes) B frame), "
                + "\(transport.rawValue), \(brokered ? "through a broker" : "direct"), HWM \(highWaterMark), "
                + "XPUB_NODROP; median of \(runs) run(s)")
        lines.append("bus publisher batching: \(batchingSummary)")
        if debug {
            lines.append("")
            lines.append("WARNING: " + RunContext.debugWarning)
        }
        lines.append("")
        row("Across processes (publisher -> \(brokered ? "broker -> " : "")subscriber)", "msgs/s", "runs")
        row(brokered ? "  raw libzmq through zmq_proxy (C; proxy HWM 1,000,000)" : "  raw libzmq, 2 processes (C, XPUB/SUB, 1 frame)",
            Format.rate(rawRate), raw.map { Format.rate($0.rate) }.joined(separator: " "))
        row(brokered ? "  bus through nbus broker (defaults)" : "  bus, 2 processes (post -> for await)", Format.rate(busRate),
            bus.map { Format.rate($0.subscriber.rate) }.joined(separator: " "))
        row("  ratio bus/raw", String(format: "%.2f", throughputRatio),
            brokered
                ? "no target here: the broker targets are against NATS (../shared/peers)"
                : "target >= \(Self.throughputRatioTarget): \(verdict(targets["throughputRatio"]))")
        lines.append("")
        if let paced = pacedLatency, let raw = rawPacedLatency {
            let l = paced.subscriber.latency
            let achieved = paced.subscriber.rate
            row("Latency (publish -> delivery, one way)", "p50", "p99")
            row("  raw libzmq PUB/SUB, \(Format.count(latencyRate))/s paced (the baseline)",
                Format.nanoseconds(Double(raw.latency.p50)), Format.nanoseconds(Double(raw.latency.p99)))
            row("  bus, same pace, defaults (\(Format.count(paced.subscriber.count)) msgs, got \(Format.rate(achieved))/s)",
                Format.nanoseconds(Double(l.p50)), Format.nanoseconds(Double(l.p99)))
            if let latencyRatio {
                row("  ratio bus p50 / raw p50", String(format: "%.2fx", latencyRatio),
                    "target <= \(Self.latencyRatioTarget)x: \(verdict(targets["latencyRatio"]))")
            }
            if let latencyTailRatio {
                row("  ratio bus p99 / raw p99", String(format: "%.2fx", latencyTailRatio),
                    "target <= \(Self.latencyTailRatioTarget)x: \(verdict(targets["latencyTailRatio"]))")
            }
            // The same paced run in another setting, for information: its percentiles and ratio.
            func settingRows(_ run: BusThroughputRun?, _ ratio: Double?, label: String) {
                guard let run, let ratio else { return }
                row("  bus paced, \(label)",
                    Format.nanoseconds(Double(run.subscriber.latency.p50)), Format.nanoseconds(Double(run.subscriber.latency.p99)))
                row("    its p50 / raw p50 (info)", String(format: "%.2fx", ratio))
            }
            settingRows(pacedLatencyPlainTask, latencyRatioPlainTask, label: "consumer in a plain task (app code)")
            settingRows(
                pacedLatencyIdleSpin, latencyRatioIdleSpin, label: "low-latency (\(latencySpinMicroseconds) us idle spin)")
            if let rtt = rawRoundTrip {
                row("  raw libzmq half REQ/REP round trip (info)", Format.nanoseconds(rtt.halfP50), Format.nanoseconds(rtt.halfP99))
            }
            if let loaded = bus.sorted(by: { $0.subscriber.rate < $1.subscriber.rate }).dropFirst(bus.count / 2).first {
                row("  bus under full load (median run; queueing)",
                    Format.nanoseconds(Double(loaded.subscriber.latency.p50)),
                    Format.nanoseconds(Double(loaded.subscriber.latency.p99)))
            }
            lines.append("")
        }
        if !foundation.isEmpty {
            row("In one process (\(Format.count(count)) posts, \(size) B payload)", "msgs/s", "runs")
            row("  Foundation NotificationCenter -> block observer", Format.rate(foundationRate),
                foundation.map { Format.rate($0.rate) }.joined(separator: " "))
            if let bridged = foundationAsyncStream {
                row("  Foundation -> AsyncStream -> for await (info)", Format.rate(bridged.rate))
            }
            row("  bus embedded (inproc) -> for await", Format.rate(embeddedRate),
                embedded.map { Format.rate($0.rate) }.joined(separator: " "))
            if let inProcessRatio {
                row("  ratio bus/Foundation", String(format: "%.2f", inProcessRatio),
                    "target >= \(Self.inProcessRatioTarget): \(verdict(targets["inProcessRatio"]))")
            }
            lines.append("")
        }
        if accountingErrors.isEmpty {
            let received = bus.map { "\($0.subscriber.subscription.received)" }.joined(separator: ", ")
            lines.append(
                "Accounting OK: every run delivered \(Format.count(count)) of \(Format.count(count)) "
                    + "(bus received per run: \(received); lostUpstream 0, droppedLocalBuffer 0, rejected 0)")
        } else {
            lines.append("ACCOUNTING FAILED:")
            for error in accountingErrors { lines.append("  " + error) }
        }
        return lines.joined(separator: "\n")
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
