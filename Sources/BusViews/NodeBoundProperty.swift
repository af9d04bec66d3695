/// A property of a view that the node binds to itself when the view enters the tree.
@MainActor
protocol NodeBoundProperty {
    func bind(to node: ViewNode)
}
