import Foundation
import NotificationBus

/// What a memory sampler saw: every `VmRSS` sample, the largest, and the last `VmHWM`.
package struct MemorySamples: Codable, Sendable, Equatable {
    /// Milliseconds between samples.
    package var intervalMilliseconds: Int
    /// `VmRSS` at each sample, KiB, in order.
    package var residentKiB: [UInt64] = []
    /// The largest `VmRSS` sampled, KiB.
    package var maximumResidentKiB: UInt64 = 0
    /// The last `VmHWM` read, KiB: the kernel's peak, which no sampling interval can miss.
    package var peakResidentKiB: UInt64 = 0
    /// The last `VmRSS` read, KiB.
    package var lastResidentKiB: UInt64 = 0

    package init(intervalMilliseconds: Int) {
        self.intervalMilliseconds = intervalMilliseconds
    }

    mutating func add(_ memory: ProcessMemory) {
        residentKiB.append(memory.residentKiB)
        maximumResidentKiB = max(maximumResidentKiB, memory.residentKiB)
        peakResidentKiB = max(peakResidentKiB, memory.peakResidentKiB)
        lastResidentKiB = memory.residentKiB
    }
}
