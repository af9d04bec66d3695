import Foundation

/// How loaded the machine was while a benchmark ran: the load average before and after, and the
/// share of CPU time that was busy and that the hypervisor stole, from /proc (Linux).
///
/// Why in every report: on a shared machine the verdict can change from one run to the next
/// (onReceive lost nothing in one demo and 22% upstream in the next); these figures say whether
/// the machine, rather than the bus, changed.
package struct MachineLoad: Codable, Sendable, Equatable {
    /// /proc/loadavg's 1-minute average at the start and at the end.
    package var loadAverageBefore: Double
    package var loadAverageAfter: Double
    /// Of every CPU's time over the run: busy (not idle, not waiting for I/O), and stolen by the
    /// hypervisor (the `steal` column of /proc/stat), each 0...1.
    package var busyFraction: Double
    package var stealFraction: Double

    /// One reading of /proc: the 1-minute load average and the cumulative CPU counters.
    package struct Sample: Sendable, Equatable {
        package var loadAverage: Double
        /// Jiffies of all CPUs: every column, idle (idle + iowait), steal.
        package var total: UInt64
        package var idle: UInt64
        package var steal: UInt64

        /// Reads /proc/loadavg and /proc/stat; nil where they cannot be read (not Linux).
        package static func now() -> Sample? {
            // Unreadable /proc files mean no sample (nil), as documented: the report says "not measured".
            guard let loadavg = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8),
                let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8)
            else { return nil }
            return parse(loadavg: loadavg, stat: stat)
        }

        /// The sample in the texts of /proc/loadavg and /proc/stat.
        package static func parse(loadavg: String, stat: String) -> Sample? {
            guard let first = loadavg.split(separator: " ").first, let load = Double(first),
                let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
            else { return nil }
            // cpu user nice system idle iowait irq softirq steal guest guest_nice; guest time is
            // already inside user and nice, so it is left out of the total.
            let columns = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
            guard columns.count >= 4 else { return nil }
            let counted = Array(columns.prefix(8))
            func column(_ index: Int) -> UInt64 { index < counted.count ? counted[index] : 0 }
            return Sample(
                loadAverage: load, total: counted.reduce(0, +), idle: column(3) + column(4), steal: column(7))
        }
    }

    /// The load between two samples.
    package init(before: Sample, after: Sample) {
        loadAverageBefore = before.loadAverage
        loadAverageAfter = after.loadAverage
        let total = Double(after.total &- before.total)
        busyFraction = total > 0 ? max(0, min(1, 1 - Double(after.idle &- before.idle) / total)) : 0
        stealFraction = total > 0 ? max(0, min(1, Double(after.steal &- before.steal) / total)) : 0
    }

    /// Whether the run shared the machine enough to move its figures: a load average above the
    /// cores at either end, or more than 5% of the CPU time stolen.
    package func loaded(cores: Int) -> Bool {
        max(loadAverageBefore, loadAverageAfter) > Double(max(1, cores)) || stealFraction > 0.05
    }

    /// `0.52 before, 2.10 after (1-minute average, 2 cores); CPU busy 87%, steal 0.4% during the run`,
    /// for the report's `load` line.
    package func description(cores: Int) -> String {
        String(
            format: "%.2f before, %.2f after (1-minute average, %d cores); CPU busy %.0f%%, steal %.1f%% during the run",
            loadAverageBefore, loadAverageAfter, cores, busyFraction * 100, stealFraction * 100)
            + (loaded(cores: cores) ? ": a loaded machine, the figures may say more about it than about the bus" : "")
    }
}
