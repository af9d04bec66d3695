import BusOperations
import Foundation
import Logging
import Testing

@Suite("BusOperations: log lines and --http addresses", .timeLimit(.minutes(1)))
struct LogAndAddressTests {
    @Test("a text line: timestamp, level, label, message, then the fields sorted")
    func textLine() {
        let line = BusLogHandler.render(
            format: .text, timestamp: "2026-11-25T10:38:11.123Z", level: .warning, label: "nbus broker",
            message: "slow subscriber", fields: ["peer": "127.0.0.1:5", "key": "a b"])
        #expect(line == #"2026-11-25T10:38:11.123Z warning nbus broker: slow subscriber key="a b" peer=127.0.0.1:5"#)
    }

    @Test("a json line parses, and numbers stay numbers")
    func jsonLine() throws {
        let line = BusLogHandler.render(
            format: .json, timestamp: "2026-11-25T10:38:11.123Z", level: .info, label: "nbus subscribe",
            message: "line\none \"quoted\"", fields: ["count": .stringConvertible(3), "endpoint": "ipc:///x"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["label"] as? String == "nbus subscribe")
        #expect(object["message"] as? String == "line\none \"quoted\"")
        #expect(object["count"] as? Int == 3)
        #expect(object["endpoint"] as? String == "ipc:///x")
        #expect(!line.contains("\n"))
    }

    @Test("json lines: integers of every width and booleans stay themselves; a number given as text stays text")
    func jsonFieldTypes() throws {
        let line = BusLogHandler.render(
            format: .json, timestamp: "T", level: .info, label: "nbus broker", message: "m",
            fields: [
                "openFiles": .stringConvertible(UInt64(20_000)), "pid": .stringConvertible(Int32(42)),
                "curve": .stringConvertible(true), "port": "5550",
            ])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["openFiles"] as? Int == 20_000, "\(line)")
        #expect(object["pid"] as? Int == 42, "\(line)")
        #expect(object["curve"] as? Bool == true, "\(line)")
        #expect(object["port"] as? String == "5550", "\(line)")
    }

    @Test("a message with a newline stays on one text line")
    func oneLine() {
        let line = BusLogHandler.render(
            format: .text, timestamp: "T", level: .error, label: "l", message: "a\nb", fields: [:])
        #expect(line == #"T error l: a\nb"#)
    }

    @Test("the timestamp is UTC, to the millisecond")
    func timestamp() {
        let stamp = BusLogHandler.timestamp()
        #expect(stamp.count == 24 && stamp.hasSuffix("Z") && stamp.dropFirst(10).hasPrefix("T"), "\(stamp)")
    }

    @Test("--http values: a bare port is loopback; IPv4, IPv6 and localhost; bad ones refused")
    func addresses() throws {
        #expect(try HTTPListenAddress(parsing: "9464").description == "127.0.0.1:9464")
        #expect(try HTTPListenAddress(parsing: "0").port == 0)
        #expect(try HTTPListenAddress(parsing: "0.0.0.0:80").description == "0.0.0.0:80")
        #expect(try HTTPListenAddress(parsing: "[::1]:9").description == "[::1]:9")
        #expect(try HTTPListenAddress(parsing: "localhost:7").host == "127.0.0.1")
        for bad in ["", "x", "127.0.0.1:", "127.0.0.1:65536", "example.com:80", "[::1]9", "1.2.3:4"] {
            #expect(throws: HTTPListenAddressError.self, "\(bad)") { try HTTPListenAddress(parsing: bad) }
        }
    }
}
