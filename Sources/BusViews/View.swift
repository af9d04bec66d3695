/// A headless view: a value whose `body` describes its children and modifiers.
///
/// The host makes a view once, when its identity enters the tree, and keeps it while the identity
/// exists; its `State` properties live as long as that node. `body` runs on the main actor, as in SwiftUI.
@MainActor
public protocol View {
    /// What the view shows (children, layout) and which modifiers it carries; evaluated on every render.
    var body: ViewContent { get }
}

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

/// Where a node sits in the tree: the identities from the root down, printed `root/tabs/feed`.
public struct ViewPath: Hashable, Sendable, CustomStringConvertible {
    /// The identities from the root down.
    public let components: [ViewID]

    /// A path from its identities.
    public init(_ components: [ViewID]) { self.components = components }

    /// The path of a child of this node.
    public func appending(_ id: ViewID) -> ViewPath { ViewPath(components + [id]) }

    public var description: String { components.map(\.rawValue).joined(separator: "/") }
}
