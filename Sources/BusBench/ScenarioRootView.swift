import BusViews
import Foundation
import NotificationBus

/// The root: the scenario's container holding `views` leaf views.
struct ScenarioRootView: View {
    let container: ViewContainer
    let views: Int
    let pages: [Range<Int>]
    let selection = State(wrappedValue: ViewID("tab-0"))
    let window: State<Range<Int>>
    let leaf: @MainActor (Int) -> any View

    init(container: ViewContainer, views: Int, pages: [Range<Int>], window: Range<Int>, leaf: @escaping @MainActor (Int) -> any View) {
        self.container = container
        self.views = views
        self.pages = pages
        self.window = State(wrappedValue: window)
        self.leaf = leaf
    }

    var body: ViewContent {
        switch container {
        case .none:
            return ViewContent {
                for index in 0..<views {
                    Child(ViewID("v-\(index)")) { leaf(index) }
                }
            }
        case .tabs:
            return .tabView(selection: selection.wrappedValue) {
                for (page, range) in pages.enumerated() {
                    Child(ViewID("tab-\(page)")) { ScenarioPageView(range: range, leaf: leaf) }
                }
            }
        case .list:
            return .lazyList(rowCount: views, window: window.wrappedValue) { index in
                Child(ViewID("v-\(index)")) { leaf(index) }
            }
        }
    }

    /// The path of view `index` in the host's tree.
    func path(ofView index: Int, page: Int) -> String {
        container == .tabs ? "root/tab-\(page)/v-\(index)" : "root/v-\(index)"
    }
}

// MARK: The host
