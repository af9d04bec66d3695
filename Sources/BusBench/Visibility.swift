import BusViews
import Foundation
import NotificationBus

/// Which page is visible, and since when: drives the root's selection or window.
@MainActor
final class Visibility {
    let scenario: ViewsScenario
    let root: ScenarioRootView
    private(set) var current = 0
    /// (wall clock ns, page shown from then on).
    private var log: [(UInt64, Int)] = []

    init(scenario: ViewsScenario, root: ScenarioRootView) {
        self.scenario = scenario
        self.root = root
    }

    func show(page: Int) {
        current = page
        switch scenario.container {
        case .none: break
        case .tabs: root.selection.wrappedValue = ViewID("tab-\(page)")
        case .list: root.window.wrappedValue = scenario.views(onPage: page)
        }
        log.append((Timestamps.wallClockNanoseconds(), page))
    }

    /// Wall-clock times of the page changes since the log restarted (at most `limit`, the first ones).
    func changeTimes(limit: Int) -> [UInt64] {
        Array(log.dropFirst().prefix(limit).map(\.0))
    }

    /// Forgets the set-up transitions: the log starts with the current page, now.
    func restartLog() {
        log = [(Timestamps.wallClockNanoseconds(), current)]
    }

    /// Page changes made before `wall` (after the log's start).
    func transitions(before wall: UInt64) -> Int {
        max(0, log.filter { $0.0 <= wall }.count - 1)
    }

    /// Time `page` was not shown between `start` and `end` (wall clock ns).
    func hiddenNanoseconds(page: Int, from start: UInt64, to end: UInt64) -> UInt64 {
        guard end > start else { return 0 }
        guard scenario.container != .none else { return 0 }
        var visible: UInt64 = 0
        for (index, entry) in log.enumerated() where entry.1 == page {
            let from = max(entry.0, start)
            let to = min(index + 1 < log.count ? log[index + 1].0 : UInt64.max, end)
            if to > from { visible += to - from }
        }
        return (end - start) - min(visible, end - start)
    }
}
