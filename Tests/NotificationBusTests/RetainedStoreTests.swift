import Testing
@testable import NotificationBus

// The broker's retained values without sockets (NBP-1 §18): what `RetainedStore` keeps, evicts,
// clears and expires; the snapshot queue's bounds; the snapshot codec on well-formed and
// malformed input.

@Suite("Retained store, snapshot queue and codec", .timeLimit(.minutes(1)))
struct RetainedStoreTests {
    private func value(_ name: String, _ payload: [UInt8] = [1], sequence: UInt64 = 1, headers: NotificationHeaders = [:]) throws
        -> BusNotification
    {
        BusNotification(
            name: try NotificationName(name), payload: payload, headers: headers, sequence: sequence, publisherID: 7,
            flags: WireFormat.Flag.retain)
    }

    private func names(_ frames: [[UInt8]]) throws -> [String] {
        try frames.map { try EnvelopeCodec.decode(frame: $0).name.rawValue }
    }

    @Test("the last value per name is kept; an empty payload clears; past the name bound the oldest update goes")
    func keepsClearsEvicts() throws {
        var store = RetainedStore(maximumNames: 2, maximumBytes: 1 << 20)
        let result1 = try store.remember(try value("a", sequence: 1))
        #expect(result1 == .kept)
        let result2 = try store.remember(try value("b"))
        #expect(result2 == .kept)
        // Updating a makes b the oldest.
        let result3 = try store.remember(try value("a", [2], sequence: 2))
        #expect(result3 == .kept)
        let result4 = try store.remember(try value("c"))
        #expect(result4 == .keptEvicting(count: 1, lastName: "b"))
        var (frames, expired) = store.frames(matching: ">", now: 0)
        #expect(try names(frames) == ["a", "c"])
        #expect(expired == 0)
        let a = try EnvelopeCodec.decode(frame: frames[0])
        #expect(a.sequence == 2 && a.payload == [2] && a.isRetained && a.asksToBeRetained)
        let result5 = try store.remember(try value("a", []))
        #expect(result5 == .cleared)
        (frames, _) = store.frames(matching: ">", now: 0)
        #expect(try names(frames) == ["c"])
        #expect(store.bytes == frames[0].count)
    }

    @Test("past the byte bound the oldest go; a value larger than the bound is not kept and drops the name's old one")
    func byteBound() throws {
        let size = try EnvelopeCodec.encode(try value("n.1", [UInt8](repeating: 0, count: 100))).count
        var store = RetainedStore(maximumNames: 100, maximumBytes: size * 2)
        for index in 1...3 { _ = store.remember(try value("n.\(index)", [UInt8](repeating: 0, count: 100))) }
        #expect(store.count == 2)
        #expect(store.bytes <= size * 2)
        let result6 = try store.remember(try value("n.2", [UInt8](repeating: 0, count: 1_000)))
        #expect(result6 == .tooLarge)
        let result7 = store.frames(matching: "n.*", now: 0)
        #expect(try names(result7.frames) == ["n.3"])
    }

    @Test("listing (/retainedz): totals of all, the first names in byte order, truncated; expired ones dropped and counted")
    func listing() throws {
        var store = RetainedStore(maximumNames: 1_000, maximumBytes: 1 << 20)
        // 50 names in a scrambled order, so the bounded sort (2 x limit at a time) has work to do.
        let all = (0..<50).map { "l.n\(($0 * 37) % 50)" }
        for name in all { _ = store.remember(try value(name)) }
        _ = store.remember(try value("l.a.brief", headers: [WireFormat.retainForHeader: "5"]), now: 1_000)
        _ = store.remember(try value("l.a.long", headers: [WireFormat.retainForHeader: "60000"]), now: 1_000)
        let (listing, expired) = store.listing(limit: 7, now: 1_000 + 10_000_000)
        #expect(expired == 1)
        #expect(listing.count == 51 && listing.count == store.count && listing.bytes == store.bytes)
        #expect(listing.truncated)
        let expected = (["l.a.long"] + all).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(listing.values.map(\.name) == Array(expected.prefix(7)))
        #expect(listing.values.allSatisfy { $0.bytes > $0.name.utf8.count })
        let long = try #require(listing.values.first)
        #expect(long.name == "l.a.long" && long.expiresInSeconds == 59.99, "\(long)")
        #expect(listing.values.dropFirst().allSatisfy { $0.expiresInSeconds == nil })
        // A limit past the count lists every name, not truncated; 0 lists none.
        let whole = store.listing(limit: 1_000, now: 0).listing
        #expect(whole.values.count == 51 && !whole.truncated)
        #expect(store.listing(limit: 0, now: 0).listing.values.isEmpty)
    }

    @Test("a value whose retain-for passed is dropped when a snapshot finds it; a malformed retain-for is ignored")
    func expiry() throws {
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        _ = store.remember(try value("e.short", headers: [WireFormat.retainForHeader: "5"]), now: 1_000)
        _ = store.remember(try value("e.bad", headers: [WireFormat.retainForHeader: "soon"]), now: 1_000)
        _ = store.remember(try value("e.kept"), now: 1_000)
        let result8 = store.frames(matching: "e.*", now: 1_000 + 4_999_999)
        #expect(try names(result8.frames) == ["e.bad", "e.kept", "e.short"])
        let later = store.frames(matching: "e.*", now: 1_000 + 5_000_000)
        #expect(try names(later.frames) == ["e.bad", "e.kept"])
        #expect(later.expired == 1)
        #expect(store.count == 2)
    }

    @Test("a version 1 frame is kept byte for byte as received; empty clears; retain-for read in place; malformed keeps nothing")
    func keepsFramesAsReceived() throws {
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        func remember(_ frame: [UInt8], now: UInt64 = 1_000) throws -> RetainedStore.Outcome? {
            try frame.withUnsafeBytes { bytes in
                store.remember(frame: bytes, nameLength: try EnvelopeCodec.nameLength(in: bytes), now: now)
            }
        }
        let first = try EnvelopeCodec.encode(try value("f.a", [1, 2, 3], sequence: 4, headers: ["k": "v"]))
        #expect(try remember(first) == .kept)
        var (frames, _) = store.frames(matching: "f.*", now: 1_000)
        var expected = first
        expected[4 + WireFormat.FixedHeaderOffset.flags] |= WireFormat.Flag.retainedCopy
        #expect(frames == [expected])
        // A steady-size update overwrites the kept bytes; the byte count does not move.
        let second = try EnvelopeCodec.encode(try value("f.a", [7, 8, 9], sequence: 5, headers: ["k": "v"]))
        #expect(try remember(second) == .kept)
        #expect(store.bytes == second.count)
        (frames, _) = store.frames(matching: "f.*", now: 1_000)
        let decoded = try EnvelopeCodec.decode(frame: frames[0])
        #expect(decoded.payload == [7, 8, 9] && decoded.sequence == 5 && decoded.isRetained && decoded.headers["k"] == "v")
        // A longer value changes the count.
        let longer = try EnvelopeCodec.encode(try value("f.a", [UInt8](repeating: 1, count: 50), sequence: 6))
        #expect(try remember(longer) == .kept)
        #expect(store.bytes == longer.count)
        // retain-for, read from the frame's header map in place.
        let short = try EnvelopeCodec.encode(
            try value("f.b", headers: ["x": "1", WireFormat.retainForHeader: "5", "y": "2"]))
        #expect(try remember(short) == .kept)
        #expect(store.frames(matching: "f.b", now: 1_000 + 5_000_000).expired == 1)
        for bad in ["soon", "+5", "0", "9007199254740993"] {
            let frame = try EnvelopeCodec.encode(try value("f.c", headers: [WireFormat.retainForHeader: bad]))
            #expect(try remember(frame) == .kept)
            #expect(store.frames(matching: "f.c", now: UInt64.max - 1).expired == 0, "\(bad)")
        }
        // Empty payload: cleared.
        #expect(try remember(try EnvelopeCodec.encode(try value("f.a", []))) == .cleared)
        #expect(try remember(try EnvelopeCodec.encode(try value("f.a", []))) == .kept)
        // Malformed after the name (the name-length byte disagrees; the frame cut short): nil, nothing changes.
        var wrongLength = try EnvelopeCodec.encode(try value("f.c", [5]))
        wrongLength[4 + WireFormat.FixedHeaderOffset.nameLength] = 9
        let before = store.bytes
        #expect(try remember(wrongLength) == nil)
        #expect(try remember(Array(wrongLength.prefix(20))) == nil)
        #expect(store.bytes == before)
        // Larger than the whole bound: not kept, the old value dropped.
        var small = RetainedStore(maximumNames: 10, maximumBytes: 64)
        let big = try EnvelopeCodec.encode(try value("f.d", [UInt8](repeating: 0, count: 100)))
        let outcome = big.withUnsafeBytes { small.remember(frame: $0, nameLength: 3, now: 0) }
        #expect(outcome == .tooLarge && small.count == 0)
    }

    @Test("of a batch a keeper keeps only the records that change what is kept (clears, the last of each run), as their version 1 frames")
    func batchRecordsToKeep() throws {
        var plain = try value("k.x", [5], sequence: 5)
        plain.flags = 0
        let records = [
            try value("k.x", [1], sequence: 1), try value("k.x", [2], sequence: 2, headers: ["h": "v"]),
            try value("k.x", [], sequence: 3), try value("k.x", [4], sequence: 4), plain,
        ]
        let batch = try EnvelopeCodec.encodeBatch(records)
        let frames = try #require(batch.withUnsafeBytes { EnvelopeCodec.retainedFramesToKeep(inBatch: $0, validatedNameLength: 3) })
        // Each is the version 1 frame the record's notification encodes to, byte for byte.
        let expected = try [records[1], records[2], records[3]].map { try EnvelopeCodec.encode($0) }
        #expect(frames == expected)
        let kept = try frames.map { try EnvelopeCodec.decode(frame: $0) }
        #expect(kept.map(\.sequence) == [2, 3, 4])
        #expect(kept.map(\.payload) == [[2], [], [4]])
        #expect(kept.allSatisfy { $0.asksToBeRetained && $0.publisherID == 7 })
        // A batch receivers would reject keeps nothing.
        let cut = Array(batch.dropLast())
        #expect(cut.withUnsafeBytes { EnvelopeCodec.retainedFramesToKeep(inBatch: $0, validatedNameLength: 3) } == nil)
    }

    @Test("a batch without clears hands over only its last value, written into one reused buffer")
    func batchLastValueIntoScratch() throws {
        var scratch: [UInt8] = []
        // A long batch, then a shorter one: the buffer holds the second's frame alone.
        for (payloadSize, count) in [(300, 13), (20, 3)] {
            let records = try (1...count).map { try value("k.y", [UInt8](repeating: UInt8(count), count: payloadSize), sequence: UInt64($0)) }
            let batch = try EnvelopeCodec.encodeBatch(records)
            var handed: [[UInt8]] = []
            let valid = batch.withUnsafeBytes {
                EnvelopeCodec.forEachRetainedFrameToKeep(inBatch: $0, validatedNameLength: 3, scratch: &scratch) { handed.append(Array($0)) }
            }
            #expect(valid)
            #expect(handed == [try EnvelopeCodec.encode(records[count - 1])])
        }
        // Malformed: nothing handed over.
        let batch = try EnvelopeCodec.encodeBatch([try value("k.y", [1], sequence: 1)])
        var called = false
        let valid = Array(batch.dropLast()).withUnsafeBytes {
            EnvelopeCodec.forEachRetainedFrameToKeep(inBatch: $0, validatedNameLength: 3, scratch: &scratch) { _ in called = true }
        }
        #expect(!valid && !called)
    }

    @Test("many updates of a few names keep the eviction order compact and right")
    func orderStaysBounded() throws {
        var store = RetainedStore(maximumNames: 3, maximumBytes: 1 << 20)
        for round in 0..<1_000 { _ = store.remember(try value("o.\(round % 3)", sequence: UInt64(round + 1))) }
        let result9 = try store.remember(try value("o.new"))
        #expect(result9 == .keptEvicting(count: 1, lastName: "o.1"))
        let result10 = store.frames(matching: "o.*", now: 0)
        #expect(try names(result10.frames) == ["o.0", "o.2", "o.new"])
    }

    @Test("the snapshot queue ends each snapshot with its final frame and drops the head's rest on demand")
    func snapshotQueue() throws {
        var queue = RetainedSnapshotQueue(publisherID: 9)
        let entry = try EnvelopeCodec.encode(try value("q.a", [UInt8](repeating: 1, count: 40_000)))
        let result11 = try queue.enqueue(reply: "_nbus.retained.0000000000000001.1", entries: [entry, entry], takesAll: true, now: 0)
        #expect(result11)
        let result12 = queue.enqueue(reply: "_nbus.retained.0000000000000001.2", entries: [], takesAll: false, now: 0)
        #expect(result12)
        #expect(queue.pendingSnapshots == 2)
        // Two 40 kB entries go in two frames (64 KiB a frame): dropping the head drops both.
        let result13 = queue.dropHead()
        #expect(result13 == 2)
        #expect(queue.pendingSnapshots == 1)
        let last = try EnvelopeCodec.decode(frame: try #require(queue.next))
        #expect(last.name.rawValue == "_nbus.retained.0000000000000001.2")
        #expect(last.headers["final"] == "1" && last.headers["count"] == "0" && last.headers["takes-all"] == "0")
        let result14 = queue.sent()
        #expect(result14)
        #expect(queue.isEmpty && queue.pendingBytes == 0)
    }

    @Test("snapshot codec: payload entries round-trip, malformed lengths and requests are refused, retain bits read from batches")
    func codec() throws {
        let frames = [[UInt8](repeating: 1, count: 10), [UInt8](repeating: 2, count: 70_000), [3]]
        let payloads = RetainedSnapshot.payloads(entries: frames)
        #expect(payloads.count == 3)
        #expect(payloads.flatMap { RetainedSnapshot.entries(in: $0) ?? [] }.map(Array.init) == frames)
        #expect(RetainedSnapshot.entries(in: [0, 0, 0, 5, 1]) == nil)
        #expect(RetainedSnapshot.payloads(entries: []) == [[]])

        let topic = RetainedSnapshot.requestTopic(bus: 0xab, token: 12, pattern: "prices.>")
        let parsed = try #require(RetainedSnapshot.parseRequest(topic))
        #expect(parsed.replyName.rawValue == "_nbus.retained.00000000000000ab.12" && parsed.pattern == "prices.>")
        for bad in ["\u{0}nbus.retained.xyz", "\u{0}nbus.retained.00000000000000ab.x.a", "\u{0}nbus.retained.00000000000000ab.1.a..b"] {
            #expect(RetainedSnapshot.parseRequest(Array(bad.utf8)) == nil, "\(bad)")
        }

        var plain = try value("b.x")
        plain.flags = 0
        var plainToo = try value("b.x", sequence: 2)
        plainToo.flags = 0
        let kept = try value("b.x", sequence: 2)
        for (notifications, expected) in [([plain, plainToo], false), ([plain, kept], true)] {
            let batch = try EnvelopeCodec.encodeBatch(notifications)
            let carries = batch.withUnsafeBytes { RetainedSnapshot.carriesRetain($0, nameLength: 3) }
            #expect(carries == expected)
        }
        let single = try EnvelopeCodec.encode(kept)
        #expect(single.withUnsafeBytes { RetainedSnapshot.carriesRetain($0, nameLength: 3) })
        // Cut short: nothing to say, never a trap.
        #expect(!single.prefix(5).withUnsafeBytes { RetainedSnapshot.carriesRetain($0, nameLength: 3) })
    }
}
