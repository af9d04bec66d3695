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

extension State: NodeBoundProperty {
    func bind(to node: ViewNode) {
        if projectedValue.node == nil { projectedValue.node = node }
    }
}
