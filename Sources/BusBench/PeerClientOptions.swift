import Foundation
import NotificationBus

/// What `nbus bench peer-client` is asked to do: the client interface of the peers kit
/// (`Benchmarks/peers/README.md`), so the bus is measured through `nbus broker` exactly as NATS,
/// Redis and bare ZeroMQ are, with the bus's defaults.
package struct PeerClientOptions: Sendable {
    /// The role.
    package enum Mode: String, Sendable, CaseIterable {
        case sub, pub, ping, pong
    }

    /// Where the client's `for await` loops run.
    package enum Loop: String, Sendable, CaseIterable {
        /// On the bus's own thread, `Task(executorPreference: bus.executor)`: the README's way
        /// for a loop whose body is short.
        case executor
        /// A plain `Task { for await ... }` on the global pool: what a loop with a long body
        /// (or a user who skips the README's advice) gets.
        case plain
    }

    package var mode: Mode
    /// sub: the name to subscribe; pub: a comma list of names, cycled.
    package var subject = "bench.a"
    /// pub: the name of the END message (default: the first subject).
    package var endSubject: String?
    /// pub: notifications; ping: measured round trips.
    package var count = 1_000_000
    /// Payload bytes.
    package var size = 256
    /// ping: unmeasured round trips first.
    package var warmup = 1_000
    /// sub, pong: a file created once the subscription is made.
    package var readyFile: String?
    /// ping: a file for the raw round trips, ns, one per line.
    package var dumpFile: String?
    /// The broker's frontend (publishers) and backend (subscribers).
    package var frontend = "tcp://127.0.0.1:15550"
    package var backend = "tcp://127.0.0.1:15551"
    /// `frontend` and `backend` may list several brokers, comma-separated: the bus then goes
    /// through all of them (NBP-1 §17), for measuring what a second broker costs.
    var frontends: [String] { frontend.split(separator: ",").map(String.init) }
    var backends: [String] { backend.split(separator: ",").map(String.init) }
    /// `BusConfiguration.idleSpin` (microseconds) of every bus the client opens: 0 (the default) is
    /// the bus's default; ping/pong with 200 measure the documented low-latency setting.
    package var idleSpinMicroseconds = 0
    /// sub: busy work per notification (a handler's time), nanoseconds; 0: none. With work the
    /// loop runs on the global pool, as a user's `for await` would, not on the bus's thread.
    package var workNanoseconds = 0
    /// sub, ping, pong: where the loops run (`--work` always runs the sub loop on the pool).
    package var loop = Loop.executor
    /// pub: `BusConfiguration.batching`'s largest batch frame, bytes (0: batching off); nil: the
    /// bus's default. For measuring what the frame size costs each process.
    package var batchBytes: Int?

    package init(mode: Mode) {
        self.mode = mode
    }

    /// Throws `.invalidOptions` naming the first value out of range.
    package func validate() throws(BenchError) {
        guard count >= 1 else { throw .invalidOptions("--n must be at least 1") }
        guard size >= 1, size <= WireFormat.defaultMaximumPayload else {
            throw .invalidOptions("--size must be 1...\(WireFormat.defaultMaximumPayload) (the first byte marks END and Q)")
        }
        guard warmup >= 0 else { throw .invalidOptions("--warmup must be 0 or more") }
        guard (0...1_000_000).contains(idleSpinMicroseconds) else { throw .invalidOptions("--spin must be from 0 to 1 second") }
        guard (0...1_000_000_000).contains(workNanoseconds) else { throw .invalidOptions("--work must be from 0 to 1 second") }
        if let batchBytes, !(0...WireFormat.maximumBatchFrame).contains(batchBytes) {
            throw .invalidOptions("--batch-bytes must be 0...\(WireFormat.maximumBatchFrame)")
        }
        if loop == .plain && mode == .pub { throw .invalidOptions("--loop is for sub, ping and pong (pub has no loop)") }
        let subjects = subject.split(separator: ",").map(String.init)
        guard !subjects.isEmpty else { throw .invalidOptions("--subject is empty") }
        for name in subjects + [endSubject].compactMap({ $0 }) {
            do { _ = try NotificationName(name) } catch { throw .invalidOptions("--subject: invalid name '\(name)': \(error)") }
        }
    }
}

extension PeerClientOptions {
    /// The executor the client's loops prefer: the bus's own thread, or none (the global pool).
    func loopExecutor(_ bus: Bus) -> (any TaskExecutor)? {
        loop == .executor && workNanoseconds == 0 ? bus.executor : nil
    }

    /// `base` with these options' bus settings (the idle spin).
    func configuration(_ base: BusConfiguration) -> BusConfiguration {
        var configuration = base
        configuration.idleSpin = .microseconds(idleSpinMicroseconds)
        if let batchBytes { configuration.batching = Batching(maximumFrameBytes: batchBytes) }
        return configuration
    }
}
