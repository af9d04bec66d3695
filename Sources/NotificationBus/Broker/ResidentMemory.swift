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
