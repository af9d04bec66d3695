import Foundation
import Testing
import ZeroMQ
@testable import NotificationBus
import TestSupport

/// Typed posts on the byte test's two names (their JSON carries the index).
struct PathOrderOne: BusAsyncMessage {
    static let busName: NotificationName = "p.one"
    var i: Int
}

struct PathOrderTwo: BusAsyncMessage {
    static let busName: NotificationName = "p.two"
    var i: Int
}

@Suite("Posts encoded straight into the outbound queue and posts with a message of their own share one order")
struct PostPathOrderTests {
    @Test(
        "Small, large (their own message), typed, retained and postNow posts, interleaved on two names: every one arrives, in order, sequences without a hole"
    )
    func interleavedPaths() async throws {
        let endpoint = try temporaryIPCEndpoint("paths.sock")
        var configuration = BusConfiguration.directPublisher(bind: endpoint)
        configuration.publisherBackpressure = true  // lossless, so "every one" is exact
        configuration.outboundCapacity = 64  // small: some posts wait for room with a message of their own
        let publisher = try Bus(configuration)
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let stream = try subscriber.notifications(named: NamePattern("p.>"))
        let one = try NotificationName("p.one")
        let two = try NotificationName("p.two")
        try await publisher.waitForSubscribers(count: 1, matching: one, timeout: .seconds(20))
        var posted: [String] = []
        for index in 0..<3_000 {
            let name = index % 7 < 4 ? one : two
            var payload = Array("x\(index)".utf8)
            if index % 11 == 3 {
                // Larger than a batch frame: queued as its own message, never copied into the
                // outbound buffer; a few of 1 MB.
                payload += [UInt8](repeating: UInt8(ascii: "-"), count: index % 550 == 3 ? 1_000_000 : 20_000)
            }
            switch index % 5 {
            case _ where index % 13 == 6:
                // Typed: a message of its own too (its JSON carries the index).
                if name == one { try await publisher.post(PathOrderOne(i: index)) } else { try await publisher.post(PathOrderTwo(i: index)) }
            case 0: try await publisher.post(name: name, payload: payload, retain: true)
            case 1:
                do {
                    try publisher.postNow(name: name, payload: payload)
                } catch {
                    guard error.code == .outboundQueueFull else { throw error }
                    try await publisher.post(name: name, payload: payload)  // waits for room
                }
            default: try await publisher.post(name: name, payload: payload)
            }
            posted.append("\(name.rawValue)/\(index)")
        }
        let total = posted.count
        let received = try await withTimeout(.seconds(60), "every notification") { () -> [(String, UInt64)] in
            var received: [(String, UInt64)] = []
            for await notification in stream {
                // The index: the digits of "x<index>" (then dashes) or of {"i":<index>}.
                let digits = notification.payload.drop { !(48...57).contains($0) }.prefix { (48...57).contains($0) }
                received.append(
                    ("\(notification.name.rawValue)/\(String(decoding: digits, as: UTF8.self))", notification.sequence))
                if received.count == total { break }
            }
            return received
        }
        let stats = await publisher.close()
        _ = await subscriber.close()
        #expect(received.map(\.0) == posted, "lost, repeated or reordered")
        for name in [one, two] {
            let sequences = received.filter { $0.0.hasPrefix(name.rawValue + "/") }.map(\.1)
            #expect(sequences == Array(1...UInt64(sequences.count)), "\(name.rawValue): a hole or a repeat")
        }
        #expect(stats.sent == UInt64(total) && stats.unsent == 0 && stats.posted == UInt64(total))
    }
}
