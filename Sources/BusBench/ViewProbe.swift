import BusViews
import Foundation
import NotificationBus
import Synchronization

/// What one view's own code saw, written from wherever the code runs (main actor or not).
/// Sequence numbers count per (publisher, name), so they are tracked per name the view subscribes to.
final class ViewProbe: Sendable {
    struct Counts: Sendable {
        var delivered: UInt64 = 0
        var matched: UInt64 = 0
        var firstSequence: UInt64 = 0
        /// Per subscribed name (the probe's `names` order), the highest sequence number seen.
        var lastSequences: [UInt64]
        var skipped: UInt64 = 0
        var outOfOrder: UInt64 = 0
        var inBandHidden: UInt64 = 0
        var inBandUpstream: UInt64 = 0
        var inBandLocal: UInt64 = 0
        /// Notifications of a name the view did not subscribe to (none expected).
        var foreign: UInt64 = 0

        /// The highest sequence number seen on any name.
        var lastSequence: UInt64 { lastSequences.max() ?? 0 }
    }

    private let state: Mutex<Counts>
    /// Slot of each subscribed name in `lastSequences`; empty for a single name (always slot 0).
    private let slots: [NotificationName: Int]
    /// The host's latency of the current sampling interval (shared by its views).
    private let interval: IntervalLatency?

    init(names: [NotificationName], interval: IntervalLatency? = nil) {
        state = Mutex(Counts(lastSequences: [UInt64](repeating: 0, count: max(1, names.count))))
        slots = names.count > 1 ? Dictionary(uniqueKeysWithValues: names.enumerated().map { ($0.element, $0.offset) }) : [:]
        self.interval = interval
    }

    /// The view's state was updated because of `notification` (onReceive: its action ran): one
    /// publish-to-state-update sample for the time series, timed like the runtime's own histogram.
    func stateUpdated(by notification: BusNotification) {
        interval?.record(publishedAt: notification.timestamp)
    }

    /// Counts a notification handed to the view's code; returns whether it passes the condition.
    func note(_ notification: BusNotification) -> Bool {
        note(notification, matched: notification.payload.first == 1)
    }

    /// Counts a typed event handed to the view's code (`--typed`); returns whether it passes the
    /// condition. An undecodable one (none expected) counts as delivered, not matched.
    func note(_ event: MessageEvent<ViewsBenchMessage>) -> (matched: Bool, notification: BusNotification?) {
        switch event {
        case .message(let envelope):
            return (note(envelope.notification, matched: envelope.message.match), envelope.notification)
        case .undecodable(let notification, _):
            _ = note(notification, matched: false)
            return (false, nil)
        case .gap(let gap):
            note(gap)
            return (false, nil)
        case .cleared:
            // Not a message (the probe posts none: it retains nothing).
            return (false, nil)
        }
    }

    /// Counts a notification handed to the view's code, `matched` or not; returns `matched`.
    @discardableResult
    func note(_ notification: BusNotification, matched: Bool) -> Bool {
        let sequence = notification.sequence
        let slot = slots.isEmpty ? 0 : slots[notification.name]
        state.withLock { counts in
            counts.delivered += 1
            if matched { counts.matched += 1 }
            guard let slot else {
                counts.foreign += 1
                return
            }
            if counts.firstSequence == 0 { counts.firstSequence = sequence }
            let last = counts.lastSequences[slot]
            if sequence <= last {
                counts.outOfOrder += 1
            } else {
                counts.skipped += sequence - last - 1
                counts.lastSequences[slot] = sequence
            }
        }
        return matched
    }

    /// Counts a gap event handed to a task-style loop.
    func note(_ gap: Gap) {
        state.withLock { counts in
            switch gap.cause {
            case .missedWhileInactive: counts.inBandHidden += gap.count
            case .lostUpstream: counts.inBandUpstream += gap.count
            case .droppedLocalBuffer: counts.inBandLocal += gap.count
            }
        }
    }

    var counts: Counts { state.withLock { $0 } }
}

// MARK: The views
