#if canImport(Glibc)
import Glibc
#endif

/// Small reads of `/proc` files, whose size `stat` reports as 0, so they are read to the end.
enum ProcFile {
    static func read(_ path: String, limit: Int = 64 << 10) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 8_192)
        while bytes.count < limit {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer[0..<count]
        }
        return bytes.isEmpty ? nil : bytes
    }

    /// A decimal number of ASCII digits (and nothing else).
    static func number(_ digits: some Collection<UInt8>) -> UInt64? {
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = times &+ UInt64(byte - UInt8(ascii: "0"))
        }
        return value
    }
}
