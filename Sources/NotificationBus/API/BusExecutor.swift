import Dispatch

/// Runs tasks on the bus's own I/O thread (`Task(executorPreference: bus.executor) { ... }`).
///
/// A task there posts without a hand-off to another thread, and a `for await` loop there takes
/// each batch without a thread wake-up: the bus's thread runs it between rounds of socket work.
/// Keep such code short and never block in it: while it runs, the bus reads and sends nothing.
/// After the bus closes, tasks that still prefer it run on Dispatch's global queue instead.
public final class BusExecutor: TaskExecutor {
    let core: BusCore

    init(core: BusCore) {
        self.core = core
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !core.enqueue(job: job) {
            let executor = asUnownedTaskExecutor()
            DispatchQueue.global().async { job.runSynchronously(on: executor) }
        }
    }
}
