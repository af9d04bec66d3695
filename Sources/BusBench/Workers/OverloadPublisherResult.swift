import Foundation
import NotificationBus

/// What the overload publisher reports (its `done` line).
package struct OverloadPublisherResult: Codable, Sendable {
    package var event = "done"
    /// `post` calls that returned (the loop's own count).
    package var posts: UInt64
    /// Time in the posting loop, ns.
    package var postNanoseconds: UInt64
    /// Time `close()` took (flush, end-of-stream record and its acknowledgement), ns.
    package var closeNanoseconds: UInt64
    /// `BusStats.posted`: notifications accepted by `post`, i.e. sequence numbers 1...posted.
    package var posted: UInt64
    /// `BusStats.sent`: frames handed to ZeroMQ (the XPUB may still drop them at its HWM).
    package var sent: UInt64
    /// `BusStats.unsent`: posts never handed to ZeroMQ.
    package var unsent: UInt64
    /// `BusStats.endOfStreamUnacknowledged`: subscribers that did not acknowledge the end of stream.
    package var endOfStreamUnacknowledged: UInt64
    /// The configuration used.
    package var highWaterMark: Int32
    package var closeTimeoutMilliseconds: Int32
    package var publisherBackpressure: Bool
    /// The publisher's own memory at the end.
    package var memory: ProcessMemory?

    /// posted / posting time, per second.
    package var postRate: Double { ratePerSecond(Int(posted), postNanoseconds) }
}
