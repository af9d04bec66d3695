import TestSupport

@testable import NotificationBus

/// A consumer whose handler spins `perNotification` on each notification (work, not a sleep: far
/// slower than posting) and tallies what it received and what gaps said was lost. The budget
/// tests' slow-but-moving subscriber, broker and direct alike. Cancel the task to end it.
func startSlowHandler(_ events: BusEventSequence, perNotification: Duration) -> (
    task: Task<Void, Never>, progress: Watched<(received: Int, lost: UInt64)>
) {
    let progress = Watched((received: 0, lost: UInt64(0)))
    let task = Task {
        for await event in events {
            switch event {
            case .notification:
                let until = ContinuousClock.now + perNotification
                while ContinuousClock.now < until {}
                progress.update { $0.received += 1 }
            case .gap(let gap):
                progress.update { $0.lost += gap.count }
            }
        }
    }
    return (task, progress)
}
