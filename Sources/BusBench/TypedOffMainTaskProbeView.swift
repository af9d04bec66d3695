import BusViews
import Foundation
import NotificationBus

/// The typed loop in a `nonisolated` handler (`--typed`): messages are decoded off the main
/// actor, which it reaches only to write state for a match.
struct TypedOffMainTaskProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let replay: ReplayPolicy
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, as: ViewsBenchMessage.self, replay: replay, buffering: buffering, handle)
    }

    nonisolated func handle(_ messages: ViewFeedMessages<ViewsBenchMessage>) async {
        for await event in messages.events {
            let (matched, notification) = probe.note(event)
            if matched, let notification {
                await value.projectedValue.set(notification.sequence)
                probe.stateUpdated(by: notification)
            }
        }
    }
}
