// Foundation's typed messages (SF-0011) with the BenchOrder shape of `nbus bench throughput
// --typed`, at several counts: its async observer starts a task per post, so its rate depends on
// how many are posted; its messages(of:for:) (a buffer as large as the count) does not.
import Foundation
import Synchronization

// BenchOrder's shape (Sources/BusBench/BenchOrder.swift), as in busjson-coder/main.swift: each of
// these programs is built alone by swiftc, so each declares it with the conformance it needs
// (here Foundation's AsyncMessage, there Codable); keep the fields and values the same.
struct Order: NotificationCenter.AsyncMessage, Sendable {
    typealias Subject = NSObject
    var id: Int
    var total: Double
    var customer: String
    var items: [String]
    var express: Bool
    init(id: Int) { self.id = id; total = 9.5; customer = "Acme Corporation"; items = ["widget", "gadget"]; express = id % 2 == 0 }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Posts `count` to one async observer; messages a second until it has seen them all.
func observer(count: Int) async -> Double {
    let center = NotificationCenter()
    let seen = Atomic<Int>(0)
    let (done, finished) = AsyncStream.makeStream(of: Void.self)
    let token = center.addObserver(of: NSObject.self, for: NotificationCenter.BaseMessageIdentifier<Order>()) { _ in
        if seen.add(1, ordering: .relaxed).newValue == count { finished.yield() }
    }
    let start = ContinuousClock.now
    for id in 0..<count { center.post(Order(id: id)) }
    for await _ in done { break }
    let elapsed = ContinuousClock.now - start
    center.removeObserver(token)
    return Double(count) / seconds(elapsed)
}

/// Posts `count` to a `for await` task over messages(of:for:bufferSize: count).
func sequence(count: Int) async -> Double {
    let center = NotificationCenter()
    let messages = center.messages(of: NSObject.self, for: NotificationCenter.BaseMessageIdentifier<Order>(), bufferSize: count)
    let (started, starting) = AsyncStream.makeStream(of: Void.self)
    let consumer = Task { () -> ContinuousClock.Instant in
        var delivered = 0
        var iterator = messages.makeAsyncIterator()
        starting.yield()
        while delivered < count, (try? await iterator.next()) != nil { delivered += 1 }
        return ContinuousClock.now
    }
    for await _ in started { break }
    let start = ContinuousClock.now
    for id in 0..<count { center.post(Order(id: id)) }
    let end = await consumer.value
    return Double(count) / seconds(end - start)
}

let counts = CommandLine.arguments.dropFirst().compactMap { Int($0) }
for count in counts {
    var rates: [Double] = []
    for _ in 0..<5 { rates.append(await observer(count: count)) }
    rates.sort()
    print("observer \(count): median \(Int(rates[2]))/s, runs \(rates.map { "\(Int($0 / 1000))k" }.joined(separator: " "))")
}
for count in counts {
    var rates: [Double] = []
    for _ in 0..<3 { rates.append(await sequence(count: count)) }
    rates.sort()
    print("messages(of:for:) \(count): median \(Int(rates[1]))/s, runs \(rates.map { "\(Int($0 / 1000))k" }.joined(separator: " "))")
}
