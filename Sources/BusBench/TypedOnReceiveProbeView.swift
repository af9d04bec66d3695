import BusViews
import Foundation
import NotificationBus

/// `onReceive` with a message type (`--typed`): each notification is decoded on the main actor
/// and runs the action there, then `body` is re-evaluated, as `OnReceiveProbeView`.
struct TypedOnReceiveProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().onReceive(pattern, as: ViewsBenchMessage.self, buffering: buffering) { envelope in
            if probe.note(envelope.notification, matched: envelope.message.match) {
                value.wrappedValue = envelope.sequence
            }
            probe.stateUpdated(by: envelope.notification)
        }
    }
}
