#if canImport(Glibc)
import Glibc
#endif
import Logging

/// The broker's retained values on disk (`BrokerConfiguration.stateDirectory`): an append-only
/// log of changes, `retained.log` in the directory, one `RetainedLogRecord` (length, CRC-32,
/// payload) per change, read back into the `RetainedStore` when the broker starts.
///
/// Each change is one write(2), with no fsync: what reached the kernel survives the broker's
/// death (a `kill -9` included); a power loss or kernel crash may lose the changes of the last
/// seconds the kernel had not yet written back (the file is never worse than torn at its end,
/// which the next start cuts off). A record that is short or fails its CRC ends the replay: the
/// start logs one warning (offset, records loaded, bytes skipped), truncates the file there and
/// goes on with the good records; damage is never a crash.
///
/// The log is rewritten with only the live values (to a temporary file, fsynced, renamed over
/// it) when it passes twice the live bytes plus 1 MiB, and when the broker stops cleanly. A lock
/// (`flock` on `lock` in the directory) keeps a second broker out of a directory in use.
///
/// Owned by the forwarding thread (opened and read on the thread that makes the broker, before
/// the forwarding thread starts).
final class RetainedLog {
    let directory: String
    let path: String
    private var descriptor: Int32
    private var lockDescriptor: Int32
    /// The log's length as written (bytes).
    private(set) var fileSize: Int
    /// A write failed: the file may end in a torn record, which would hide every later one from
    /// the next start; the next change rewrites the whole file instead of appending.
    private var needsRewrite = false
    /// When a rewrite after a failure was last tried (monotonic ns).
    private var lastRewriteAttempt: UInt64?
    /// A write failure was logged and nothing has succeeded since (one warning per episode).
    private var failureReported = false
    private let logger: Logger?
    /// What the start found: the bytes cut off a damaged end (0 when the log was whole), for
    /// `BrokerStatistics.retainedStateBytesCut`.
    private(set) var loadedAtStart = Loaded(records: 0, values: 0, skippedBytes: 0, damageOffset: nil)
    /// Writes that failed (an append, a rewrite's create, write, fsync, rename or reopen), each
    /// counted though only the first of a run is logged (`BrokerStatistics.retainedStateWriteFailures`).
    private(set) var writeFailures: UInt64 = 0
    private var buffer: [UInt8] = []

    static let fileName = "retained.log"
    static let lockFileName = "lock"
    /// The slack past twice the live bytes before the log is compacted.
    static let compactionSlack = 1 << 20

    /// What `open` read back.
    struct Loaded: Equatable {
        var records: Int
        var values: Int
        /// Bytes cut off the end (damage), 0 when the file was whole.
        var skippedBytes: Int
        /// Where the damage began (the length kept).
        var damageOffset: Int?
    }

    private init(directory: String, path: String, descriptor: Int32, lockDescriptor: Int32, fileSize: Int, logger: Logger?) {
        self.directory = directory
        self.path = path
        self.descriptor = descriptor
        self.lockDescriptor = lockDescriptor
        self.fileSize = fileSize
        self.logger = logger
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
        if lockDescriptor >= 0 { Glibc.close(lockDescriptor) }
    }

    /// Creates `directory` if needed, takes its lock, reads its log into `store` (values whose
    /// `retain-for` passed while the broker was down are dropped) and cuts off a damaged end.
    /// Throws `.invalidConfiguration` naming the directory when it cannot be created or written,
    /// or another broker holds it.
    static func open(directory: String, into store: inout RetainedStore, logger: Logger?) throws(BusError) -> (RetainedLog, Loaded) {
        func failure(_ what: String, _ code: Int32 = errno) -> BusError {
            .invalidConfiguration("stateDirectory \(directory): \(what): \(String(cString: strerror(code)))")
        }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw failure("cannot create it") }
        let lockPath = directory + "/" + lockFileName
        let lockDescriptor = Glibc.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockDescriptor >= 0 else { throw failure("cannot open its lock file \(lockPath)") }
        if !lockBriefly(lockDescriptor) {
            let code = errno
            Glibc.close(lockDescriptor)
            if code == EWOULDBLOCK {
                throw .invalidConfiguration(
                    "stateDirectory \(directory) is in use by another broker (it holds \(lockPath)); give each broker its own directory")
            }
            throw failure("cannot lock \(lockPath)", code)
        }
        let path = directory + "/" + fileName
        let descriptor = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_APPEND, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            Glibc.close(lockDescriptor)
            throw failure("cannot open \(path)", code)
        }
        let log = RetainedLog(directory: directory, path: path, descriptor: descriptor, lockDescriptor: lockDescriptor, fileSize: 0, logger: logger)
        // A device or a FIFO there (a symlink to /dev/zero) would be read for ever.
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw failure("cannot read \(path)") }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw .invalidConfiguration("stateDirectory \(directory): \(path) is not a regular file; remove it or choose another directory")
        }
        guard let bytes = readAll(descriptor) else { throw failure("cannot read \(path)") }
        let replay = bytes.withUnsafeBytes { RetainedLogRecord.decode($0) }
        var loaded = Loaded(records: replay.records.count, values: 0, skippedBytes: 0, damageOffset: nil)
        if replay.damaged {
            loaded.skippedBytes = replay.totalLength - replay.goodLength
            loaded.damageOffset = replay.goodLength
            let damage =
                "retained state \(path) is damaged at byte \(replay.goodLength) (torn or corrupt): loaded "
                + "\(replay.records.count) records, skipped the last \(loaded.skippedBytes) bytes; cutting the file there"
            logger?.warning("\(damage)")
        }
        if replay.goodLength < RetainedLogRecord.fileMagic.count {
            // Empty, or not this log at all: start it afresh.
            guard ftruncate(descriptor, 0) == 0, writeAll(descriptor, RetainedLogRecord.fileMagic) else { throw failure("cannot write \(path)") }
            log.fileSize = RetainedLogRecord.fileMagic.count
        } else {
            if replay.damaged { guard ftruncate(descriptor, off_t(replay.goodLength)) == 0 else { throw failure("cannot truncate \(path)") } }
            log.fileSize = replay.goodLength
        }
        apply(replay.records, to: &store)
        loaded.values = store.count
        logger?.info("retained state \(path): \(store.count) values (\(store.bytes) B) from \(replay.records.count) records")
        log.loadedAtStart = loaded
        log.compactIfLarge(store)
        return (log, loaded)
    }

    /// Puts `records` into `store` in order; a set whose frame is not a retained version 1
    /// frame of its name is skipped (the CRC held, so it was written so: nothing to trust).
    static func apply(_ records: [RetainedLogRecord], to store: inout RetainedStore) {
        let wallNow = Timestamps.wallClockNanoseconds()
        let monotonicNow = Timestamps.monotonicNanoseconds()
        for record in records {
            switch record.operation {
            case .clear:
                guard let name = try? NotificationName(String(decoding: record.name, as: UTF8.self)) else { continue }
                _ = store.clear(name)
            case .set:
                record.frame.withUnsafeBytes { frame in
                    guard let nameLength = try? EnvelopeCodec.nameLength(in: frame), nameLength == record.name.count,
                        frame.prefix(nameLength).elementsEqual(record.name),
                        EnvelopeCodec.retainedFields(frame, validatedNameLength: nameLength) != nil
                    else { return }
                    // An expiry already past stays past (1: the monotonic clock's first instant).
                    let expires: UInt64? =
                        record.expiry == 0
                        ? nil
                        : record.expiry > wallNow ? monotonicNow &+ (record.expiry - wallNow) : min(1, monotonicNow)
                    _ = store.restore(frame: frame, nameLength: nameLength, expires: expires)
                }
            }
        }
        _ = store.dropExpired(now: monotonicNow)
    }

    /// Writes what `store` now holds for the name `nameBytes` (its value, or a clear), after a
    /// post changed it; compacts when the log has grown past twice the live bytes plus 1 MiB.
    func recordChange(nameBytes: UnsafeRawBufferPointer, store: RetainedStore) {
        if needsRewrite {
            // At most one rewrite a second while writing fails (a full disk): each writes every
            // value, and the one that works holds this change too.
            let now = Timestamps.monotonicNanoseconds()
            guard lastRewriteAttempt.map({ now &- $0 >= 1_000_000_000 }) ?? true else { return }
            lastRewriteAttempt = now
            compact(store)
            return
        }
        let name = NotificationName(validatedBytes: nameBytes)
        buffer.removeAll(keepingCapacity: true)
        if let entry = store.entries[name] {
            Self.record(name: nameBytes, entry: entry, wallNow: Timestamps.wallClockNanoseconds(), monotonicNow: Timestamps.monotonicNanoseconds())
                .encode(into: &buffer)
        } else {
            RetainedLogRecord(operation: .clear, name: [UInt8](nameBytes), expiry: 0, frame: []).encode(into: &buffer)
        }
        guard Self.writeAll(descriptor, buffer) else {
            reportFailure("cannot append to \(path)")
            needsRewrite = true
            return
        }
        fileSize += buffer.count
        if buffer.capacity > 1 << 20 { buffer = [] }
        failureReported = false
        compactIfLarge(store)
    }

    private func compactIfLarge(_ store: RetainedStore) {
        if fileSize > 2 * store.bytes + Self.compactionSlack { compact(store) }
    }

    /// Rewrites the log with only `store`'s values (oldest first), to a temporary file that is
    /// fsynced and renamed over it: the log is the old one or the new one, whole, at any instant.
    func compact(_ store: RetainedStore) {
        var bytes = RetainedLogRecord.fileMagic
        let wallNow = Timestamps.wallClockNanoseconds()
        let monotonicNow = Timestamps.monotonicNanoseconds()
        for (name, entry) in store.entriesOldestFirst {
            if let expires = entry.expires, expires <= monotonicNow { continue }
            Array(name.rawValue.utf8).withUnsafeBytes { nameBytes in
                Self.record(name: nameBytes, entry: entry, wallNow: wallNow, monotonicNow: monotonicNow).encode(into: &bytes)
            }
        }
        let temporary = path + ".tmp"
        let file = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard file >= 0 else { return reportFailure("cannot create \(temporary)") }
        guard Self.writeAll(file, bytes), fsync(file) == 0 else {
            let code = errno
            Glibc.close(file)
            unlink(temporary)
            return reportFailure("cannot write \(temporary)", code)
        }
        Glibc.close(file)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            return reportFailure("cannot rename \(temporary) to \(path)", code)
        }
        // The rename itself reaches the disk with the directory's fsync.
        let directoryDescriptor = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            _ = fsync(directoryDescriptor)
            Glibc.close(directoryDescriptor)
        }
        let reopened = Glibc.open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard reopened >= 0 else {
            // The new file is in place and whole; without a descriptor the next change tries again.
            needsRewrite = true
            return reportFailure("cannot reopen \(path)")
        }
        Glibc.close(descriptor)
        descriptor = reopened
        fileSize = bytes.count
        needsRewrite = false
        failureReported = false
    }

    /// Takes `descriptor`'s exclusive lock, trying again for up to half a second: a lock just let
    /// go may still be held for a moment by a copy of the descriptor in a child this process
    /// forked (`O_CLOEXEC` closes it only at its exec; tests that spawn processes met it), or by a
    /// broker that is still exiting. Another broker that keeps it is refused after that.
    private static func lockBriefly(_ descriptor: Int32) -> Bool {
        for attempt in 0..<50 {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK, attempt < 49 else { return false }
            usleep(10_000)
        }
        return false
    }

    /// At a clean stop: compacts, and lets go of the directory's lock.
    func close(_ store: RetainedStore) {
        compact(store)
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
        if lockDescriptor >= 0 { Glibc.close(lockDescriptor) }
        lockDescriptor = -1
    }

    private static func record(name: UnsafeRawBufferPointer, entry: RetainedStore.Entry, wallNow: UInt64, monotonicNow: UInt64) -> RetainedLogRecord {
        // The monotonic expiry as wall-clock time, which survives a restart (and a reboot).
        let expiry = entry.expires.map { expires in expires > monotonicNow ? wallNow &+ (expires - monotonicNow) : max(1, wallNow) } ?? 0
        return RetainedLogRecord(operation: .set, name: [UInt8](name), expiry: expiry, frame: entry.frame)
    }

    private func reportFailure(_ what: String, _ code: Int32 = errno) {
        writeFailures &+= 1
        guard !failureReported else { return }
        failureReported = true
        logger?.warning(
            "retained state: \(what): \(String(cString: strerror(code))); retained values are kept in memory and written again when it works")
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return true }
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, base + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }

    private static func readAll(_ descriptor: Int32) -> [UInt8]? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                buffer.baseAddress.map { Glibc.read(descriptor, $0, buffer.count) } ?? 0
            }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }
}
