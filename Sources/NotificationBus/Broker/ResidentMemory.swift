#if canImport(Glibc)
import Glibc
#endif

/// This process's resident memory in bytes (`/proc/self/statm`, second field, in pages), or nil
/// when it cannot be read. A read of a tiny file: cheap enough for a few looks a second.
func residentMemoryBytes() -> UInt64? {
    let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    // "size resident shared ...": the second number.
    let fields = buffer[0..<count].split(separator: UInt8(ascii: " "))
    guard fields.count >= 2 else { return nil }
    var pages: UInt64 = 0
    for byte in fields[1] {
        guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
        pages = pages &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
    }
    return pages &* UInt64(max(1, sysconf(Int32(_SC_PAGESIZE))))
}

/// How often a memory guard (the broker's, a binding bus's) looks at resident memory, and how long
/// it leaves a reset's memory to come back before it may reset again, in nanoseconds. A local
/// sender writes about a gigabyte a second into an unfinished message: each millisecond between
/// looks is a megabyte past the limit, and a look costs a few microseconds.
enum MemoryGuardTiming {
    /// Between two looks: 25 ms (about 25 MB past the limit at local speed).
    static let checkInterval: UInt64 = 25_000_000
    /// The same in milliseconds, for the poll timeouts that wake the guard.
    static let checkIntervalMilliseconds: Int32 = 25
    /// After a reset, before the next one: libzmq frees the dropped connections on its own thread.
    static let cooldown: UInt64 = 100_000_000
}

/// The CPU time process `pid` has used so far (`/proc/PID/stat`, user plus system, in clock
/// ticks), or nil when it cannot be read (gone, or not on this machine's /proc). A stopped or
/// frozen process's stands still; one that reads and handles anything moves it.
func processCPUTicks(_ pid: Int32) -> UInt64? {
    let descriptor = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: 1_024)
    let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
    guard count > 0 else { return nil }
    // "pid (comm) state ppid ...": the command may hold spaces and parentheses, so the fields are
    // counted from the last ')'. utime and stime are the 14th and 15th fields, the 12th and 13th
    // after it (state is the 1st).
    guard let close = buffer[0..<count].lastIndex(of: UInt8(ascii: ")")) else { return nil }
    let fields = buffer[(close + 1)..<count].split(separator: UInt8(ascii: " "))
    guard fields.count > 12 else { return nil }
    var ticks: UInt64 = 0
    for field in fields[11...12] {
        var value: UInt64 = 0
        for byte in field {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
        }
        ticks &+= value
    }
    return ticks
}
