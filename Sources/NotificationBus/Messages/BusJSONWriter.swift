import FoundationEssentials

/// One `BusJSON.encode` call's output and its open containers.
///
/// Containers are written in one pass, as the value encodes them: a container is closed (its
/// `}` or `]` written) when its parent writes its next member, or when the value that opened it
/// returns. A stack of frames says which containers are still open; a container used after it
/// was closed (legal in `Codable`, never done by a synthesized conformance) is out of order, and
/// `BusJSON.encode` falls back to Foundation's encoder for that value.
final class BusJSONWriter {
    /// A container used after its parent moved on.
    struct OutOfOrder: Error {}

    enum Kind: UInt8 {
        /// A value's place (after a key, in an array, at the top): filled by one container or value.
        case slot
        case object
        case array
    }

    struct Frame {
        var id: UInt32
        var kind: Kind
        /// Members or elements written so far.
        var count = 0
        /// For a slot: whether it holds a value yet.
        var filled = false
        /// For a slot holding an object or array: that container's id.
        var child: UInt32 = 0
    }

    struct State {
        /// The output so far: a buffer this writer owns (appending to an array checked its
        /// uniqueness and capacity through generic code on every byte: a fifth of an encoding).
        var output: UnsafeMutablePointer<UInt8>
        var count = 0
        var capacity: Int
        var stack: [Frame] = []
        var nextID: UInt32 = 0
        /// A container was used after it was closed: the output is not the value.
        var outOfOrder = false
    }

    /// The writer's state behind a pointer: a class's stored `var` is checked for exclusive
    /// access at run time on every use, which cost about a sixth of an encoding. Only this
    /// writer, on one task, ever reaches it (one writer per `BusJSON.encode` call).
    private let state: UnsafeMutablePointer<State>

    /// The output, as an array of its own.
    var bytes: [UInt8] {
        Array(UnsafeBufferPointer(start: state.pointee.output, count: state.pointee.count))
    }

    var stack: [Frame] {
        _read { yield state.pointee.stack }
        _modify { yield &state.pointee.stack }
    }

    var outOfOrder: Bool {
        get { state.pointee.outOfOrder }
        set { state.pointee.outOfOrder = newValue }
    }

    /// `reservingStack`: room for 8 open containers at once (what a `Codable` value uses); the
    /// field writers (`BusJSONObjectWriter`) never push, so they skip that allocation.
    init(reservingStack: Bool = true) {
        state = .allocate(capacity: 1)
        state.initialize(to: State(output: .allocate(capacity: 128), capacity: 128))
        if reservingStack { state.pointee.stack.reserveCapacity(8) }
    }

    deinit {
        state.pointee.output.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Room for `extra` more bytes.
    @inline(__always)
    private func reserve(_ extra: Int) {
        if state.pointee.count + extra > state.pointee.capacity { grow(extra) }
    }

    private func grow(_ extra: Int) {
        let capacity = Swift.max(state.pointee.capacity * 2, state.pointee.count + extra)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.moveInitialize(from: state.pointee.output, count: state.pointee.count)
        state.pointee.output.deallocate()
        state.pointee.output = grown
        state.pointee.capacity = capacity
    }

    @inline(__always)
    func append(_ byte: UInt8) {
        reserve(1)
        (state.pointee.output + state.pointee.count).initialize(to: byte)
        state.pointee.count += 1
    }

    @inline(__always)
    func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count)
        (state.pointee.output + state.pointee.count).initialize(from: source, count: bytes.count)
        state.pointee.count += bytes.count
    }

    @inline(__always)
    func append(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) {
        append(UnsafeBufferPointer(rebasing: bytes))
    }

    func push(_ kind: Kind) -> (depth: Int, id: UInt32) {
        state.pointee.nextID &+= 1
        let id = state.pointee.nextID
        stack.append(Frame(id: id, kind: kind))
        return (stack.count - 1, id)
    }

    func isLive(_ depth: Int, _ id: UInt32) -> Bool {
        depth < stack.count && stack[depth].id == id
    }

    /// Closes every frame above `depth`.
    func close(above depth: Int) {
        while stack.count > depth + 1 { closeTop() }
    }

    private func closeTop() {
        let frame = stack.removeLast()
        switch frame.kind {
        case .object: append(UInt8(ascii: "}"))
        case .array: append(UInt8(ascii: "]"))
        case .slot where !frame.filled:
            // A value that encoded nothing: an empty object, as Foundation writes it.
            append(UInt8(ascii: "{"))
            append(UInt8(ascii: "}"))
        case .slot: break
        }
    }

    /// Checks that the container at `depth` is open and makes it the innermost one.
    func enter(_ depth: Int, _ id: UInt32) throws(OutOfOrder) {
        guard isLive(depth, id) else {
            outOfOrder = true
            throw OutOfOrder()
        }
        close(above: depth)
    }

    /// Starts the next element of the open container at `depth` (its comma).
    func beginElement(_ depth: Int, _ id: UInt32) throws(OutOfOrder) {
        try enter(depth, id)
        if stack[depth].count > 0 { append(UInt8(ascii: ",")) }
        stack[depth].count += 1
    }

    /// Starts the member `key` of the open object at `depth`.
    func beginMember(_ depth: Int, _ id: UInt32, _ key: String) throws(OutOfOrder) {
        try beginElement(depth, id)
        writeString(key)
        append(UInt8(ascii: ":"))
    }

    /// Opens a container in the place the caller just began (a member or an element).
    func open(_ kind: Kind) -> (depth: Int, id: UInt32) {
        append(kind == .object ? UInt8(ascii: "{") : UInt8(ascii: "["))
        return push(kind)
    }

    // MARK: Values

    func encodeTopLevel<T: Encodable>(_ value: T) throws {
        if try writeKnown(value, path: []) { return }
        let slot = push(.slot)
        try value.encode(to: BusJSONEncoderImpl(writer: self, depth: slot.depth, id: slot.id, codingPath: []))
        try enter(slot.depth, slot.id)
        guard stack[slot.depth].filled else {
            throw EncodingError.invalidValue(value, EncodingError.Context(
                codingPath: [], debugDescription: "Top-level \(T.self) did not encode any values."))
        }
        close(above: -1)
    }

    /// Writes `value` in the place the caller just began.
    func encodeValue<T: Encodable>(_ value: T, path: @autoclosure () -> [any CodingKey]) throws {
        if try writeKnown(value, path: path()) { return }
        let slot = push(.slot)
        try value.encode(to: BusJSONEncoderImpl(writer: self, depth: slot.depth, id: slot.id, codingPath: path()))
        try enter(slot.depth, slot.id)
        close(above: slot.depth - 1)
    }

    /// The types Foundation's `JSONEncoder` writes its own way by default (`Data`, `URL`,
    /// `Decimal`), and a few common ones written without an encoder. False: not one of them.
    private func writeKnown<T: Encodable>(_ value: T, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        if T.self == String.self {
            writeString(BusJSONCast.cast(value, to: String.self))
        } else if T.self == Int.self {
            writeInteger(BusJSONCast.cast(value, to: Int.self))
        } else if T.self == Double.self {
            try writeDouble(BusJSONCast.cast(value, to: Double.self), path: path())
        } else if T.self == Bool.self {
            writeBool(BusJSONCast.cast(value, to: Bool.self))
        } else if T.self == [String].self {
            writeArray(BusJSONCast.cast(value, to: [String].self)) { self.writeString($0) }
        } else if T.self == [Int].self {
            writeArray(BusJSONCast.cast(value, to: [Int].self)) { self.writeInteger($0) }
        } else if T.self == Date.self {
            // Foundation's default, `.deferredToDate`: seconds since 2001-01-01.
            try writeDouble(BusJSONCast.cast(value, to: Date.self).timeIntervalSinceReferenceDate, path: path())
        } else if T.self == Data.self {
            writeString(BusJSONCast.cast(value, to: Data.self).base64EncodedString())
        } else if T.self == URL.self {
            writeString(BusJSONCast.cast(value, to: URL.self).absoluteString)
        } else if T.self == Decimal.self {
            writeASCII(BusJSONCast.cast(value, to: Decimal.self).description)
        } else {
            return false
        }
        return true
    }

    private func writeArray<E>(_ elements: [E], _ write: (E) -> Void) {
        append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { append(UInt8(ascii: ",")) }
            write(element)
        }
        append(UInt8(ascii: "]"))
    }

    func writeNull() {
        writeLiteral("null")
    }

    func writeBool(_ value: Bool) {
        writeLiteral(value ? "true" : "false")
    }

    /// A literal's bytes, from static storage (an array literal here would be allocated per call).
    private func writeLiteral(_ text: StaticString) {
        text.withUTF8Buffer { append($0) }
    }

    func writeInteger<I: FixedWidthInteger>(_ value: I) {
        if value < 0 { append(UInt8(ascii: "-")) }
        var magnitude = UInt64(value.magnitude)
        if magnitude < 10 {
            append(UInt8(ascii: "0") &+ UInt8(magnitude))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            while magnitude > 0 {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(magnitude % 10)
                magnitude /= 10
            }
            append(UnsafeBufferPointer(rebasing: digits[start..<20]))
        }
    }

    func writeDouble(_ value: Double, path: @autoclosure () -> [any CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(
                codingPath: path(), debugDescription: "Unable to encode Double.\(value) directly in JSON: JSON has no \(value)."))
        }
        if let (digits, fractionDigits) = Self.shortDecimal(value) {
            writeDecimal(digits, fractionDigits: fractionDigits)
        } else {
            writeFloatDescription(value.description)
        }
    }

    private static let scales: (Double, Double, Double, Double, Double) = (1, 10, 100, 1_000, 10_000)

    /// `value` as `digits` / 10^`fractionDigits` when that is exactly what `value.description`
    /// writes, without making the description (a fifteenth of a five-field message's encoding):
    /// a magnitude from 0.001 to below 10^9 whose shortest form has at most 4 fraction digits
    /// (prices, rates, durations). In that range `description` uses plain notation and the
    /// shortest decimal that reads back as `value`; the smallest count of fraction digits whose
    /// nearest decimal reads back as `value` is that decimal (its digits are fewer, and the
    /// range is narrow enough that a count of fraction digits has one such decimal at most).
    /// Nil otherwise (zero too: its sign): `description` is used.
    @inline(__always)
    static func shortDecimal(_ value: Double) -> (Int64, Int)? {
        let magnitude = value.magnitude
        guard magnitude >= 0.001, magnitude < 1e9 else { return nil }
        for fractionDigits in 0...4 {
            let scale: Double
            switch fractionDigits {
            case 0: scale = scales.0
            case 1: scale = scales.1
            case 2: scale = scales.2
            case 3: scale = scales.3
            default: scale = scales.4
            }
            let scaled = (value * scale).rounded()
            // Exact: |scaled| < 10^13 < 2^53, and a quotient of two exact values is correctly
            // rounded, as reading the decimal back is.
            if scaled / scale == value {
                let digits = Int64(scaled)
                // A trailing zero would have been found with one digit fewer: never, but then
                // the description decides.
                if fractionDigits > 0, digits % 10 == 0 { return nil }
                return (digits, fractionDigits)
            }
        }
        return nil
    }

    /// `digits` / 10^`fractionDigits` in plain notation ("9.5", "-0.25", "12").
    private func writeDecimal(_ digits: Int64, fractionDigits: Int) {
        if digits < 0 { append(UInt8(ascii: "-")) }
        var magnitude = digits.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
            var start = 24
            var written = 0
            repeat {
                if written == fractionDigits && fractionDigits > 0 {
                    start -= 1
                    text[start] = UInt8(ascii: ".")
                }
                start -= 1
                text[start] = UInt8(ascii: "0") &+ UInt8(magnitude % 10)
                magnitude /= 10
                written += 1
            } while magnitude > 0 || written <= fractionDigits
            append(UnsafeBufferPointer(rebasing: text[start..<24]))
        }
    }

    func writeFloat(_ value: Float, path: @autoclosure () -> [any CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, EncodingError.Context(
                codingPath: path(), debugDescription: "Unable to encode Float.\(value) directly in JSON: JSON has no \(value)."))
        }
        writeFloatDescription(value.description)
    }

    /// Swift's shortest round-trip form (`9.5`, `1e-07`, `1e+20`), without an integral value's
    /// `.0`, as Foundation writes it.
    private func writeFloatDescription(_ description: String) {
        var text = description
        text.withUTF8 { utf8 in
            var count = utf8.count
            if count > 2, utf8[count - 2] == UInt8(ascii: "."), utf8[count - 1] == UInt8(ascii: "0") { count -= 2 }
            append(UnsafeBufferPointer(rebasing: utf8[0..<count]))
        }
    }

    func writeASCII(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    /// `string` as a JSON string: `"`, `\`, `/` and control characters escaped, the rest as UTF-8.
    func writeString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            append(UInt8(ascii: "\""))
            var plainFrom = 0
            for index in BusJSONScan.plainPrefix(utf8, escapingSlash: true)..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "/") else {
                    continue
                }
                if plainFrom < index { append(UnsafeBufferPointer(rebasing: utf8[plainFrom..<index])) }
                plainFrom = index + 1
                append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): append(byte)
                case 0x08: append(UInt8(ascii: "b"))
                case 0x0C: append(UInt8(ascii: "f"))
                case 0x0A: append(UInt8(ascii: "n"))
                case 0x0D: append(UInt8(ascii: "r"))
                case 0x09: append(UInt8(ascii: "t"))
                default:
                    // \u00XX, lowercase hex as Foundation writes it (XX below 0x20).
                    append(UInt8(ascii: "u"))
                    append(UInt8(ascii: "0"))
                    append(UInt8(ascii: "0"))
                    append(UInt8(ascii: "0") &+ (byte >> 4))
                    let low = byte & 0xF
                    append(low < 10 ? UInt8(ascii: "0") &+ low : UInt8(ascii: "a") &+ (low - 10))
                }
            }
            if plainFrom < utf8.count { append(UnsafeBufferPointer(rebasing: utf8[plainFrom...])) }
            append(UInt8(ascii: "\""))
        }
    }
}

/// Reads a generic value as the concrete type it was just checked to be (`T.self == U.self`),
/// without a dynamic cast.
enum BusJSONCast {
    @inline(__always)
    static func cast<T, U>(_ value: T, to type: U.Type) -> U {
        withUnsafePointer(to: value) { UnsafeRawPointer($0).load(as: U.self) }
    }
}

/// Eight bytes at a time: how far a text has none of the bytes a JSON string must treat one by
/// one (`"`, `\`, a control character; `/` when writing, as Foundation escapes it; a non-ASCII
/// byte when reading, to check its UTF-8). Exact: a word is passed over only when none of its
/// bytes is one of them (the "has a byte less than / equal to" bit tricks answer "any" exactly).
enum BusJSONScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    @inline(__always)
    private static func hasZeroByte(_ word: UInt64) -> Bool {
        (word &- ones) & ~word & highs != 0
    }

    /// Whether `word` has a byte below 0x20, `"`, `\`, or `/` (`slash`), or one at or above
    /// 0x80 (`nonASCII`).
    @inline(__always)
    static func isSpecial(_ word: UInt64, slash: Bool, nonASCII: Bool) -> Bool {
        if nonASCII, word & highs != 0 { return true }
        // Below 0x20: only a byte with its high bit clear can set its lane's bit.
        if (word &- ones &* 0x20) & ~word & highs != 0 { return true }
        if hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C)) { return true }
        return slash && hasZeroByte(word ^ (ones &* 0x2F))
    }

    /// The length of `bytes`' longest prefix of whole words with no special byte (a multiple
    /// of 8; the caller reads the rest byte by byte). For the writer: `/` is special.
    @inline(__always)
    static func plainPrefix(_ bytes: UnsafeBufferPointer<UInt8>, escapingSlash: Bool) -> Int {
        guard let base = bytes.baseAddress else { return 0 }
        let raw = UnsafeRawPointer(base)
        var index = 0
        while index + 8 <= bytes.count {
            if isSpecial(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self), slash: escapingSlash, nonASCII: false) {
                break
            }
            index += 8
        }
        return index
    }

    /// From `start`, how far (a multiple of 8 bytes) `bytes` has only plain ASCII string
    /// content: no `"`, `\`, control character or non-ASCII byte. For the reader.
    @inline(__always)
    static func plainASCII(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let raw = UnsafeRawPointer(base)
        var index = start
        while index + 8 <= bytes.count {
            if isSpecial(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self), slash: false, nonASCII: true) {
                break
            }
            index += 8
        }
        return index
    }
}
