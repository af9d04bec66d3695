import ArgumentParser
import BusOperations
import Foundation
import Glibc
import NotificationBus

/// Unbuffered-enough writers for stdout/stderr that several tasks can share.
enum FileWriter {
    case standardOutput, standardError

    /// Writes all of `text` with write(2). Standard output closed by its reader (`| head -n 1`)
    /// ends the process as SIGPIPE would have without `--http`: SwiftNIO ignores SIGPIPE once a
    /// monitoring server runs, and Foundation's `FileHandle.write(_:)` then traps on EPIPE
    /// (`try!`). Any other failure to write standard output is said on stderr, exit 74
    /// (EX_IOERR); a failing stderr is let be.
    func write(_ text: String) {
        let descriptor: Int32 = self == .standardOutput ? STDOUT_FILENO : STDERR_FILENO
        var failure: Int32 = 0
        text.utf8CString.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            let count = buffer.count - 1   // not the terminating NUL
            while offset < count {
                let written = Glibc.write(descriptor, base + offset, count - offset)
                if written > 0 { offset += written; continue }
                if written < 0 && errno == EINTR { continue }
                failure = written < 0 ? errno : EIO
                return
            }
        }
        guard failure != 0, self == .standardOutput else { return }
        if failure == EPIPE {
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        FileWriter.standardError.write("nbus: cannot write standard output: \(String(cString: strerror(failure)))\n")
        exit(74)
    }
}

/// How `nbus subscribe` prints notifications and gaps.
enum OutputFormat: String, CaseIterable, Sendable {
    case text, json

    func render(_ event: BusEvent) -> String {
        switch (self, event) {
        case (.text, .notification(let n)):
            let headers = n.headers.map { "\(Self.textField($0.key))=\(Self.textField($0.value))" }.joined(separator: ",")
            let payload =
                String(validatingUTF8: n.payload).map(Self.textField) ?? "base64:" + Data(n.payload).base64EncodedString()
            var line = "\(n.name) seq=\(n.sequence) publisher=\(ControlNames.hex(n.publisherID))"
            if !headers.isEmpty { line += " headers=[\(headers)]" }
            if n.contentType != .unspecified { line += " type=\(n.contentType)" }
            // NBP/1's flags are reserved and written 0: shown only when a producer set some, so
            // its author can see them (NBP-1 §12: receivers ignore them, nobody else would tell).
            if n.flags != 0 { line += " flags=\(Self.hexByte(n.flags))" }
            // A kept current value handed to this new subscription, not a change made now (NBP-1 §18).
            if n.isRetained { line += " retained" }
            return line + " payload=\(payload)"
        case (.text, .gap(let gap)):
            return "! \(gap)"
        case (.json, .notification(let n)):
            // Written by hand, not through a Dictionary: header keys are distinct byte-wise on the
            // wire (NBP/1), while Swift's String keys would merge canonically equivalent ones.
            // contentType by name (a string `publish --content-type` takes); `time` is `timestamp`
            // as RFC 3339 text, every digit kept where a tool reads numbers as doubles.
            var fields: [(String, String)] = [
                ("contentType", JSONString.quoted(n.contentType.name)),
                // Always, as a number: the byte as received (a conforming producer writes 0).
                ("flags", String(n.flags)),
                ("headers", "{" + n.headers.map { JSONString.quoted($0.key) + ":" + JSONString.quoted($0.value) }.joined(separator: ",") + "}"),
                ("name", JSONString.quoted(n.name.rawValue)),
            ]
            if let text = String(validatingUTF8: n.payload) {
                fields.append(("payload", JSONString.quoted(text)))
            } else {
                fields.append(("payloadBase64", JSONString.quoted(Data(n.payload).base64EncodedString())))
            }
            fields += [
                ("publisherID", JSONString.quoted(ControlNames.hex(n.publisherID))),
            ]
            // Only when true (NBP-1 §18), so lines of live notifications read as before.
            if n.isRetained { fields.append(("retained", "true")) }
            fields += [
                ("sequence", String(n.sequence)),
                ("time", JSONString.quoted(RFC3339.string(nanosecondsSinceEpoch: n.timestamp))),
                ("timestamp", String(n.timestamp)),
            ]
            return "{" + fields.map { JSONString.quoted($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
        case (.json, .gap(let gap)):
            var object: [String: Any] = ["gap": gap.cause.rawValue, "count": gap.count]
            if let name = gap.name { object["name"] = name.rawValue }
            if let publisher = gap.publisherID { object["publisherID"] = ControlNames.hex(publisher) }
            if let sequences = gap.sequences {
                object["firstSequence"] = sequences.lowerBound
                object["lastSequence"] = sequences.upperBound
            }
            return Self.json(object)
        }
    }

    /// Text as it appears in a text-format line: as is, unless it holds a control character (a
    /// newline would start what looks like another notification; an escape sequence would reach the
    /// terminal) or begins with a quote: then as a JSON string literal, quoted and escaped.
    static func textField(_ text: String) -> String {
        let needsQuoting = text.hasPrefix("\"") || text.unicodeScalars.contains(where: JSONString.isControl)
        return needsQuoting ? JSONString.quoted(text) : text
    }

    /// A byte as `0x` and two lowercase hex digits (`0xa5`).
    static func hexByte(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16)
        return "0x" + (digits.count == 1 ? "0" + digits : digits)
    }

    static func json(_ object: [String: Any]) -> String {
        // JSONSerialization fails only for values JSON cannot hold (non-finite numbers, keys that
        // are not strings); the gap objects written here hold strings and integers only.
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

extension String {
    /// The bytes as text when they are valid UTF-8, else nil.
    init?(validatingUTF8 bytes: [UInt8]) {
        guard let text = String(bytes: bytes, encoding: .utf8) else { return nil }
        self = text
    }
}

/// A benchmark's checks failed: lists them on stderr under `heading` and exits 2 (nothing when
/// `failures` is empty).
func exitIfChecksFailed(_ failures: [String], heading: String) throws {
    guard !failures.isEmpty else { return }
    FileWriter.standardError.write(heading + ":\n" + failures.map { "  " + $0 }.joined(separator: "\n") + "\n")
    throw ExitCode(2)
}
