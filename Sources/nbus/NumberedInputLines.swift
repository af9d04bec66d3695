import NotificationBus
import ToolSupport

/// Standard input's lines for the line sources, numbered from 1 (for skip messages); a failed
/// read is thrown, so a line is its bytes or how long it was when over the limit.
struct NumberedInputLines {
    enum Line {
        case bytes([UInt8])
        case tooLong(byteCount: Int)
    }

    private let reader: StandardInputLineReader
    private var number = 0

    init(maximumLineBytes: Int) {
        reader = StandardInputLineReader(maximumLineBytes: maximumLineBytes)
    }

    /// The next line and its number; nil at the end of the input.
    mutating func next() async throws -> (number: Int, line: Line)? {
        guard let line = await reader.next() else { return nil }
        number += 1
        switch line {
        case .readFailed(let reason): throw StandardInputFailed(reason: reason)
        case .tooLong(let byteCount): return (number, .tooLong(byteCount: byteCount))
        case .bytes(let bytes): return (number, .bytes(bytes))
        }
    }
}
