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

    @Test("with CURVE a listed key's tagged ids are its own from the list: a fresh table (a restart) refuses another key")
    func taggedIDsBelongToTheirListedKey() {
        let victimKey: [UInt8] = [0xAB, 0xCD, 0x01, 0x02] + Array(repeating: 7, count: 28)
        let forgerKey: [UInt8] = [0x11, 0x22, 0x33, 0x44] + Array(repeating: 9, count: 28)
        // A fresh table: what a broker holds after a restart or a memory reset.
        var table = PublisherOwnership(listedKeys: [("victim", victimKey), ("forger", forgerKey)])
        let victimID = PublisherKeyTag.id(0x0000_0000_1234_5678, taggedWith: 0xABCD_0102)
        #expect(victimID == 0xABCD_0102_1234_5678)
        let forger = Claimant(descriptor: 13, key: "forger")
        // The forger comes first: the table is empty, yet the tag says whose the id is.
        #expect(table.check(victimID, from: forger) == .refused(owner: Claimant(descriptor: -1, key: "victim")))
        #expect(table.count == 0)
        let victim = Claimant(descriptor: 12, key: "victim")
        #expect(table.check(victimID, from: victim) == .accepted)
        // The victim crashes and its departed entry is flushed: still refused, by the tag.
        table.connectionClosed(descriptor: 12)
        for descriptor: Int32 in 100..<106 {
            for id in 0..<UInt64(PublisherOwnership.idsPerConnection) {
                _ = table.check(PublisherKeyTag.id(id, taggedWith: 0x1122_3344), from: Claimant(descriptor: descriptor, key: "forger"))
            }
            table.connectionClosed(descriptor: descriptor)
        }
        #expect(table.check(victimID, from: forger) == .refused(owner: Claimant(descriptor: -1, key: "victim")))
        // The forger's own tagged ids, and untagged (random) ids, follow the first-connection rule.
        #expect(table.check(PublisherKeyTag.id(5, taggedWith: 0x1122_3344), from: forger) == .accepted)
        #expect(table.check(0x0000_0001_0000_0005, from: forger) == .accepted)
        // A connection without a key (an upstream link) is not judged by tags.
        #expect(table.check(PublisherKeyTag.id(99, taggedWith: 0xABCD_0102), from: Claimant(descriptor: 14, key: nil)) == .accepted)
        // A key's tag is its first four bytes, big-endian; a key of another size has none.
        #expect(PublisherKeyTag.tag(ofPublicKey: victimKey) == 0xABCD_0102)
        #expect(PublisherKeyTag.tag(ofPublicKey: [1, 2, 3]) == nil)
        #expect(PublisherKeyTag.id(0xFFFF_FFFF_0000_0000, taggedWith: 0) == 1)
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
