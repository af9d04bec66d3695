#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

@testable import BusOperations

// The process_* figures against what this test process can see of itself by other means, and the
// text they are written in.
@Suite("Metrics: process_* from /proc/self, nbus_build_info, the exposition text")
struct ProcessMetricsTests {
    @Test("the figures match this process: descriptors opened show, the limits are getrlimit's, it started before now")
    func figuresMatchThisProcess() throws {
        let before = ProcessMetrics.current()
        let opened = (0..<10).map { _ in open("/dev/null", O_RDONLY | O_CLOEXEC) }
        defer { for descriptor in opened { close(descriptor) } }
        #expect(opened.allSatisfy { $0 >= 0 })
        let after = ProcessMetrics.current()
        let openBefore = try #require(before.openFileDescriptors)
        let openAfter = try #require(after.openFileDescriptors)
        // Other tests run in parallel and open their own: at least the ten are seen.
        #expect(openAfter >= openBefore + 10 - 2 && openBefore >= 3, "\(openBefore) then \(openAfter)")

        var files = rlimit()
        #expect(getrlimit(__rlimit_resource_t(Int32(RLIMIT_NOFILE.rawValue)), &files) == 0)
        #expect(after.maxFileDescriptors == Double(files.rlim_cur))
        #expect((after.virtualMemoryMaxBytes ?? 0) > 0)

        let resident = try #require(after.residentMemoryBytes)
        #expect(resident > 1_000_000 && resident < (after.virtualMemoryBytes ?? 0))
        let start = try #require(after.startTimeSeconds)
        let now = Date().timeIntervalSince1970
        #expect(start <= now + 1 && start > now - 3_600, "start \(start), now \(now)")
        let cpu = try #require(after.cpuSeconds)
        #expect(cpu >= (before.cpuSeconds ?? 0) && cpu > 0)
    }

    @Test("the exposition: HELP and TYPE for each family, the conventions' texts, nbus_build_info with the version")
    func exposition() {
        let text = String(decoding: ProcessMetrics.exposition(), as: UTF8.self)
        for name in [
            "process_cpu_seconds_total", "process_open_fds", "process_max_fds", "process_virtual_memory_bytes",
            "process_virtual_memory_max_bytes", "process_resident_memory_bytes", "process_start_time_seconds", "nbus_build_info",
        ] {
            #expect(text.contains("# HELP \(name) \(ProcessMetrics.helpTexts[name] ?? "?")\n"), "\(name): \(text)")
        }
        #expect(text.contains("# TYPE process_cpu_seconds_total counter\n"))
        #expect(text.contains("# HELP process_resident_memory_bytes Resident memory size in bytes.\n"))
        #expect(text.contains("nbus_build_info{version=\"\(NotificationBusVersion.current)\"} 1\n"), "\(text)")
    }

    @Test("label values escaped, numbers as Prometheus reads them, a family with no samples keeps HELP and TYPE")
    func writer() {
        var text = ExpositionText()
        text.family("a_bytes", .gauge, help: "Back\\slash\nnewline.", samples: [([("peer", "x\"y\\z\nw")], 42)])
        text.family("b_total", .counter, help: "B.", value: 0.25)
        text.family("c", .gauge, help: "C.", samples: [])
        let written = String(decoding: text.bytes, as: UTF8.self)
        #expect(written == """
            # HELP a_bytes Back\\\\slash\\nnewline.
            # TYPE a_bytes gauge
            a_bytes{peer="x\\"y\\\\z\\nw"} 42
            # HELP b_total B.
            # TYPE b_total counter
            b_total 0.25
            # HELP c C.
            # TYPE c gauge

            """, "\(written)")
        #expect(ExpositionText.number(.infinity) == "+Inf" && ExpositionText.number(-.infinity) == "-Inf")
        #expect(ExpositionText.number(.nan) == "NaN" && ExpositionText.number(1.8446744073709552e19) == "1.8446744073709552e+19")
        #expect(ExpositionText.number(-3) == "-3")
    }

    @Test("GET / lists each route once, with what it answers, and itself")
    func index() {
        let text = MonitoringHTTPService.index(paths: ["/metrics", "/healthz", "/metrics", "/custom"])
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains(NotificationBusVersion.current) == true, "\(text)")
        #expect(lines.dropFirst().map { String($0.prefix { $0 != " " }) } == ["/metrics", "/healthz", "/custom", "/"], "\(text)")
        #expect(lines.contains { $0.hasPrefix("/metrics ") && $0.contains("Prometheus") }, "\(text)")
    }
}
