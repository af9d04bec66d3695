import Foundation
import NotificationBus

/// One view's counters as a subscriber host reports them: what its own code saw (`probe`), what
/// its bus subscription counted, and what the runtime counted (deltas since the host was ready).
package struct ScenarioViewCounters: Codable, Sendable, Equatable {
    /// The view's index and the (first) name index it subscribes to.
    package var view: Int
    package var name: Int
    /// Every name index it subscribes to, and per name the highest sequence number its code saw
    /// (same order; empty in results of older workers: then `name` and `lastSequence` say it).
    package var names: [Int] = []
    package var lastSequences: [UInt64] = []
    /// The view's page (tab or list window).
    package var page: Int
    // The view's own code:
    /// Notifications handed to the view's code (the `onReceive` action, or one loop iteration).
    package var delivered: UInt64 = 0
    /// Of those, the ones that passed the condition (the code then wrote state).
    package var matched: UInt64 = 0
    /// The first and highest sequence number seen; sequence numbers skipped between them (and
    /// before the first); sequence numbers not above the previous one (none expected).
    package var firstSequence: UInt64 = 0
    package var lastSequence: UInt64 = 0
    package var skippedSequences: UInt64 = 0
    package var outOfOrder: UInt64 = 0
    /// Gap events the loop was handed (task styles), by cause, summed counts.
    package var inBandHidden: UInt64 = 0
    package var inBandUpstream: UInt64 = 0
    package var inBandLocal: UInt64 = 0
    // The bus subscription (the `onReceive` observer's or the task feed's):
    package var received: UInt64 = 0
    package var lostUpstream: UInt64 = 0
    package var droppedLocalBuffer: UInt64 = 0
    package var discardedAtEnd: UInt64 = 0
    package var buffered: UInt64 = 0
    // The runtime (`ViewMetrics`, since ready):
    package var bodyEvaluations: UInt64 = 0
    package var stateUpdates: UInt64 = 0
    package var messagesHandled: UInt64 = 0
    package var missedWhileHidden: UInt64 = 0
    package var replayed: UInt64 = 0
    package var mainActorBusyNanoseconds: UInt64 = 0
    package var handlingNanoseconds: UInt64 = 0
    package var appearances: UInt64 = 0
    package var disappearances: UInt64 = 0
    /// Time the view was hidden within the publishing window, ns.
    package var hiddenNanoseconds: UInt64 = 0

    package init(view: Int, name: Int, page: Int, names: [Int]? = nil) {
        self.view = view
        self.name = name
        self.page = page
        self.names = names ?? [name]
    }

    /// The names the view subscribes to, with the highest sequence number seen on each.
    package var sequencesByName: [(name: Int, last: UInt64)] {
        if names.isEmpty { return [(name, lastSequence)] }
        if names.count == 1 && lastSequences.isEmpty { return [(names[0], lastSequence)] }
        return names.enumerated().map { ($0.element, $0.offset < lastSequences.count ? lastSequences[$0.offset] : 0) }
    }

    /// Every cause of loss plus what was delivered: what the identity compares with published.
    package var accounted: UInt64 { delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd }
}
