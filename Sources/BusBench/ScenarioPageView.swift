import BusViews
import Foundation
import NotificationBus

/// One tab of the scenario: a stack of views.
struct ScenarioPageView: View {
    let range: Range<Int>
    let leaf: @MainActor (Int) -> any View

    var body: ViewContent {
        ViewContent {
            for index in range {
                Child(ViewID("v-\(index)")) { leaf(index) }
            }
        }
    }
}
