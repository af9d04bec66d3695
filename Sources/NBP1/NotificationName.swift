#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a string is not a valid notification name or pattern.
///
/// An enum, not a struct with static members like `BusError`, decided before 0.1.0: each case is
/// one rule of NBP/1's name and pattern grammar (`protocol/NBP-1.md` §4 and §5), and that grammar
/// is frozen with the protocol: every implementation, in any language, accepts exactly the same
/// names. A new case would come only with a new rule, which is a protocol change released as a
/// breaking version; a caller's exhaustive `switch` breaking then is the point (one more rule to
/// explain to its users). Telling the same rules apart more finely is not done by adding cases.
public enum NameError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The name has no bytes.
    case empty
    /// The name is longer than 255 UTF-8 bytes.
    case tooLong(byteCount: Int)
    /// Two dots in a row, or a dot at the start or end.
    case emptyToken(byteOffset: Int)
    /// A NUL, space or control byte (0x00-0x20, 0x7F) at `byteOffset`.
    case forbiddenByte(UInt8, byteOffset: Int)
    /// `*` or `>` inside a pattern token (`ord*`).
    case misplacedWildcard(byteOffset: Int)
    /// `*` or `>` in a concrete name (`orders.*` given where a name is wanted: to post, say).
    case wildcardInName(byteOffset: Int)
    /// A `>` token that is not the last token of a pattern.
    case restWildcardNotLast
    /// The bytes are not valid UTF-8.
    case invalidUTF8

    public var description: String {
        switch self {
        case .empty: return "a notification name cannot be empty"
        case .tooLong(let count): return "a notification name is at most 255 UTF-8 bytes, this one has \(count)"
        case .emptyToken(let offset): return "empty token at byte \(offset) (no leading, trailing or double dots)"
        case .forbiddenByte(let byte, let offset):
            return "forbidden byte 0x\(String(byte, radix: 16)) at byte \(offset) (no NUL, spaces or control characters)"
        case .misplacedWildcard(let offset):
            return "wildcard at byte \(offset): '*' and '>' may only stand as whole tokens of a pattern"
        case .wildcardInName(let offset):
            // The same words as examples/python/producer.py: patterns are for subscribing.
            return "wildcard at byte \(offset): a notification name cannot hold wildcards ('*' and '>' are for patterns, to subscribe with)"
        case .restWildcardNotLast: return "'>' may only be the last token of a pattern"
        case .invalidUTF8: return "the name is not valid UTF-8"
        }
    }
}

/// A concrete notification name: 1 to 255 bytes of UTF-8, dot-separated non-empty tokens,
/// no NUL, space or control bytes, no wildcards (`orders.created`, `café.订单`).
public struct NotificationName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The name as text.
    public let rawValue: String

    /// Validates `rawValue`; throws a `NameError` saying what is wrong.
    ///
    /// Give it a `String` value: with a string literal argument, `NotificationName("x")` is the
    /// literal (Swift's rule for literal-convertible types), which traps on an invalid name
    /// instead of throwing.
    public init(_ rawValue: String) throws(NameError) {
        var text = rawValue
        let error: NameError? = text.withUTF8 { bytes in
            NameGrammar.check(UnsafeRawBufferPointer(bytes), allowWildcards: false)
        }
        if let error { throw error }
        self.rawValue = text
    }

    /// For text already checked by `NameGrammar` (an exact pattern's own text).
    package init(validatedText text: String) {
        rawValue = text
    }

    /// For bytes already checked by `NameGrammar` (the decoder's path).
    package init(validatedBytes bytes: UnsafeRawBufferPointer) {
        rawValue = String(decoding: bytes, as: UTF8.self)
    }

    public var description: String { rawValue }

    /// Byte-wise, as on the wire and in ZeroMQ prefixes (not Swift's canonical-equivalence `==`).
    public static func == (lhs: NotificationName, rhs: NotificationName) -> Bool {
        var left = lhs.rawValue
        var right = rhs.rawValue
        return left.withUTF8 { a in
            right.withUTF8 { b in
                guard a.count == b.count else { return false }
                guard let x = a.baseAddress, let y = b.baseAddress else { return true }  // both empty
                // The same storage (a name compared with a copy of itself: the bus's post and
                // receive paths do so per message) needs no byte comparison.
                return x == y || memcmp(x, y, a.count) == 0
            }
        }
    }

    /// Hashes the UTF-8 bytes in one call (the bus hashes names on every post and receive).
    public func hash(into hasher: inout Hasher) {
        var text = rawValue
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Byte-wise order.
    public static func < (lhs: NotificationName, rhs: NotificationName) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }
}

extension NotificationName: ExpressibleByStringLiteral {
    /// A name written in the source: `static let created: NotificationName = "orders.created"`.
    /// An invalid literal is a programmer error: it traps where it is evaluated, naming the
    /// reason (Swift checks no literal's contents at compile time without a macro). Names from
    /// input go through the throwing `init(_:)`.
    public init(stringLiteral value: StaticString) {
        do {
            try self.init(value.description)
        } catch {
            preconditionFailure("invalid NotificationName literal \"\(value)\": \(error)")
        }
    }
}
