/// A headless view: a value whose `body` describes its children and modifiers.
///
/// The host makes a view once, when its identity enters the tree, and keeps it while the identity
/// exists; its `State` properties live as long as that node. `body` runs on the main actor, as in SwiftUI.
@MainActor
public protocol View {
    /// What the view shows (children, layout) and which modifiers it carries; evaluated on every render.
    var body: ViewContent { get }
}
