import BusViews
import Foundation
import NotificationBus

/// `onReceive`: the action runs on the main actor for every notification, and `body` is
/// re-evaluated after it, whether or not the action wrote state.
struct OnReceiveProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().onReceive(pattern, buffering: buffering) { notification in
            if probe.note(notification) { value.wrappedValue = notification.sequence }
            probe.stateUpdated(by: notification)
        }
    }
}
