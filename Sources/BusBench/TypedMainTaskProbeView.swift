import BusViews
import Foundation
import NotificationBus

/// `task(subscribing:as:)` with the loop written in `body` (`--typed`): it inherits the main
/// actor, where each message is decoded; only matching ones write state.
struct TypedMainTaskProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, as: ViewsBenchMessage.self, buffering: buffering) { messages in
            for await event in messages.events {
                let (matched, notification) = probe.note(event)
                if matched, let notification {
                    value.wrappedValue = notification.sequence
                    probe.stateUpdated(by: notification)
                }
            }
        }
    }
}
