/// One child in a view's content: its identity and how to make its view the first time it appears in the tree.
public struct Child {
    /// The child's identity among its siblings.
    public let id: ViewID
    let make: @MainActor () -> any View

    /// A child with identity `id`; `make` runs once, when the identity enters the tree.
    public init(_ id: ViewID, _ make: @escaping @MainActor () -> any View) {
        self.id = id
        self.make = make
    }
}

/// Builds a list of children with `if`, `if let`, `switch` and `for` (conditional content).
@resultBuilder
public enum ChildrenBuilder {
    /// One child.
    public static func buildExpression(_ child: Child) -> [Child] { [child] }
    /// Several children in sequence.
    public static func buildBlock(_ parts: [Child]...) -> [Child] { parts.flatMap { $0 } }
    /// `if` without `else`: absent children are destroyed.
    public static func buildOptional(_ part: [Child]?) -> [Child] { part ?? [] }
    /// The `if` branch of `if`/`else`.
    public static func buildEither(first part: [Child]) -> [Child] { part }
    /// The `else` branch of `if`/`else`.
    public static func buildEither(second part: [Child]) -> [Child] { part }
    /// `for` loops.
    public static func buildArray(_ parts: [[Child]]) -> [Child] { parts.flatMap { $0 } }
}
