import Synchronization
import Tracing

/// A 128-bit W3C trace id, as two big-endian halves.
public struct OTLPTraceID: Sendable, Hashable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A random, never all-zero id (W3C Trace Context: all zeros is invalid).
    static func random() -> OTLPTraceID {
        while true {
            let id = OTLPTraceID(high: OTLPRandom.next(), low: OTLPRandom.next())
            if id.high != 0 || id.low != 0 { return id }
        }
    }

    /// The 16 bytes, most significant first (OTLP's `trace_id`).
    public var bytes: [UInt8] { OTLPHex.bigEndianBytes(high) + OTLPHex.bigEndianBytes(low) }

    /// 32 lowercase hex digits.
    public var hex: String { OTLPHex.digits(high) + OTLPHex.digits(low) }
}

/// The span a context belongs to: what `traceparent` and `tracestate` carry.
public struct OTLPSpanContext: Sendable, Hashable {
    public var traceID: OTLPTraceID
    public var spanID: UInt64
    /// W3C trace flags: bit 0 is "sampled".
    public var traceFlags: UInt8
    /// `tracestate` as received (or inherited), passed on unchanged; empty when none.
    public var traceState: String
    /// Whether this context came from another process (extracted from headers).
    public var isRemote: Bool

    public init(traceID: OTLPTraceID, spanID: UInt64, traceFlags: UInt8 = 1, traceState: String = "", isRemote: Bool = false) {
        self.traceID = traceID
        self.spanID = spanID
        self.traceFlags = traceFlags
        self.traceState = traceState
        self.isRemote = isRemote
    }

    public var isSampled: Bool { traceFlags & 1 == 1 }

    /// `00-<trace id>-<span id>-<flags>`.
    public var traceparent: String {
        "00-" + traceID.hex + "-" + OTLPHex.digits(spanID) + "-" + OTLPHex.digits(traceFlags)
    }

    /// Parses a W3C `traceparent` (version 00, or a later version read as 00 as the
    /// specification asks); nil when it is malformed, version ff, or an id is all zeros.
    public init?(traceparent: String, traceState: String? = nil) {
        let bytes = Array(traceparent.utf8)
        // version(2) - trace id(32) - span id(16) - flags(2): 55 bytes; later versions may add
        // fields after a further dash.
        guard bytes.count >= 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"),
            bytes[52] == UInt8(ascii: "-")
        else { return nil }
        guard let version = OTLPHex.parse(bytes[0..<2]), version != 0xff else { return nil }
        if version == 0 {
            guard bytes.count == 55 else { return nil }
        } else if bytes.count > 55 {
            guard bytes[55] == UInt8(ascii: "-") else { return nil }
        }
        guard let high = OTLPHex.parse(bytes[3..<19]), let low = OTLPHex.parse(bytes[19..<35]),
            let span = OTLPHex.parse(bytes[36..<52]), let flags = OTLPHex.parse(bytes[53..<55])
        else { return nil }
        guard high != 0 || low != 0, span != 0 else { return nil }
        self.init(
            traceID: OTLPTraceID(high: high, low: low), spanID: span, traceFlags: UInt8(flags),
            traceState: traceState ?? "", isRemote: true)
    }
}

/// Where an `OTLPTracer` keeps the current span's context in an `InstrumentationContext`.
public enum OTLPSpanContextKey: InstrumentationContextKey {
    public typealias Value = OTLPSpanContext
    public static var nameOverride: String? { "otlp-span-context" }
}

/// Lowercase hex, as W3C Trace Context writes ids.
enum OTLPHex {
    static func digits<T: FixedWidthInteger & UnsignedInteger>(_ value: T) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: T.bitWidth / 4 - text.count) + text
    }

    static func bigEndianBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    /// Lowercase hex digits only (W3C: uppercase is invalid), at most 16.
    static func parse(_ digits: ArraySlice<UInt8>) -> UInt64? {
        guard !digits.isEmpty, digits.count <= 16 else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            let nibble: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = digit - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(nibble)
        }
        return value
    }
}

/// Ids for spans and traces: SplitMix64 over a Weyl sequence whose start is drawn from the
/// system's generator once. `SystemRandomNumberGenerator` is a `getrandom` call per number, three
/// per root span; this is one atomic add, and its outputs are uniform and distinct for 2^64 calls,
/// which is what W3C Trace Context asks of ids (random, not secret).
enum OTLPRandom {
    private static let state = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    static func next() -> UInt64 {
        var z = state.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
