/// One line as `LineSplitter` and `FileDescriptorLines` hand it out.
package enum InputLine: Sendable, Equatable {
    /// The line's bytes, exactly as read, without its line ending (`\n`, or `\r\n`).
    case bytes([UInt8])
    /// A line longer than the maximum: `byteCount` bytes (without the line ending) were read and
    /// dropped, and splitting goes on with the next line.
    case tooLong(byteCount: Int)
    /// Reading failed (`reason` is the system's text); no line follows.
    case readFailed(reason: String)

    /// The line as text (invalid UTF-8 repaired); nil for `.tooLong` and `.readFailed`.
    package var text: String? {
        guard case .bytes(let bytes) = self else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
