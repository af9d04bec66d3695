import Foundation
import NotificationBus
import Synchronization
import ToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// What the views publisher reports when it is done (its `done` line).
public struct ScenarioPublisherResult: Codable, Sendable, Equatable {
    public var event = "done"
    /// Notifications posted per name index (so per name: sequence numbers 1...posted).
    public var postedPerName: [UInt64]
    /// Of those, how many match (first payload byte 1).
    public var matchingPerName: [UInt64]
    /// Wall-clock time of the first and the last post, ns since the epoch.
    public var firstPostWallNanoseconds: UInt64
    public var lastPostWallNanoseconds: UInt64
    /// Time in the posting loop and in `close()`, ns.
    public var postNanoseconds: UInt64
    public var closeNanoseconds: UInt64
    /// The rate asked for (0: max).
    public var requestedRate: Int
    /// The publisher bus's counters after close.
    public var bus: BusCounters
    /// `BusStats.endOfStreamUnacknowledged` at close.
    public var endOfStreamUnacknowledged: UInt64
    /// Why posting stopped: `count` or `seconds`.
    public var stoppedBy: String
    /// Notifications posted so far, sampled about every 250 ms from the first post to the last
    /// (the time series' "published").
    public var timeline: [PostingSample] = []

    /// All notifications posted.
    public var posted: UInt64 { postedPerName.reduce(0, +) }

    /// Posts per second over the posting loop.
    public var postRate: Double { ratePerSecond(Int(posted), postNanoseconds) }

    /// First to last post, ns (the publishing window).
    public var windowNanoseconds: UInt64 {
        lastPostWallNanoseconds > firstPostWallNanoseconds ? lastPostWallNanoseconds - firstPostWallNanoseconds : 0
    }
}

/// The publisher's count at one moment.
public struct PostingSample: Codable, Sendable, Equatable {
    /// Wall clock, ns since the epoch (the hosts' samples use the same clock: one machine).
    public var wallNanoseconds: UInt64
    /// Notifications posted so far, every name.
    public var posted: UInt64

    public init(wallNanoseconds: UInt64, posted: UInt64) {
        self.wallNanoseconds = wallNanoseconds
        self.posted = posted
    }
}

/// A subscriber host's counters at one moment, summed over its views (cumulative since ready),
/// and the latency of the state updates made since the previous sample.
public struct HostSample: Codable, Sendable, Equatable {
    /// Wall clock, ns since the epoch.
    public var wallNanoseconds: UInt64
    /// Notifications handed to the views' code so far.
    public var delivered: UInt64 = 0
    /// Losses so far, by cause.
    public var lostUpstream: UInt64 = 0
    public var droppedLocalBuffer: UInt64 = 0
    public var missedWhileHidden: UInt64 = 0
    /// Notifications replayed on reappear so far.
    public var replayed: UInt64 = 0
    /// Main-actor busy time so far (runtime accounting), ns.
    public var mainActorBusyNanoseconds: UInt64 = 0
    /// Publish-to-state-update latency of the updates since the previous sample: how many, p50,
    /// p99 (ns; 0 when none).
    public var latencyCount: UInt64 = 0
    public var latencyP50: UInt64 = 0
    public var latencyP99: UInt64 = 0

    public init(wallNanoseconds: UInt64) {
        self.wallNanoseconds = wallNanoseconds
    }
}

/// One view's counters as a subscriber host reports them: what its own code saw (`probe`), what
/// its bus subscription counted, and what the runtime counted (deltas since the host was ready).
public struct ScenarioViewCounters: Codable, Sendable, Equatable {
    /// The view's index and the (first) name index it subscribes to.
    public var view: Int
    public var name: Int
    /// Every name index it subscribes to, and per name the highest sequence number its code saw
    /// (same order; empty in results of older workers: then `name` and `lastSequence` say it).
    public var names: [Int] = []
    public var lastSequences: [UInt64] = []
    /// The view's page (tab or list window).
    public var page: Int
    // The view's own code:
    /// Notifications handed to the view's code (the `onReceive` action, or one loop iteration).
    public var delivered: UInt64 = 0
    /// Of those, the ones that passed the condition (the code then wrote state).
    public var matched: UInt64 = 0
    /// The first and highest sequence number seen; sequence numbers skipped between them (and
    /// before the first); sequence numbers not above the previous one (none expected).
    public var firstSequence: UInt64 = 0
    public var lastSequence: UInt64 = 0
    public var skippedSequences: UInt64 = 0
    public var outOfOrder: UInt64 = 0
    /// Gap events the loop was handed (task styles), by cause, summed counts.
    public var inBandHidden: UInt64 = 0
    public var inBandUpstream: UInt64 = 0
    public var inBandLocal: UInt64 = 0
    // The bus subscription (the `onReceive` observer's or the task feed's):
    public var received: UInt64 = 0
    public var lostUpstream: UInt64 = 0
    public var droppedLocalBuffer: UInt64 = 0
    public var discardedAtEnd: UInt64 = 0
    public var buffered: UInt64 = 0
    // The runtime (`ViewMetrics`, since ready):
    public var bodyEvaluations: UInt64 = 0
    public var stateUpdates: UInt64 = 0
    public var messagesHandled: UInt64 = 0
    public var missedWhileHidden: UInt64 = 0
    public var replayed: UInt64 = 0
    public var mainActorBusyNanoseconds: UInt64 = 0
    public var handlingNanoseconds: UInt64 = 0
    public var appearances: UInt64 = 0
    public var disappearances: UInt64 = 0
    /// Time the view was hidden within the publishing window, ns.
    public var hiddenNanoseconds: UInt64 = 0

    public init(view: Int, name: Int, page: Int, names: [Int]? = nil) {
        self.view = view
        self.name = name
        self.page = page
        self.names = names ?? [name]
    }

    /// The names the view subscribes to, with the highest sequence number seen on each.
    public var sequencesByName: [(name: Int, last: UInt64)] {
        if names.isEmpty { return [(name, lastSequence)] }
        if names.count == 1 && lastSequences.isEmpty { return [(names[0], lastSequence)] }
        return names.enumerated().map { ($0.element, $0.offset < lastSequences.count ? lastSequences[$0.offset] : 0) }
    }

    /// Every cause of loss plus what was delivered: what the identity compares with published.
    public var accounted: UInt64 { delivered + lostUpstream + droppedLocalBuffer + missedWhileHidden + discardedAtEnd }
}

/// What a subscriber host reports (its `result` line).
public struct ScenarioHostResult: Codable, Sendable {
    public var event = "result"
    public var style: ViewStyle
    /// Per view.
    public var views: [ScenarioViewCounters]
    /// Publish-to-state-update latency over every view (`ViewMetrics.latency` merged).
    public var latency: LatencySummary
    /// From ready to the end of the drain, ns (the denominator of busy %).
    public var windowNanoseconds: UInt64
    /// How long a job enqueued on the main actor waited to run, sampled every 20 ms over the
    /// window from a task off the main actor: the main actor's responsiveness, ns.
    public var mainActorPing: LatencySummary
    /// The process's CPU time (getrusage) over the window, and over its whole life, ns.
    public var windowUserNanoseconds: UInt64
    public var windowSystemNanoseconds: UInt64
    public var totalUserNanoseconds: UInt64
    public var totalSystemNanoseconds: UInt64
    /// Peak resident set size (`VmHWM` of /proc/self/status), KiB.
    public var peakResidentKiB: UInt64
    /// Visibility changes made by the churn timer while the publisher was posting.
    public var churnTransitions: Int
    /// Whether the drain ended without everything accounted (stall or deadline).
    public var drainIncomplete: Bool
    /// The drain phase's duration, ns (publisher done to report).
    public var drainNanoseconds: UInt64
    /// Subscriptions that could not be made.
    public var subscriptionErrors: [String]
    /// End-of-stream records the host's bus processed.
    public var endOfStreamRecords: UInt64
    /// Which names the host's views subscribed to.
    public var subscription: ViewSubscription = .spread
    /// Notifications that reached the host's socket (`BusStats.notificationsReceived`: a batch
    /// frame counts as the notifications it carries, so CPU per frame stays CPU per notification,
    /// comparable with raw libzmq's per message): with exact-name subscriptions ZeroMQ filters the
    /// other names at the publisher, so they never count here.
    public var framesReceived: UInt64 = 0
    /// The host's counters about every 250 ms, from ready to the end of its drain.
    public var timeline: [HostSample] = []
    /// Wall-clock times (ns) of the churn's visibility changes (tab switch or scroll) while it ran.
    public var visibilityChanges: [UInt64] = []
}

/// What one process of `nbus bench views` (and `filter`) does (`nbus bench worker views`).
public struct ViewsWorkerOptions: Sendable, Codable {
    /// The scenario; a host's carries its own subscription.
    public var scenario: ViewsScenario
    /// Which process this is.
    public var role: ViewsWorker.Role
    /// Where the publisher binds / a host connects.
    public var endpoint: String
    /// A host's consumer style (required for a host).
    public var style: ViewStyle?
    /// Publisher: each host's subscription, so it knows how many hosts to wait for on each name.
    public var hostSubscriptions: [ViewSubscription]
    /// Exit as soon as stdin reaches end of file (the runner holds the pipe's write end).
    public var exitOnStandardInputEOF = true

    /// Options for `role`; a publisher waits for `hostSubscriptions` (one per host).
    public init(
        scenario: ViewsScenario, role: ViewsWorker.Role, endpoint: String, style: ViewStyle? = nil,
        hostSubscriptions: [ViewSubscription] = []
    ) {
        self.scenario = scenario
        self.role = role
        self.endpoint = endpoint
        self.style = style
        self.hostSubscriptions = hostSubscriptions
    }

    /// The command line that runs this worker through `command` (see `BenchWorkerCommand`).
    func arguments(command: [String]) -> [String] {
        BenchWorkerCommand.arguments(command, .views, self)
    }
}

extension ViewsWorkerOptions: BenchWorkerOptions {
    static let template = ViewsWorkerOptions(scenario: ViewsScenario(), role: .publisher, endpoint: "")
    static let requiredKeys = ["role", "endpoint"]
    static let optionalKeys = ["style"]
    static let example = #"{"role":"host","endpoint":"ipc:///tmp/v.sock","style":"onReceive"}"#

    var outOfRange: String? {
        do {
            try scenario.validate()
            return nil
        } catch {
            return "scenario: \(error)"
        }
    }
}

/// The worker processes of `nbus bench views`: the publisher and the subscriber hosts.
///
/// JSON lines on stdout (`WorkerProcess`): the publisher prints `bound`, `subscribed` (every
/// host's subscriptions reached it), then, once the runner writes `go` on its stdin, `started`
/// and at the end `done` (`ScenarioPublisherResult`); a host prints `ready`, then `result` (`ScenarioHostResult`) once
/// it has read the publisher's `done` line (prefixed `published `) on stdin and drained.
public enum ViewsWorker {
    /// The worker's two roles.
    public enum Role: String, Sendable, CaseIterable, Codable {
        case publisher, host
    }

    /// The stdin line prefix by which the runner hands a host the publisher's result.
    static let publishedPrefix = "published "
    /// The stdin line by which the runner lets the publisher start posting (every host is ready).
    static let goLine = "go"

    /// The publisher's `progress` line while it posts, about every `progressIntervalNanoseconds`.
    struct ProgressLine: Codable, Sendable {
        var event = "progress"
        /// Notifications posted so far, and seconds since the first post.
        var posted: Int
        var elapsedNanoseconds: UInt64
    }

    static let progressIntervalNanoseconds: UInt64 = 250_000_000

    /// Runs a worker and returns its exit status (0: reported, 1: failed).
    public static func run(_ options: ViewsWorkerOptions) async -> Int32 {
        let scenario = options.scenario
        let published = OneShot<ScenarioPublisherResult>()
        let go = OneShot<Void>()
        // Each part at most a year: hand-written options may hold anything (Int(_:) traps past Int).
        let year = 31_536_000
        let seconds = scenario.seconds.isFinite ? Int(min(max(scenario.seconds, 0), Double(year)).rounded(.up)) : year
        let hardDeadline = seconds + min(scenario.startupSeconds, year) + min(scenario.drainSeconds, year) + 30
        return await WorkerProcess.run(
            kind: .views, role: options.role.rawValue, hardDeadlineSeconds: hardDeadline,
            exitWhenRunnerGone: options.exitOnStandardInputEOF,
            onControlLine: { line in
                if line == goLine { go.finish() }
                if line.hasPrefix(publishedPrefix),
                    let result = try? JSONDecoder().decode(
                        ScenarioPublisherResult.self, from: Data(line.dropFirst(publishedPrefix.count).utf8))
                {
                    published.finish(result)
                }
            }
        ) {
            switch options.role {
            case .publisher:
                let subscriptions = options.hostSubscriptions.isEmpty ? [scenario.subscription] : options.hostSubscriptions
                let result = try await ScenarioPublisher.run(
                    scenario, endpoint: options.endpoint, hostSubscriptions: subscriptions,
                    bound: { WorkerProcess.emitJSON(BoundOut(endpoint: $0)) },
                    progress: { posted, elapsed in
                        WorkerProcess.emitJSON(ProgressLine(posted: posted, elapsedNanoseconds: elapsed))
                    },
                    subscribed: {
                        WorkerProcess.emitLine(#"{"event":"subscribed"}"#)
                        guard await go.value != nil else { throw CancellationError() }
                        WorkerProcess.emitLine(#"{"event":"started"}"#)
                    })
                WorkerProcess.emitJSON(result)
                return 0
            case .host:
                guard let style = options.style else {
                    WorkerProcess.writeStandardError("nbus bench worker views (host): a host needs a style\n")
                    return 1
                }
                let result = try await ScenarioHost.run(
                    scenario, style: style, endpoint: options.endpoint,
                    ready: { WorkerProcess.emitLine(#"{"event":"ready","style":"\#(style.rawValue)"}"#) },
                    published: {
                        guard let result = await published.value else { throw CancellationError() }
                        return result
                    })
                WorkerProcess.emitJSON(result)
                return 0
            }
        }
    }

    private struct BoundOut: Encodable {
        var event = "bound"
        var endpoint: String
    }
}

/// CPU time and peak memory of this process.
enum ProcessUsage {
    private static let RUSAGE_SELF_WHO = __rusage_who_t(RUSAGE_SELF.rawValue)

    /// User and system CPU time of the whole process, ns, and its peak RSS (KiB).
    ///
    /// The peak is the kernel's `VmHWM`, not `ru_maxrss`: Linux carries `ru_maxrss` across
    /// `execve`, and a child spawned with `posix_spawn` (vfork-style, sharing the parent's memory
    /// until exec) starts with the parent's peak, the benchmark runner's. `VmHWM` belongs to the
    /// process's own address space.
    static func current() -> (user: UInt64, system: UInt64, maxResidentKiB: UInt64) {
        var usage = Glibc.rusage()
        getrusage(RUSAGE_SELF_WHO, &usage)
        func nanoseconds(_ time: timeval) -> UInt64 { UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000 }
        let peak = ProcessMemory.read()?.peakResidentKiB ?? UInt64(max(0, usage.ru_maxrss))
        return (nanoseconds(usage.ru_utime), nanoseconds(usage.ru_stime), peak)
    }
}
