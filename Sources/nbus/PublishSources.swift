import NotificationBus
import ToolSupport

/// Where `nbus publish`'s notifications come from: a count (`--count`, `{n}` in the payload),
/// text lines (`--lines`) or JSON lines (`--lines --input json`). One posting loop
/// (`Publish.post`) takes them all: the wait for subscribers, cancellation, pacing and skips live
/// there once.
protocol PublishSource {
    /// The name whose subscribers are awaited before anything is read, when known up front; nil:
    /// the first post's name (a JSON line may name its own).
    var waitName: NotificationName? { get }
    /// The next item; nil at the end of the input. Throws when standard input cannot be read.
    mutating func next() async throws -> PublishItem?
}
