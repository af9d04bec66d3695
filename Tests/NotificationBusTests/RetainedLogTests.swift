import Foundation
import TestSupport
import Testing

@testable import NotificationBus

// The broker's on-disk retained values (`RetainedLog`, `BrokerConfiguration.stateDirectory`)
// without sockets: the record codec on whole, truncated and corrupted input, the log's replay,
// compaction, expiry across a restart, and its lock.

@Suite("Retained log: codec, replay, compaction, lock", .timeLimit(.minutes(1)))
struct RetainedLogTests {
    /// A retained notification; `retainFor` in milliseconds (the `retain-for` header).
    private func notification(_ name: String, _ payload: [UInt8], retainFor: Int? = nil) throws -> BusNotification {
        BusNotification(
            name: try NotificationName(name), payload: payload,
            headers: retainFor.map { [WireFormat.retainForHeader: String($0)] } ?? [:], sequence: 1, publisherID: 7,
            flags: WireFormat.Flag.retain)
    }

    private func records() throws -> [RetainedLogRecord] {
        [
            RetainedLogRecord(operation: .set, name: Array("a.b".utf8), expiry: 0, frame: try EnvelopeCodec.encode(try notification("a.b", [1, 2]))),
            RetainedLogRecord(operation: .clear, name: Array("c".utf8), expiry: 0, frame: []),
            RetainedLogRecord(
                operation: .set, name: Array("d".utf8), expiry: 1_234_567_890_123, frame: try EnvelopeCodec.encode(try notification("d", [9]))),
        ]
    }

    private func file(_ records: [RetainedLogRecord]) -> [UInt8] {
        var bytes = RetainedLogRecord.fileMagic
        for record in records { record.encode(into: &bytes) }
        return bytes
    }

    @Test("CRC-32 is zlib's (the check value of \"123456789\")")
    func crcCheckValue() {
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32.checksum($0) } == 0xCBF4_3926)
    }

    @Test("records round-trip, in order, the whole file good")
    func roundTrip() throws {
        let records = try records()
        let bytes = file(records)
        let replay = bytes.withUnsafeBytes { RetainedLogRecord.decode($0) }
        #expect(replay.records == records)
        #expect(replay.goodLength == bytes.count && !replay.damaged)
        let empty = [UInt8]().withUnsafeBytes { RetainedLogRecord.decode($0) }
        #expect(empty.records.isEmpty && !empty.damaged)
    }

    @Test("every truncation keeps exactly the whole records before the cut")
    func everyTruncation() throws {
        let records = try records()
        let bytes = file(records)
        var ends = [RetainedLogRecord.fileMagic.count]
        for record in records { ends.append(ends[ends.count - 1] + record.encoded.count) }
        for length in 0...bytes.count {
            let replay = bytes.prefix(length).withUnsafeBytes { RetainedLogRecord.decode(UnsafeRawBufferPointer($0)) }
            let whole = ends.filter { $0 <= length }
            // Inside the magic nothing is good; past it, the records that end by the cut.
            let expected = whole.isEmpty ? 0 : whole.count - 1
            #expect(replay.records == Array(records.prefix(expected)), "cut at \(length)")
            #expect(replay.goodLength == (whole.last ?? 0), "cut at \(length)")
            #expect(replay.damaged == (length != (whole.last ?? 0)), "cut at \(length)")
        }
    }

    @Test("a flipped bit anywhere ends the replay at or before its record; the records before it survive")
    func everyFlippedBit() throws {
        let records = try records()
        let bytes = file(records)
        var ends = [RetainedLogRecord.fileMagic.count]
        for record in records { ends.append(ends[ends.count - 1] + record.encoded.count) }
        for index in 0..<bytes.count {
            for bit in [0, 3, 7] {
                var damaged = bytes
                damaged[index] ^= UInt8(1 << bit)
                let replay = damaged.withUnsafeBytes { RetainedLogRecord.decode($0) }
                // The record that holds the flipped byte and every one after it are lost.
                let holding = ends.firstIndex { $0 > index } ?? ends.count
                let before = max(0, holding - 1)
                #expect(replay.records == Array(records.prefix(before)), "byte \(index) bit \(bit)")
                #expect(replay.damaged, "byte \(index) bit \(bit)")
            }
        }
    }

    @Test("changes written, read back into a new store: values, clears and order; a damaged end is cut and reported")
    func replayAndDamage() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let directory = folder.file("state")
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        do {
            let (log, loaded) = try RetainedLog.open(directory: directory, into: &store, logger: nil)
            #expect(loaded == RetainedLog.Loaded(records: 0, values: 0, skippedBytes: 0, damageOffset: nil))
            for (name, payload) in [("a", [UInt8]([1])), ("b", [2]), ("c", [3]), ("a", [4]), ("b", [])] {
                _ = store.remember(try notification(name, payload))
                Array(name.utf8).withUnsafeBytes { log.recordChange(nameBytes: $0, store: store) }
            }
        }
        var restored = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        do {
            let (_, loaded) = try RetainedLog.open(directory: directory, into: &restored, logger: nil)
            #expect(loaded.records == 5 && loaded.values == 2 && loaded.damageOffset == nil)
            #expect(restored.frames(matching: ">", now: 0).frames == store.frames(matching: ">", now: 0).frames)
        }

        let path = directory + "/" + RetainedLog.fileName
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        try Data(whole + [7, 0, 0, 0, 1]).write(to: URL(fileURLWithPath: path))
        var afterDamage = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        let (_, loaded) = try RetainedLog.open(directory: directory, into: &afterDamage, logger: nil)
        #expect(loaded == RetainedLog.Loaded(records: 5, values: 2, skippedBytes: 5, damageOffset: whole.count))
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == whole)
    }

    @Test("a file that is not this log is not read; it is started afresh")
    func foreignFile() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let directory = folder.file("state")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        try Data("hello, world\n".utf8).write(to: URL(fileURLWithPath: directory + "/" + RetainedLog.fileName))
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        let (_, loaded) = try RetainedLog.open(directory: directory, into: &store, logger: nil)
        #expect(loaded == RetainedLog.Loaded(records: 0, values: 0, skippedBytes: 13, damageOffset: 0))
        #expect(store.count == 0)
    }

    @Test("a log path that is not a regular file (a symlink to /dev/zero) is refused, not read for ever")
    func notARegularFile() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let directory = folder.file("state")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: directory + "/" + RetainedLog.fileName, withDestinationPath: "/dev/zero")
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        #expect {
            _ = try RetainedLog.open(directory: directory, into: &store, logger: nil)
        } throws: { error in
            "\(error)".contains("is not a regular file")
        }
    }

    @Test("past twice the live bytes plus 1 MiB the log is rewritten with the live values only")
    func compaction() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let directory = folder.file("state")
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        let (log, _) = try RetainedLog.open(directory: directory, into: &store, logger: nil)
        let payload = [UInt8](repeating: 5, count: 1_000)
        var largest = 0
        for round in 0..<3_000 {
            _ = store.remember(try notification("n\(round % 3)", payload))
            Array("n\(round % 3)".utf8).withUnsafeBytes { log.recordChange(nameBytes: $0, store: store) }
            largest = max(largest, log.fileSize)
        }
        #expect(largest <= 2 * store.bytes + RetainedLog.compactionSlack + 2_000)
        // 3 MB written in all: compacted at least once.
        #expect(log.fileSize < 3_000 * 1_000 / 2)
        log.close(store)
        #expect(log.fileSize < store.bytes + 200)
        var restored = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        _ = try RetainedLog.open(directory: directory, into: &restored, logger: nil)
        #expect(restored.frames(matching: ">", now: 0).frames == store.frames(matching: ">", now: 0).frames)
    }

    @Test("retain-for counts across a restart: a value whose time passed while the log was closed is not served")
    func expiryAcrossRestart() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let directory = folder.file("state")
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        do {
            let (log, _) = try RetainedLog.open(directory: directory, into: &store, logger: nil)
            let now = Timestamps.monotonicNanoseconds()
            // Posted ten seconds ago for one millisecond: long gone.
            _ = store.remember(try notification("gone", [1], retainFor: 1), now: now - 10_000_000_000)
            _ = store.remember(try notification("kept", [2], retainFor: 3_600_000), now: now)
            _ = store.remember(try notification("always", [3]), now: now)
            for name in ["gone", "kept", "always"] { Array(name.utf8).withUnsafeBytes { log.recordChange(nameBytes: $0, store: store) } }
        }
        var restored = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        _ = try RetainedLog.open(directory: directory, into: &restored, logger: nil)
        let names = try restored.frames(matching: ">", now: Timestamps.monotonicNanoseconds()).frames.map {
            try EnvelopeCodec.decode(frame: $0).name.rawValue
        }
        #expect(names == ["always", "kept"])
        let kept = try #require(restored.entries[try NotificationName("kept")]?.expires)
        // Still about an hour to go (monotonic ns).
        #expect(kept > Timestamps.monotonicNanoseconds() + 3_500 * 1_000_000_000)
    }

    @Test("a second open of a directory in use is refused, naming it; free again once the first closes")
    func lock() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let directory = folder.file("state")
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        let (first, _) = try RetainedLog.open(directory: directory, into: &store, logger: nil)
        var other = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        #expect {
            _ = try RetainedLog.open(directory: directory, into: &other, logger: nil)
        } throws: { error in
            "\(error)".contains("is in use by another broker") && "\(error)".contains(directory)
        }
        first.close(store)
        _ = try RetainedLog.open(directory: directory, into: &other, logger: nil)
    }

    @Test("stateDirectory is checked: needs retained names, a directory (or a creatable one), not a file")
    func configurationChecks() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        var configuration = BrokerConfiguration(frontend: "inproc://f", backend: "inproc://b")
        configuration.stateDirectory = folder.file("new")
        #expect(configuration.invalidSetting()?.setting == .stateDirectory)
        configuration.retainedNames = 10
        #expect(configuration.invalidSetting() == nil)
        configuration.stateDirectory = folder.file("missing/new")
        #expect(configuration.invalidSetting()?.reason.contains("its parent") == true)
        FileManager.default.createFile(atPath: folder.file("plain"), contents: Data())
        configuration.stateDirectory = folder.file("plain")
        #expect(configuration.invalidSetting()?.reason.contains("not a file") == true)
        configuration.stateDirectory = ""
        #expect(configuration.invalidSetting()?.reason.contains("not empty") == true)
    }

    @Test("a broker counts the damage its start cut off, and writes to the log that fail (a rewrite that cannot create its file)")
    func brokerCountsDamageAndWriteFailures() async throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let directory = folder.file("state")
        var store = RetainedStore(maximumNames: 10, maximumBytes: 1 << 20)
        do {
            let (log, _) = try RetainedLog.open(directory: directory, into: &store, logger: nil)
            _ = store.remember(try notification("a", [1]))
            Array("a".utf8).withUnsafeBytes { log.recordChange(nameBytes: $0, store: store) }
            log.close(store)
        }
        let path = directory + "/" + RetainedLog.fileName
        let whole = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        try Data(whole + [7, 0, 0, 0, 1]).write(to: URL(fileURLWithPath: path))
        // The rewrite at a clean stop writes `retained.log.tmp` first: a directory there fails it.
        #expect(mkdir(path + ".tmp", 0o700) == 0)

        var configuration = BrokerConfiguration(frontend: folder.ipc("f.sock"), backend: folder.ipc("b.sock"))
        configuration.retainedNames = 10
        configuration.stateDirectory = directory
        let broker = try Broker(configuration)
        let started = await broker.statistics()
        #expect(started.retainedStateDamaged == 1 && started.retainedStateBytesCut == 5)
        #expect(started.retainedStateWriteFailures == 0 && started.retainedNames == 1)
        let stopped = await broker.stop()
        #expect(stopped.retainedStateWriteFailures == 1)
    }
}
