import Foundation
import NotificationBus
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A process's resident memory as Linux reports it in `/proc/<pid>/status`, in KiB.
package struct ProcessMemory: Codable, Sendable, Equatable {
    /// `VmRSS`: resident set size now.
    package var residentKiB: UInt64
    /// `VmHWM`: the peak resident set size since the process started (the kernel's high-water mark).
    package var peakResidentKiB: UInt64

    package init(residentKiB: UInt64, peakResidentKiB: UInt64) {
        self.residentKiB = residentKiB
        self.peakResidentKiB = peakResidentKiB
    }

    /// Parses the `VmRSS:` and `VmHWM:` lines of a `/proc/<pid>/status` text (values in kB, which
    /// the kernel means as KiB). Nil when either is missing: a zombie, or not Linux.
    package static func parse(status text: String) -> ProcessMemory? {
        var resident: UInt64?
        var peak: UInt64?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("VmRSS:") {
                resident = kibibytes(line.dropFirst(6))
            } else if line.hasPrefix("VmHWM:") {
                peak = kibibytes(line.dropFirst(6))
            }
        }
        guard let resident, let peak else { return nil }
        return ProcessMemory(residentKiB: resident, peakResidentKiB: peak)
    }

    private static func kibibytes(_ field: Substring) -> UInt64? {
        // "\t   123456 kB"
        let parts = field.split(omittingEmptySubsequences: true, whereSeparator: { $0 == " " || $0 == "\t" })
        guard let number = parts.first, let value = UInt64(number) else { return nil }
        return value
    }

    /// Reads `/proc/self/status` (pid nil) or `/proc/<pid>/status`; nil when it cannot be read.
    package static func read(pid: pid_t? = nil) -> ProcessMemory? {
        let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
        // procfs files report size 0: read until end of file.
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            text.append(contentsOf: buffer[0..<count])
        }
        return parse(status: String(decoding: text, as: UTF8.self))
    }
}
