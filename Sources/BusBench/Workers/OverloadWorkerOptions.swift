import Foundation
import NotificationBus

/// What one overload worker process does (`nbus bench worker overload`).
package struct OverloadWorkerOptions: Sendable, Codable {
    /// Which side of the pair this process is.
    package enum Role: String, Sendable, CaseIterable, Codable {
        /// `Bus(.directPublisher(bind:))` with the default configuration (no back-pressure: the
        /// XPUB drops at its HWM); posts as fast as it can for `seconds`, then closes.
        case publisher
        /// `Bus(.directSubscriber(connect:))`; one `for await` loop over `events(named:buffering:)`
        /// with a deliberately slow handler; samples its own RSS.
        case subscriber
    }

    package var role: Role
    /// Where the publisher binds / the subscriber connects.
    package var endpoint: String
    /// Publisher: seconds of posting.
    package var seconds: Double = 60
    /// Payload bytes per notification.
    package var size: Int = 4_096
    /// Subscriber: busy work per notification, microseconds (monotonic clock).
    package var handlerMicroseconds: Int = 100
    /// Subscriber: buffering policy and capacity.
    package var policy: OverloadPolicy = .dropOldest
    package var buffer: Int = 8_192
    /// ZeroMQ send and receive HWMs, both sides (the bus's default unless set).
    package var highWaterMark: Int32 = BusConfiguration().sendHighWaterMark
    /// Publisher: `closeTimeoutMilliseconds` (the bus's default unless set).
    package var closeTimeoutMilliseconds: Int32 = BusConfiguration().closeTimeoutInMilliseconds
    /// Subscriber: `VmRSS` sampling interval, milliseconds.
    package var sampleIntervalMilliseconds: Int = 250
    /// The notification name.
    package var name: String = OverloadOptions.notificationName
    /// Seconds until the worker gives up (a subscriber still reports what it saw).
    package var timeoutSeconds: Int = 180
    /// Exit as soon as stdin reaches end of file (the parent holds the pipe's write end).
    package var exitOnStandardInputEOF = false

    package init(role: Role, endpoint: String) {
        self.role = role
        self.endpoint = endpoint
    }

    /// The command line that runs this worker through `command` (see `BenchWorkerCommand`).
    func arguments(command: [String]) -> [String] {
        BenchWorkerCommand.arguments(command, .overload, self)
    }
}

extension OverloadWorkerOptions: BenchWorkerOptions {
    static let template = OverloadWorkerOptions(role: .publisher, endpoint: "")
    static let requiredKeys = ["role", "endpoint"]
    static let optionalKeys: [String] = []
    static let example = #"{"role":"subscriber","endpoint":"ipc:///tmp/o.sock","policy":"suspend"}"#

    var outOfRange: String? {
        typealias C = BenchWorkerCommand
        guard seconds.isFinite else { return "seconds must be a number, got \(seconds)" }
        return C.range("seconds", seconds, 0.001...86_400) ?? C.range("size", size, 0...(64 << 20))
            ?? C.range("handlerMicroseconds", handlerMicroseconds, 0...1_000_000) ?? C.range("buffer", buffer, 1...100_000_000)
            ?? C.range("highWaterMark", highWaterMark, 0...Int32.max)
            ?? C.range("closeTimeoutMilliseconds", closeTimeoutMilliseconds, 0...3_600_000)
            ?? C.range("sampleIntervalMilliseconds", sampleIntervalMilliseconds, 1...60_000)
            ?? C.range("timeoutSeconds", timeoutSeconds, 1...31_536_000)
    }
}
