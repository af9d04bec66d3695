import Foundation
import Logging

/// Sends ended spans to an OTLP/HTTP receiver (`POST <endpoint>/v1/traces`, protobuf) in batches,
/// from a thread of its own.
///
/// A span that ends is queued: a bounded queue (`queueCapacity`); when it is full the span is
/// dropped and counted, so ending a span (a post, a delivery) never waits for the network. The
/// thread sends a batch every `interval`, or as soon as `batchSize` spans are queued, and what is
/// left at `shutdown`, within its timeout. A receiver that cannot be reached or answers other than
/// 2xx costs the spans of that batch (counted; logged once), never the bus.
///
/// `@unchecked Sendable`: `state` is read and written only with `condition` locked (an
/// `NSCondition` rather than a `Mutex`, because the thread and `shutdown` wait on it); the other
/// stored properties are immutable.
public final class OTLPExporter: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var endpoint: OTLPEndpoint
        /// The resource's `service.name`.
        public var serviceName: String
        /// Further resource attributes.
        public var resourceAttributes: [OTLPAttribute] = []
        /// The instrumentation scope's name and version.
        public var scopeName = "nbus"
        public var scopeVersion = ""
        public var queueCapacity = 2_048
        public var batchSize = 512
        /// The longest a span waits in the queue before its batch is sent.
        public var interval: Duration = .seconds(1)
        /// Connecting, sending and reading the answer, per batch.
        public var requestTimeout: Duration = .seconds(5)
        /// Where a failed export is logged (once).
        public var logger = Logger(label: "nbus.otlp")

        public init(endpoint: OTLPEndpoint, serviceName: String) {
            self.endpoint = endpoint
            self.serviceName = serviceName
        }
    }

    /// What the exporter did.
    public struct Counts: Sendable, Equatable {
        /// Spans a receiver took (2xx).
        public var exported = 0
        /// Spans dropped because the queue was full.
        public var dropped = 0
        /// Spans lost in exports that failed (no connection, no answer, not 2xx).
        public var failed = 0
        /// Exports that failed.
        public var failedExports = 0
        /// Spans still queued, or in the export under way, when `shutdown` gave up.
        public var unsent = 0
    }

    private struct State {
        var queue: [OTLPSpanData] = []
        /// Spans taken off the queue for the export under way: neither exported nor failed yet.
        var inFlight = 0
        var counts = Counts()
        var flushRequested = false
        var shuttingDown = false
        var finished = false
        var loggedFailure = false
        /// During shutdown: when the thread must stop trying (monotonic milliseconds).
        var stopBy: Int?
    }

    public let configuration: Configuration
    private let client: OTLPHTTPClient
    private let condition = NSCondition()
    private var state = State()

    /// Starts the exporting thread.
    public init(_ configuration: Configuration) {
        self.configuration = configuration
        client = OTLPHTTPClient(endpoint: configuration.endpoint, userAgent: "nbus-otlp/\(configuration.scopeVersion)")
        let thread = Thread { [self] in run() }
        thread.name = "nbus-otlp"
        thread.start()
    }

    /// Queues an ended span; drops and counts it when the queue is full.
    func enqueue(_ span: OTLPSpanData) {
        condition.lock()
        defer { condition.unlock() }
        guard !state.finished, state.queue.count < configuration.queueCapacity else {
            state.counts.dropped += 1
            return
        }
        state.queue.append(span)
        if state.queue.count >= configuration.batchSize { condition.signal() }
    }

    /// Asks the thread to send what is queued now.
    public func flushSoon() {
        condition.lock()
        state.flushRequested = true
        condition.signal()
        condition.unlock()
    }

    public var counts: Counts {
        condition.lock()
        defer { condition.unlock() }
        return state.counts
    }

    /// Sends what is queued and stops the thread, waiting at most `timeout`; the counts then. A
    /// blocking call, for the end of a program.
    @discardableResult
    public func shutdown(timeout: Duration) -> Counts {
        let milliseconds = Self.milliseconds(timeout)
        condition.lock()
        defer { condition.unlock() }
        if state.stopBy == nil { state.stopBy = OTLPHTTPClient.now() + milliseconds }
        state.shuttingDown = true
        condition.broadcast()
        let limit = Date(timeIntervalSinceNow: Double(milliseconds) / 1_000)
        while !state.finished {
            if !condition.wait(until: limit) { break }
        }
        var counts = state.counts
        // Given up waiting: what is queued and the batch being sent are both lost (the exporting
        // thread, still in its request, counts nothing more that the caller would see).
        if !state.finished { counts.unsent = state.queue.count + state.inFlight }
        return counts
    }

    private func run() {
        let interval = Self.milliseconds(configuration.interval)
        var due = OTLPHTTPClient.now() + interval
        // After a failed export, the next waits for the interval even when a batch is full: a
        // receiver that is down must not cost an encoding and a connection per batch at full rate.
        var holdingOff = false
        while true {
            condition.lock()
            while state.queue.count < configuration.batchSize || holdingOff, !state.shuttingDown, !state.flushRequested {
                let left = due - OTLPHTTPClient.now()
                if left <= 0 { break }
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(left) / 1_000))
            }
            state.flushRequested = false
            let batch = Array(state.queue.prefix(configuration.batchSize))
            state.queue.removeFirst(batch.count)
            state.inFlight = batch.count
            let stopping = state.shuttingDown
            let stopBy = state.stopBy
            let more = !state.queue.isEmpty
            condition.unlock()

            if !batch.isEmpty {
                var timeout = Self.milliseconds(configuration.requestTimeout)
                if let stopBy { timeout = min(timeout, stopBy - OTLPHTTPClient.now()) }
                if timeout > 0 {
                    holdingOff = !export(batch, timeoutMilliseconds: timeout)
                } else {
                    noteFailure(batch.count, "shutdown timeout reached")
                }
            }
            if !more || holdingOff { due = OTLPHTTPClient.now() + interval }
            if stopping {
                condition.lock()
                let done = state.queue.isEmpty || (state.stopBy.map { OTLPHTTPClient.now() >= $0 } ?? false)
                if done {
                    state.counts.unsent = state.queue.count
                    state.finished = true
                    condition.broadcast()
                }
                condition.unlock()
                if done { return }
            }
        }
    }

    /// Sends `batch`; whether the receiver took it.
    private func export(_ batch: [OTLPSpanData], timeoutMilliseconds: Int) -> Bool {
        let body = OTLPEncoding.exportTraceServiceRequest(
            serviceName: configuration.serviceName, resourceAttributes: configuration.resourceAttributes,
            scopeName: configuration.scopeName, scopeVersion: configuration.scopeVersion, spans: batch)
        switch client.post(body, contentType: "application/x-protobuf", timeoutMilliseconds: timeoutMilliseconds) {
        case .status(let code) where (200..<300).contains(code):
            condition.lock()
            state.counts.exported += batch.count
            state.inFlight = 0  // in the same lock: shutdown never sees the batch in two counts
            condition.unlock()
            return true
        case .status(let code):
            noteFailure(batch.count, "HTTP status \(code)")
        case .failed(let reason):
            noteFailure(batch.count, reason)
        }
        return false
    }

    /// Counts a failed export; logs the first one (a receiver that is down would otherwise log once a second).
    private func noteFailure(_ spans: Int, _ reason: String) {
        condition.lock()
        state.counts.failed += spans
        state.inFlight = 0  // in the same lock: shutdown never sees the batch in two counts
        state.counts.failedExports += 1
        let first = !state.loggedFailure
        state.loggedFailure = true
        condition.unlock()
        if first {
            configuration.logger.warning(
                "OTLP export to \(configuration.endpoint) failed (\(reason)): \(spans) span(s) lost; further failures are counted, not logged")
        }
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(clamping: seconds) &* 1_000 &+ Int(attoseconds / 1_000_000_000_000_000)
    }
}
