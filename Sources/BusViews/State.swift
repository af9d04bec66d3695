/// A view's source of truth: a value stored by the node, so it lives as long as the view exists.
///
/// Writing it (on the main actor) counts a state update and re-evaluates the owning view's `body`.
/// From off the main actor, `await $value.set(newValue)`.
@propertyWrapper
public struct State<Value: Sendable>: Sendable {
    /// The storage shared by every copy of the view value.
    public let projectedValue: StateStorage<Value>

    /// A state with its initial value.
    public init(wrappedValue: Value) {
        projectedValue = StateStorage(wrappedValue)
    }

    /// The current value; setting it updates the view.
    @MainActor
    public var wrappedValue: Value {
        get { projectedValue.value }
        nonmutating set { projectedValue.value = newValue }
    }
}

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

/// A property of a view that the node binds to itself when the view enters the tree.
@MainActor
protocol NodeBoundProperty {
    func bind(to node: ViewNode)
}

extension State: NodeBoundProperty {
    func bind(to node: ViewNode) {
        if projectedValue.node == nil { projectedValue.node = node }
    }
}
