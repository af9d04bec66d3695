import BusViews
import Foundation
import NotificationBus

/// `task` with the loop written in `body`: it inherits the main actor.
struct MainTaskProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, buffering: buffering) { feed in
            for await event in feed {
                switch event {
                case .notification(let notification):
                    if probe.note(notification) {
                        value.wrappedValue = notification.sequence
                        probe.stateUpdated(by: notification)
                    }
                case .gap(let gap):
                    probe.note(gap)
                }
            }
        }
    }
}
