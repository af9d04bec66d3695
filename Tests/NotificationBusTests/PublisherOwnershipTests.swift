import NBP1
import Testing

@testable import NotificationBus

// The broker's rule that a publisher id belongs to the connection (with CURVE: the key) that used
// it first, fed by hand (no sockets); the end-to-end test with real processes is in
// ForgedPublisherTests.
@Suite("PublisherOwnership (socket-free)")
struct PublisherOwnershipTests {
    typealias Claimant = PublisherOwnership.Claimant

    @Test("the first connection to use an id owns it; another connection is refused while it is open")
    func firstConnectionOwns() {
        var table = PublisherOwnership()
        let victim = Claimant(descriptor: 12, key: nil)
        let forger = Claimant(descriptor: 13, key: nil)
        #expect(table.check(7, from: victim) == .accepted)
        #expect(table.check(7, from: victim) == .accepted)
        #expect(table.check(7, from: forger) == .refused(owner: victim))
        // The forger's own id is its own.
        #expect(table.check(8, from: forger) == .accepted)
        #expect(table.check(8, from: victim) == .refused(owner: forger))
        #expect(table.count == 2)
    }

    @Test("a closed connection's ids are forgotten: the next connection to use one owns it")
    func closedConnectionIsForgotten() {
        var table = PublisherOwnership()
        let first = Claimant(descriptor: 12, key: nil)
        let second = Claimant(descriptor: 13, key: nil)
        #expect(table.check(7, from: first) == .accepted)
        table.connectionClosed(descriptor: 12)
        #expect(table.count == 0)
        #expect(table.check(7, from: second) == .accepted)
        #expect(table.check(7, from: first) == .refused(owner: second))
    }

    @Test("with CURVE an id belongs to the key: the same key on a new connection keeps it, another key never gets it")
    func keyOwnsWithCurve() {
        var table = PublisherOwnership()
        let victim = Claimant(descriptor: 12, key: "victim-key")
        let reconnected = Claimant(descriptor: 20, key: "victim-key")
        let forger = Claimant(descriptor: 13, key: "forger-key")
        #expect(table.check(7, from: victim) == .accepted)
        #expect(table.check(7, from: forger) == .refused(owner: victim))
        // Its connection ends: still the key's, so a crashed publisher cannot be spoken for.
        table.connectionClosed(descriptor: 12)
        #expect(table.check(7, from: forger) == .refused(owner: Claimant(descriptor: 12, key: "victim-key")))
        #expect(table.check(7, from: reconnected) == .accepted)
        #expect(table.check(7, from: forger) == .refused(owner: reconnected))
    }

    @Test("bounded: a connection making up ids keeps at most idsPerConnection, departed keys at most departedCapacity")
    func bounded() {
        var table = PublisherOwnership()
        let flooder = Claimant(descriptor: 30, key: "k")
        for id in 1...UInt64(PublisherOwnership.idsPerConnection * 3) {
            #expect(table.check(id, from: flooder) == .accepted)
        }
        #expect(table.count == PublisherOwnership.idsPerConnection)
        // The forgotten ones are simply taken again by whoever uses them next.
        #expect(table.check(1, from: Claimant(descriptor: 31, key: "other")) == .accepted)
        // Departed ids stay bound to their key, within a bound.
        for descriptor in Int32(100)..<Int32(110) {
            for id in 0..<UInt64(PublisherOwnership.idsPerConnection) {
                _ = table.check(UInt64(descriptor) << 32 | id, from: Claimant(descriptor: descriptor, key: "k\(descriptor)"))
            }
            table.connectionClosed(descriptor: descriptor)
        }
        table.connectionClosed(descriptor: 30)
        table.connectionClosed(descriptor: 31)
        #expect(table.count <= PublisherOwnership.departedCapacity)
    }

    @Test("a publisher that redialled (its old connection hung up) takes its id over; the old one's rest still passes")
    func transferAfterHangUp() {
        var table = PublisherOwnership()
        let old = Claimant(descriptor: 12, key: nil)
        let redialled = Claimant(descriptor: 15, key: nil)
        let forger = Claimant(descriptor: 16, key: nil)
        #expect(table.check(7, from: old) == .accepted)
        #expect(table.check(7, from: redialled) == .refused(owner: old))
        table.transfer(7, to: redialled)
        #expect(table.check(7, from: redialled) == .accepted)
        // What libzmq still reads from the old connection is the same publisher's.
        #expect(table.check(7, from: old) == .accepted)
        #expect(table.check(7, from: forger) == .refused(owner: redialled))
        // Once the old connection's close is read, its descriptor (reused by someone else) is no one's.
        table.connectionClosed(descriptor: 12)
        #expect(table.check(7, from: old) == .refused(owner: redialled))
        #expect(table.check(7, from: redialled) == .accepted)
        table.connectionClosed(descriptor: 15)
        #expect(table.count == 0)
    }

    @Test("forgetAll (a memory reset ends every connection unreported) frees every plaintext id")
    func forgetAll() {
        var table = PublisherOwnership()
        #expect(table.check(7, from: Claimant(descriptor: 12, key: nil)) == .accepted)
        table.forgetAll()
        #expect(table.check(7, from: Claimant(descriptor: 14, key: nil)) == .accepted)
    }

    @Test("the publisher id is read from version 1 and batch frames, and from nothing else")
    func publisherIDOfFrames() throws {
        let single = try EnvelopeCodec.encode(BusNotification(name: NotificationName("a.b"), sequence: 3, publisherID: 0xABCD))
        #expect(single.withUnsafeBytes { EnvelopeCodec.publisherID(inEncodedFrame: $0) } == 0xABCD)
        let records = try (1...3).map { try BusNotification(name: NotificationName("a.b"), sequence: $0, publisherID: 0x1234) }
        let batch = try EnvelopeCodec.encodeBatch(records)
        #expect(batch.withUnsafeBytes { EnvelopeCodec.publisherID(inEncodedFrame: $0) } == 0x1234)
        for garbage in [[UInt8](), Array("no nul".utf8), [0, 1, 2], Array("a.b".utf8) + [0, 1, 0], Array("a.b".utf8) + [0, 9] + [UInt8](repeating: 0, count: 40)] {
            #expect(garbage.withUnsafeBytes { EnvelopeCodec.publisherID(inEncodedFrame: $0) } == nil)
        }
    }
}
