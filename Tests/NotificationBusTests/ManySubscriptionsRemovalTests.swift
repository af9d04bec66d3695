import Testing
import ZeroMQ

@testable import NotificationBus

/// Issue 38, item 10: a subscriber of 20,000 patterns spent 40% of its CPU in memmove while its
/// subscriptions ended (`nbus subscribe ... --count 1` exiting): each removal searched the routes
/// and shifted every later one (n removals, n x n moves). A removal now finds its route by id and
/// moves the last route into the gap. Checked here by structure, not by time: after removals in
/// any order every remaining subscription is found where it is, and each still receives exactly
/// what it matches.
@Suite("BusReceiver: many subscriptions ending, in any order")
struct ManySubscriptionsRemovalTests {
    private func deliver(_ receiver: inout BusReceiver, name: String, sequence: UInt64) throws {
        let frame = try EnvelopeCodec.encode(BusNotification(name: NotificationName(name), sequence: sequence, publisherID: 9))
        frame.withUnsafeBytes { receiver.deliverLocally($0) }
        receiver.flush()
    }

    @Test("2,000 subscriptions, removed odd ones first, then from the end, then the rest: the index stays exact, delivery unchanged")
    func removalKeepsTheIndexExact() throws {
        let core = BusCore(wake: try WakeSignal(), outboundCapacity: 1)
        var receiver = BusReceiver(maximumPayload: 1_024)
        let count = 2_000
        var storages: [UInt64: SubscriptionStorage] = [:]
        for id in 1...UInt64(count) {
            let storage = SubscriptionStorage(id: id, pattern: try NamePattern("p\(id).x"), policy: .default, core: core)
            storages[id] = storage
            receiver.add(storage)
        }
        var remaining = Set(storages.keys)
        func check(_ receiver: BusReceiver) {
            #expect(receiver.subscriptionCount == remaining.count)
            for id in remaining {
                guard let index = receiver.routeIndex(of: id) else {
                    Issue.record("subscription \(id) not found")
                    return
                }
                #expect(receiver.routes[index].storage.id == id)
            }
        }
        let orders: [[UInt64]] = [
            stride(from: 1, through: UInt64(count), by: 2).map { $0 },
            stride(from: UInt64(count), through: UInt64(count / 2), by: -2).map { $0 },
        ]
        var sequence: UInt64 = 0
        var sent: [UInt64: UInt64] = [:]
        for order in orders {
            for id in order {
                #expect(receiver.remove(id: id)?.id == id)
                remaining.remove(id)
            }
            #expect(receiver.remove(id: order[0]) == nil)  // gone already
            check(receiver)
            // Every remaining one still gets its own name, and only that.
            for id in remaining.sorted().prefix(50) {
                sequence += 1
                try deliver(&receiver, name: "p\(id).x", sequence: sequence)
                sent[id, default: 0] += 1
                #expect(storages[id]?.stats.received == sent[id], "subscription \(id)")
            }
        }
        for id in remaining.sorted() { _ = receiver.remove(id: id) }
        remaining.removeAll()
        check(receiver)
    }
}
