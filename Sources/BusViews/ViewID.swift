/// A view's identity among its siblings (a tab's tag, a row's key).
public struct ViewID: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The identity as text.
    public let rawValue: String

    /// An identity from text.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// An identity from a string literal.
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }
}
