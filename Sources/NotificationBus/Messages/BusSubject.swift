import FoundationEssentials

/// The default `Subject` of a bus message type: none. A class (never instantiated) so that
/// Foundation's `addObserver(of: nil, for:)`, which wants an object subject, takes the type too.
public final class BusNoSubject: Sendable {
    private init() {}
}

/// What stands for a message's subject across processes, where no object is shared: an identity,
/// one name token, which becomes the last segment of the name.
///
/// When a message type's `Subject` is a `BusSubject`, `post(_:subject:)` posts under
/// `<busName>.<busSubjectID>`, `addObserver(of: subject, for:)` subscribes exactly that name, and
/// observing without a subject subscribes `<busName>.*`; the publisher filters the rest away, as
/// for any pattern, before encoding anything.
public protocol BusSubject {
    /// One valid name token: no dot, no space or control byte, no `*` or `>` (`"A-1042"`).
    var busSubjectID: String { get }
}
