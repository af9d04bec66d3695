#if canImport(Glibc)
import Glibc
#endif

/// The `process_*` metrics every Prometheus client library exports, with the names, types and
/// HELP texts of its conventions (the Go client's process collector, which node and Prometheus
/// itself export), read from `/proc/self` at each scrape; and `nbus_build_info`. Every nbus
/// process that serves `/metrics` adds them, so the usual dashboards and alerts (CPU, memory,
/// file descriptors near the limit, restarts) work on it unchanged.
///
/// Linux only: where `/proc/self` cannot be read the figures it gives are left out, never
/// guessed.
public struct ProcessMetrics: Sendable {
    /// CPU time, user and system, in seconds.
    public var cpuSeconds: Double?
    /// Resident memory in bytes (what a memory limit, the broker's `--max-memory`, is compared with).
    public var residentMemoryBytes: Double?
    /// Virtual memory in bytes.
    public var virtualMemoryBytes: Double?
    /// The limit on virtual memory (`RLIMIT_AS`), in bytes; 2^64 − 1 when unlimited, as the
    /// conventions write it.
    public var virtualMemoryMaxBytes: Double?
    /// File descriptors open now.
    public var openFileDescriptors: Double?
    /// The limit on open file descriptors (the soft `RLIMIT_NOFILE`: what `open` and `accept` meet).
    public var maxFileDescriptors: Double?
    /// When the process started, seconds since the Unix epoch.
    public var startTimeSeconds: Double?

    /// The figures of this process now.
    public static func current() -> ProcessMetrics {
        var metrics = ProcessMetrics()
        if let stat = ProcFile.read("/proc/self/stat").flatMap(StatFields.init) {
            let ticks = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))
            let page = Double(max(1, sysconf(Int32(_SC_PAGESIZE))))
            metrics.cpuSeconds = Double(stat.userTicks &+ stat.systemTicks) / ticks
            metrics.virtualMemoryBytes = Double(stat.virtualBytes)
            metrics.residentMemoryBytes = Double(stat.residentPages) * page
            if let boot = bootTime {
                metrics.startTimeSeconds = boot + Double(stat.startTicks) / ticks
            }
        }
        metrics.openFileDescriptors = openDescriptorCount().map { Double($0) }
        metrics.maxFileDescriptors = softLimit(Int32(RLIMIT_NOFILE.rawValue))
        metrics.virtualMemoryMaxBytes = softLimit(Int32(RLIMIT_AS.rawValue))
        return metrics
    }

    /// The HELP text of each `process_*` metric, as the Prometheus client conventions write it.
    public static let helpTexts: [String: String] = [
        "process_cpu_seconds_total": "Total user and system CPU time spent in seconds.",
        "process_open_fds": "Number of open file descriptors.",
        "process_max_fds": "Maximum number of open file descriptors.",
        "process_virtual_memory_bytes": "Virtual memory size in bytes.",
        "process_virtual_memory_max_bytes": "Maximum amount of virtual memory available in bytes.",
        "process_resident_memory_bytes": "Resident memory size in bytes.",
        "process_start_time_seconds": "Start time of the process since unix epoch in seconds.",
        "nbus_build_info": "The NotificationBus version, as a label; always 1.",
    ]

    /// Appends these figures and `nbus_build_info` to `text`.
    func write(into text: inout ExpositionText) {
        func add(_ name: String, _ kind: ExpositionText.Kind, _ value: Double?) {
            guard let value else { return }
            text.family(name, kind, help: Self.helpTexts[name] ?? name, value: value)
        }
        add("process_cpu_seconds_total", .counter, cpuSeconds)
        add("process_open_fds", .gauge, openFileDescriptors)
        add("process_max_fds", .gauge, maxFileDescriptors)
        add("process_virtual_memory_bytes", .gauge, virtualMemoryBytes)
        add("process_virtual_memory_max_bytes", .gauge, virtualMemoryMaxBytes)
        add("process_resident_memory_bytes", .gauge, residentMemoryBytes)
        add("process_start_time_seconds", .gauge, startTimeSeconds)
        text.family(
            "nbus_build_info", .gauge, help: Self.helpTexts["nbus_build_info"] ?? "",
            samples: [([("version", NotificationBusVersion.current)], 1)])
    }

    /// The `process_*` metrics of this process now and `nbus_build_info`, in the text format, to
    /// append to a scrape (`PrometheusCollectorRegistry.emit(into:)` and then these).
    public static func exposition() -> [UInt8] {
        var text = ExpositionText()
        current().write(into: &text)
        return text.bytes
    }

    /// When the machine booted (`btime` in `/proc/stat`), seconds since the epoch: read once,
    /// it does not change while the process lives.
    private static let bootTime: Double? = {
        guard let bytes = ProcFile.read("/proc/stat", limit: 4 << 20) else { return nil }
        for line in bytes.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("btime ".utf8)) {
            // A closure, not `.map(Double.init)`: that picks `Double(bitPattern:)` for a UInt64.
            return ProcFile.number(line.dropFirst(6)).map { Double($0) }
        }
        return nil
    }()

    /// Entries of `/proc/self/fd`, less the one that reading it opens.
    private static func openDescriptorCount() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard let number = Int32(name), number != own else { continue }
            count += 1
        }
        return count
    }

    private static func softLimit(_ resource: Int32) -> Double? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(resource), &limit) == 0 else { return nil }
        // RLIM_INFINITY is all ones (glibc's macro does not import): the same 2^64 - 1 either way.
        return Double(limit.rlim_cur)
    }
}

/// The fields of `/proc/self/stat` the metrics use.
private struct StatFields {
    var userTicks: UInt64
    var systemTicks: UInt64
    var startTicks: UInt64
    var virtualBytes: UInt64
    var residentPages: UInt64

    /// "pid (comm) state ppid ...": the command may hold spaces and parentheses, so fields are
    /// counted from the last ')'; after it, state is the 1st, utime the 12th, stime the 13th,
    /// starttime the 20th, vsize the 21st and rss the 22nd (proc(5)'s 3rd, 14th, 15th, 22nd, 23rd
    /// and 24th).
    init?(_ bytes: [UInt8]) {
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = bytes[(close + 1)...].split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") })
        guard fields.count > 21, let user = ProcFile.number(fields[11]), let system = ProcFile.number(fields[12]),
            let start = ProcFile.number(fields[19]), let virtual = ProcFile.number(fields[20]),
            let resident = ProcFile.number(fields[21])
        else { return nil }
        (userTicks, systemTicks, startTicks, virtualBytes, residentPages) = (user, system, start, virtual, resident)
    }
}
