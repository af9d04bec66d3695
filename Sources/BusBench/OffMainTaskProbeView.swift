import BusViews
import Foundation
import NotificationBus

/// `task` with a `nonisolated` handler declared outside `body` (the article's fix): the loop runs
/// off the main actor and hops to it only to write state for a match.
struct OffMainTaskProbeView: View {
    let value = State(wrappedValue: UInt64(0))
    let pattern: NamePattern
    let replay: ReplayPolicy
    let buffering: BufferingPolicy
    let probe: ViewProbe

    var body: ViewContent {
        ViewContent().task(subscribing: pattern, replay: replay, buffering: buffering, handle)
    }

    nonisolated func handle(_ feed: ViewFeed) async {
        for await event in feed {
            switch event {
            case .notification(let notification):
                if probe.note(notification) {
                    await value.projectedValue.set(notification.sequence)
                    probe.stateUpdated(by: notification)
                }
            case .gap(let gap):
                probe.note(gap)
            }
        }
    }
}
