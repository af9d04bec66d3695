/// The storage behind a `State`, tied to the node of the view that declares it.
@MainActor
public final class StateStorage<Value: Sendable> {
    /// The node whose `body` depends on this value; set when the view enters the tree.
    weak var node: ViewNode?

    /// The current value; setting it counts a state update and re-evaluates the view's `body`.
    public var value: Value {
        didSet { node?.stateDidChange() }
    }

    nonisolated init(_ value: Value) {
        self.value = value
    }

    /// Sets the value (callable with `await` from any isolation).
    public func set(_ newValue: Value) {
        value = newValue
    }
}
