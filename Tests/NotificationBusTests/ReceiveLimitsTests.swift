import Foundation
import Synchronization
import Testing
import ZeroMQ
@testable import NotificationBus
import TestSupport

/// Malformed frames, one kind per NBP/1 reason a flood can provoke past ZeroMQ's prefix filter
/// (every frame starts with `f.`). Headers and payload sizes assume a receiver limited to 4
/// headers and 64 payload bytes.
enum FloodFrame: CaseIterable {
    case wrongFrameCount, missingNameTerminator, invalidUTF8, invalidName, truncatedHeader, unsupportedVersion
    case headerLimitExceeded, payloadTooLarge

    var reason: RejectionReason {
        switch self {
        case .wrongFrameCount: return .wrongFrameCount
        case .missingNameTerminator: return .missingNameTerminator
        case .invalidUTF8: return .invalidUTF8
        case .invalidName: return .invalidName
        case .truncatedHeader: return .truncatedHeader
        case .unsupportedVersion: return .unsupportedVersion
        case .headerLimitExceeded: return .headerLimitExceeded
        case .payloadTooLarge: return .payloadTooLarge
        }
    }

    func frames() throws -> [[UInt8]] {
        let name = Array("f.flood".utf8)
        func valid(headers: NotificationHeaders = [:], payload: [UInt8] = []) throws -> [UInt8] {
            try EnvelopeCodec.encode(
                BusNotification(
                    name: NotificationName("f.flood"), payload: payload, headers: headers, sequence: 1, publisherID: 9,
                    timestamp: 1))
        }
        switch self {
        case .wrongFrameCount: return [try valid(), [0]]
        case .missingNameTerminator: return [Array("f.".utf8) + Array(repeating: UInt8(ascii: "a"), count: 300)]
        case .invalidUTF8: return [Array("f.".utf8) + [0xff, 0]]
        case .invalidName: return [Array("f.a b".utf8) + [0]]
        case .truncatedHeader: return [name + [0]]
        case .unsupportedVersion: return [name + [0, 3]]  // 2 is a batch frame
        case .headerLimitExceeded:
            return [try valid(headers: NotificationHeaders((1...5).map { ("k\($0)", "v") }))]
        case .payloadTooLarge: return [try valid(payload: Array(repeating: 7, count: 65))]
        }
    }
}

@Suite("Receive limits: malformed input is counted and cannot starve valid traffic", .timeLimit(.minutes(1)))
struct ReceiveLimitsTests {
    @Test("A receiver's lower header limit rejects more headers as headerLimitExceeded; NBP/1's 32 stays the ceiling")
    func headerCountLimit() throws {
        let three = try EnvelopeCodec.encode(
            BusNotification(
                name: NotificationName("h.x"), headers: ["a": "1", "b": "2", "c": "3"], sequence: 1, publisherID: 1,
                timestamp: 1))
        #expect(throws: RejectionReason.headerLimitExceeded) {
            try EnvelopeCodec.decode(frame: three, maximumHeaderCount: 2)
        }
        #expect(try EnvelopeCodec.decode(frame: three, maximumHeaderCount: 3).headers.count == 3)
        let tooMany = try #require(ProtocolVector.invalid.first { $0.id == "headers-33" })
        #expect(throws: RejectionReason.headerLimitExceeded) {
            try EnvelopeCodec.decode(frames: tooMany.frameBytes, maximumHeaderCount: 1_000)
        }
    }

    @Test("100,000 malformed frames from a raw publisher: every interleaved valid notification arrives, in order; every bad frame is counted by reason")
    func floodCannotStarveValidTraffic() async throws {
        let floodEndpoint = try temporaryIPCEndpoint("flood.sock")
        let validEndpoint = try temporaryIPCEndpoint("valid.sock")
        var subscriberConfiguration = BusConfiguration.directSubscriber(connect: [floodEndpoint, validEndpoint])
        subscriberConfiguration.maximumPayload = 64
        subscriberConfiguration.maximumHeaderCount = 4
        let subscriber = try Bus(subscriberConfiguration)
        let events = try subscriber.events(named: NamePattern("f.>"))

        var publisherConfiguration = BusConfiguration.directPublisher(bind: validEndpoint)
        publisherConfiguration.publisherBackpressure = true  // lossless, so "all arrive" is exact
        let publisher = try Bus(publisherConfiguration)
        let validName = NotificationName("f.valid")
        try await publisher.waitForSubscribers(count: 1, matching: validName, timeout: .seconds(20))

        // The flooder: its own thread owns a raw XPUB that never drops (blocking sends, bounded by a
        // send timeout), so the counts are exact. It ends with a valid sentinel: one pipe is FIFO, so
        // when the sentinel arrives every flood frame before it has been read.
        let floodCount = 100_000
        let kinds = FloodFrame.allCases
        let frames = try kinds.map { try $0.frames() }
        let sentinel = try EnvelopeCodec.encode(
            BusNotification(name: NotificationName("f.end"), sequence: 1, publisherID: 9, timestamp: 1))
        let context = try Context()
        let floodSent = Atomic<Int>(0)
        let floodFailure = Mutex<String?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let flooder = Thread {
            defer { done.signal() }
            do {
                let raw = try context.socket(.xpub)
                try raw.set(.xpubNoDrop, true)
                try raw.set(.sendTimeout, .milliseconds(20_000))
                try raw.set(.receiveTimeout, .milliseconds(20_000))
                try raw.set(.linger, .milliseconds(5_000))
                try raw.bind(floodEndpoint)
                try raw.awaitSubscription(Array("f.".utf8))
                ready.signal()
                for index in 0..<floodCount {
                    try raw.send(multipart: frames[index % frames.count])
                    floodSent.add(1, ordering: .relaxed)
                }
                try raw.send(sentinel)
                raw.close()
            } catch {
                floodFailure.withLock { $0 = "\(error)" }
                ready.signal()
            }
        }
        flooder.start()
        ready.wait()

        let validCount = 2_000
        let posting = Task {
            for index in 1...validCount { try await publisher.post(name: validName, payload: Array("v\(index)".utf8)) }
        }
        let (valid, floodSentWhenValidDone) = await Task {
            var valid: [UInt64] = []
            var floodSentWhenValidDone = -1
            var sawSentinel = false
            for await event in events {
                guard case .notification(let notification) = event else {
                    Issue.record("unexpected gap: \(event)")
                    continue
                }
                if notification.name == validName {
                    valid.append(notification.sequence)
                    if valid.count == validCount { floodSentWhenValidDone = floodSent.load(ordering: .relaxed) }
                } else if notification.name.rawValue == "f.end" {
                    sawSentinel = true
                } else {
                    Issue.record("a malformed frame was delivered: \(notification)")
                }
                if sawSentinel && valid.count == validCount { break }
            }
            return (valid, floodSentWhenValidDone)
        }.value(within: .seconds(40), "the valid notifications and the flood's sentinel")
        try await posting.value(within: .seconds(30))
        done.wait()
        #expect(floodFailure.withLock { $0 } == nil)
        let stats = await subscriber.close()
        await publisher.close()

        #expect(valid == (1...UInt64(validCount)).map { $0 }, "valid notifications lost, repeated or reordered")
        #expect(events.stats.lostUpstream == 0)
        // Fair queuing between the two pipes: the valid stream finished while the flood was still going.
        #expect(floodSentWhenValidDone >= 0 && floodSentWhenValidDone < floodCount, "valid traffic waited for the flood")
        var expected: [RejectionReason: UInt64] = [:]
        for kind in kinds { expected[kind.reason] = UInt64(floodCount / kinds.count) }
        #expect(stats.rejected == expected)
        #expect(stats.rejectedTotal == UInt64(floodCount))
    }
}
