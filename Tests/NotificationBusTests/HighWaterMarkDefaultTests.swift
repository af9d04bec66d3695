import NotificationBus
import Testing

/// The ZeroMQ marks' defaults follow the attachments (issue 41): over tcp, where a full receiver
/// stops reading and the sender's budget or back-pressure takes over, a tenth of the frames stay
/// in the process; elsewhere the old 10,000, and a value set is kept as set.
@Suite("High-water mark defaults", .timeLimit(.minutes(1)))
struct HighWaterMarkDefaultTests {
    @Test("a subscriber whose attachments are all tcp keeps what its byte bound allows; ipc, inproc or a mix keep 10,000")
    func receiveMarkFollowsTransport() {
        // 64 MiB of NBP/1's largest frames (1 MiB payloads): 63, raised to the floor of 64.
        #expect(BusConfiguration.brokered(frontends: [], backends: ["tcp://127.0.0.1:5551"]).receiveHighWaterMark == 64)
        #expect(BusConfiguration(subscribe: [.connect("TCP://a:1"), .connect("tcp://b:2")]).receiveHighWaterMark == 64)
        #expect(BusConfiguration(subscribe: [.connect("ipc:///tmp/x.sock")]).receiveHighWaterMark == 10_000)
        #expect(BusConfiguration(subscribe: [.connect("tcp://a:1"), .connect("ipc:///tmp/x.sock")]).receiveHighWaterMark == 10_000)
        #expect(BusConfiguration.embedded().receiveHighWaterMark == 10_000)
        #expect(BusConfiguration(publish: [.bind("tcp://*:5550")]).receiveHighWaterMark == 10_000)
    }

    @Test("over tcp the mark follows the byte bound and the largest payload, 64 to 1,000 frames")
    func receiveMarkFollowsByteBound() {
        var configuration = BusConfiguration.brokered(frontends: [], backends: ["tcp://127.0.0.1:5551"])
        configuration.maximumPayload = 16 << 10
        #expect(configuration.receiveHighWaterMark == 1_000)  // 64 MiB of 16 KiB frames: more than 1,000
        configuration.maximumPayload = 256 << 10
        #expect(configuration.receiveHighWaterMark == 251)  // 64 MiB of NBP/1 frames just over 256 KiB
        configuration.subscriptionBufferBytes = 0
        #expect(configuration.receiveHighWaterMark == 1_000)  // no byte bound: as before
        configuration.subscriptionBufferBytes = 1 << 20
        #expect(configuration.receiveHighWaterMark == 64)
    }

    @Test("a publisher that waits keeps 4 MiB of batch frames over tcp, 40 MiB otherwise; one that does not wait 10,000 frames")
    func sendMarkFollowsTransport() {
        // 1,000 and 10,000 frames of 4 KiB, in the default 32 KiB batch frames: 125 and 1,250.
        let brokered = BusConfiguration.brokered(frontends: ["tcp://127.0.0.1:5550"], backends: [])
        #expect(brokered.publisherBackpressure && brokered.sendHighWaterMark == 125)
        let overIPC = BusConfiguration(publish: [.connect("ipc:///tmp/f.sock")])
        #expect(overIPC.publisherBackpressure && overIPC.sendHighWaterMark == 1_250)
        // Not waiting, a publisher drops past its mark: not converted (a lone post is a frame).
        let binding = BusConfiguration(publish: [.bind("tcp://127.0.0.1:5550")])
        #expect(!binding.publisherBackpressure && binding.sendHighWaterMark == 10_000)
        var noWait = brokered
        noWait.publisherBackpressure = false
        #expect(noWait.sendHighWaterMark == 10_000)
        #expect(BusConfiguration().sendHighWaterMark == 10_000)
    }

    @Test("the send mark holds the same bytes whatever the batch frame: frames of 4 KiB or less and batching off keep the counts, larger ones fewer, at least 64")
    func sendMarkFollowsBatchFrame() {
        var configuration = BusConfiguration.brokered(frontends: ["tcp://127.0.0.1:5550"], backends: [])
        configuration.batching = .off
        #expect(configuration.sendHighWaterMark == 1_000)
        configuration.batching = Batching(maximumFrameBytes: 4 * 1024)
        #expect(configuration.sendHighWaterMark == 1_000)
        configuration.batching = Batching(maximumFrameBytes: 2 * 1024)
        #expect(configuration.sendHighWaterMark == 1_000)
        configuration.batching = Batching(maximumFrameBytes: 16 * 1024)
        #expect(configuration.sendHighWaterMark == 250)
        configuration.batching = Batching(maximumFrameBytes: 1 << 20)
        #expect(configuration.sendHighWaterMark == 64)
        configuration.publisherBackpressure = false
        #expect(configuration.sendHighWaterMark == 10_000)
        var overIPC = BusConfiguration(publish: [.connect("ipc:///tmp/f.sock")])
        overIPC.batching = Batching(maximumFrameBytes: 64 * 1024)
        #expect(overIPC.sendHighWaterMark == 625)
    }

    @Test("a mark that is set stays as set")
    func setMarksAreKept() {
        var configuration = BusConfiguration.brokered(frontends: ["tcp://a:1"], backends: ["tcp://a:2"])
        configuration.receiveHighWaterMark = 10_000
        configuration.sendHighWaterMark = 7
        #expect(configuration.receiveHighWaterMark == 10_000 && configuration.sendHighWaterMark == 7)
    }
}
