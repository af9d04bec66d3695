import NotificationBus
import ToolSupport

/// One thing `nbus publish` takes from its input: a notification to post, or an input line it
/// skips (and counts) with the reason.
enum PublishItem {
    /// `line`: the input line it came from (nil for counted posts); a post ZeroMQ or the bus
    /// refuses for this notification alone is then skipped and counted instead of ending the run.
    case post(line: Int?, name: NotificationName, payload: [UInt8], headers: NotificationHeaders, type: ContentType)
    case skip(line: Int, reason: String)
}

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
