import Testing
import ZeroMQ

@testable import NotificationBus
import TestSupport

// NBP-1 §15 reserves every name whose first token is `_nbus`, and §13 lets new control messages
// appear under it without a new version: a bus neither posts such a name nor delivers one.
@Suite("Reserved names: the first token _nbus", .timeLimit(.minutes(1)))
struct ReservedNamesTests {
    @Test("_nbus itself and names under it are reserved; _nbusy and x._nbus are not")
    func reservedFirstToken() throws {
        for text in ["_nbus", "_nbus.foo", "_nbus.ready.x"] {
            #expect(ControlNames.isReserved(try NotificationName(text)), "\(text)")
        }
        for text in ["_nbusy", "_nbusx.a", "x._nbus", "nbus"] {
            #expect(!ControlNames.isReserved(try NotificationName(text)), "\(text)")
        }
    }

    @Test("post refuses the bare _nbus (it used to be sent and delivered)")
    func postRefusesBareToken() async throws {
        let bus = try Bus(.embedded())
        await #expect(throws: BusError.reservedName(NotificationName("_nbus"))) {
            try await bus.post(name: "_nbus", payload: [1])
        }
        await bus.close()
    }

    @Test("a subscriber of '>' gets no unknown control message: _nbus.foo and _nbus are dropped and counted")
    func unknownControlNamesAreNotDelivered() async throws {
        let endpoint = try temporaryIPCEndpoint("control.sock")
        let context = try Context()
        defer { context.terminate() }
        let raw = try context.socket(.xpub)
        defer { raw.close() }
        try raw.set(.linger, .zero)
        try raw.set(.receiveTimeout, .milliseconds(10_000))
        try raw.bind(endpoint)
        let subscriber = try Bus(.directSubscriber(connect: [endpoint]))
        let everything = try subscriber.notifications(named: NamePattern(">"))
        // The pattern '>' subscribes the empty prefix: wait until the raw publisher has it.
        try raw.awaitSubscription([])
        for (index, name) in ["_nbus.foo", "_nbus", "x.end"].enumerated() {
            let notification = BusNotification(
                name: try NotificationName(name), sequence: UInt64(index + 1), publisherID: 7, timestamp: 1)
            try raw.send(try EnvelopeCodec.encode(notification))
        }
        let first = await everything.first(1).first
        #expect(first?.name.rawValue == "x.end", "a control message reached the application: \(String(describing: first))")
        #expect(subscriber.stats.unknownControlMessages == 2)
        await subscriber.close()
    }
}
