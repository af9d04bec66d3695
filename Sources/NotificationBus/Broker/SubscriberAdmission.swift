/// When the broker lets a new subscriber connection finish its handshake (issue 38, item 2).
///
/// Why: libzmq 4.3's XPUB walks its whole subscription trie each time a subscriber connection
/// ends, on the thread that owns the socket (the forwarding thread), inside whatever libzmq call
/// that thread is in, and processes every pending departure before it returns. Subscribers that
/// each hold a topic of their own (an NBP presence topic) make the trie grow with their number:
/// with 1,000 of them a departure cost about 1 ms, and careless peers replacing 500 connections a
/// second kept the forwarding thread inside one call for good (the broker exited stuck, 70). Only
/// a connection that finished its handshake has a pipe at the XPUB, so only those cost a walk
/// when they go: the broker's ZAP handler holds each subscriber handshake here until this says
/// it may go on, which is
///
/// - at most `rate` a second (bursts of `burst`), so departures, which never outnumber
///   admissions, stay below what the forwarding thread can walk; and
/// - only while the forwarding loop is well (its last round began less than `healthyAge` ago),
///   so a backlog of departures it is still walking admits nobody new until it has caught up.
///
/// A handshake held longer than `maximumWait`, or pushed out of a queue of `maximumWaiting`, is
/// never answered: libzmq ends it at its handshake timeout and the client dials again. One whose
/// connection ended while it waited (a careless peer's, mostly) costs no turn (`wasGone`). A value
/// type with no socket: the gate's thread feeds it and does what it returns.
struct SubscriberAdmission<Request> {
    typealias Settings = SubscriberAdmissionSettings

    let settings: Settings
    private var waiting: [(request: Request, arrived: UInt64)] = []
    private var head = 0
    private var tokens: Double
    private var refilledAt: UInt64?
    /// Handshakes let through, ever.
    private(set) var admitted: UInt64 = 0
    /// Handshakes that had to wait (not let through the moment they came).
    private(set) var held: UInt64 = 0
    /// Handshakes never answered (the queue was full, or they waited `maximumWait`).
    private(set) var abandoned: UInt64 = 0
    /// Handshakes whose connection ended before their turn came (not counted as admitted).
    private(set) var gone: UInt64 = 0

    init(settings: Settings = Settings()) {
        self.settings = settings
        tokens = Double(max(1, settings.burst))
    }

    /// Handshakes waiting now.
    var waitingCount: Int { waiting.count - head }

    /// A handshake came at `now`: returns what may be answered now (it, or others before it, or
    /// nothing). `forwarderAge` is how long ago the forwarding loop began its last round (ns).
    mutating func arrived(_ request: Request, now: UInt64, forwarderAge: UInt64) -> [Request] {
        if waitingCount >= settings.maximumWaiting {
            head += 1
            abandoned &+= 1
        }
        waiting.append((request, now))
        let due = self.due(now: now, forwarderAge: forwarderAge)
        // First in, first out: when anything still waits, this one (the last) does.
        if waitingCount > 0 { held &+= 1 }
        return due
    }

    /// What may be answered now, oldest first; drops those that waited too long.
    mutating func due(now: UInt64, forwarderAge: UInt64) -> [Request] {
        refill(now: now)
        while head < waiting.count, now &- waiting[head].arrived > settings.maximumWait {
            head += 1
            abandoned &+= 1
        }
        var answered: [Request] = []
        if forwarderAge < settings.healthyAge {
            while head < waiting.count, tokens >= 1 {
                answered.append(waiting[head].request)
                head += 1
                tokens -= 1
            }
        }
        admitted &+= UInt64(answered.count)
        compact()
        return answered
    }

    /// An answered handshake's connection had ended meanwhile (the reply found nobody): it cost
    /// nothing, so its turn goes back to the next one.
    mutating func wasGone() {
        tokens = min(Double(max(1, settings.burst)), tokens + 1)
        admitted &-= 1
        gone &+= 1
    }

    /// How long (ms) until `due` may answer more, when something waits; nil when nothing does.
    var retryMilliseconds: Int? {
        guard waitingCount > 0 else { return nil }
        // One token's time, at least 1 ms and at most 10 ms (the health check's pace).
        let perToken = settings.rate > 0 ? 1_000 / settings.rate : 10
        return Int(min(10, max(1, perToken.rounded(.up))))
    }

    private mutating func refill(now: UInt64) {
        defer { refilledAt = now }
        guard let last = refilledAt, now > last else { return }
        tokens = min(Double(max(1, settings.burst)), tokens + Double(now - last) / 1e9 * settings.rate)
    }

    private mutating func compact() {
        if head == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1_024, head * 2 > waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
    }
}

/// The pace of `SubscriberAdmission`.
struct SubscriberAdmissionSettings: Sendable {
    /// Handshakes let through per second, on average.
    var rate: Double = 200
    /// The most let through at once after a quiet spell.
    var burst: Int = 20
    /// The forwarding loop is well while its last round began less than this long ago (ns).
    var healthyAge: UInt64 = 250_000_000
    /// Handshakes held at most; the oldest goes unanswered when one more comes.
    var maximumWaiting = 4_096
    /// How long a handshake may be held (ns); older ones go unanswered (libzmq's handshake
    /// timeout is 30 s).
    var maximumWait: UInt64 = 20_000_000_000
}
