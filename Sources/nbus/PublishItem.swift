import NotificationBus

/// One thing `nbus publish` takes from its input: a notification to post, or an input line it
/// skips (and counts) with the reason.
enum PublishItem {
    /// `line`: the input line it came from (nil for counted posts); a post ZeroMQ or the bus
    /// refuses for this notification alone is then skipped and counted instead of ending the run.
    /// `retain`: this line asks for it to be kept (its `flags` has the retain bit, NBP-1 §18),
    /// beside `--retain`, which asks it of every post.
    case post(line: Int?, name: NotificationName, payload: [UInt8], headers: NotificationHeaders, type: ContentType, retain: Bool = false)
    case skip(line: Int, reason: String)
}
