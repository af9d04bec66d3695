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
