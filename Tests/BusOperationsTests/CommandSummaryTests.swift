import BusOperations
import Foundation
import Testing

@Suite("BusOperations: summaries and RFC 3339 times", .timeLimit(.minutes(1)))
struct CommandSummaryTests {
    @Test("RFC 3339: UTC, nine fractional digits, every digit of a timestamp past 2^53 kept")
    func rfc3339() {
        // jq 1.6 prints 1795782534105558000 for this integer: the text keeps it whole.
        #expect(RFC3339.string(nanosecondsSinceEpoch: 1_795_782_534_105_557_967) == "2026-11-27T12:28:54.105557967Z")
        #expect(RFC3339.string(nanosecondsSinceEpoch: 0) == "1970-01-01T00:00:00.000000000Z")
        #expect(RFC3339.string(nanosecondsSinceEpoch: 1_000_000_007) == "1970-01-01T00:00:01.000000007Z")
    }

    @Test("a summary is one plain line, or one JSON object whose numbers are numbers")
    func lines() throws {
        let summary = CommandSummary(
            command: "publish", text: "posted 3, sent 3, unsent 0",
            fields: [
                ("posted", .unsigned(3)), ("big", .unsigned(UInt64.max)), ("name", .string("a \"b\"")), ("curve", .bool(false)),
                ("nested", .object([("count", .integer(-1))])), ("list", .array([.number(0.5)])),
            ])
        #expect(summary.line(.text) == "nbus publish: posted 3, sent 3, unsent 0")
        let json = summary.line(.json)
        #expect(json.hasPrefix(#"{"summary":"publish","posted":3,"big":18446744073709551615,"#), "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["summary"] as? String == "publish")
        #expect(object["posted"] as? Int == 3)
        #expect(object["name"] as? String == "a \"b\"")
        #expect(object["curve"] as? Bool == false)
        #expect((object["nested"] as? [String: Any])?["count"] as? Int == -1)
        #expect(object["list"] as? [Double] == [0.5])
        #expect(!json.contains("\n"))
    }

    @Test("the summary is JSON when the output or the log is")
    func format() {
        #expect(CommandSummary.format(output: nil, log: .text) == .text)
        #expect(CommandSummary.format(output: nil, log: .json) == .json)
        #expect(CommandSummary.format(output: .json, log: .text) == .json)
        #expect(CommandSummary.format(output: .text, log: .json) == .text)
    }
}
