/// A subscription pattern: an exact name (`orders.created`), `*` for exactly one token
/// (`orders.*.eu`), or a final `>` for one or more trailing tokens (`orders.>`).
///
/// A pattern compiles to the longest literal ZeroMQ prefix, so filtering happens at the
/// publisher, plus an exact local matcher for what the prefix lets through.
public struct NamePattern: Hashable, Sendable, CustomStringConvertible {
    package enum Token: Hashable, Sendable {
        case literal([UInt8])
        case anyOne
        case anyRest
    }

    /// The pattern as written.
    public let rawValue: String
    package let tokens: [Token]
    /// The bytes given to `ZMQ_SUBSCRIBE`: `name` + NUL for an exact pattern, else the literal
    /// bytes before the first wildcard token (possibly empty: everything).
    public let subscriptionPrefix: [UInt8]

    /// Validates and compiles `rawValue`; throws a `NameError` saying what is wrong.
    ///
    /// Give it a `String` value: with a string literal argument, `NamePattern("x")` is the
    /// literal, which traps on an invalid pattern instead of throwing.
    public init(_ rawValue: String) throws(NameError) {
        var text = rawValue
        let error: NameError? = text.withUTF8 { bytes in
            NameGrammar.check(UnsafeRawBufferPointer(bytes), allowWildcards: true)
        }
        if let error { throw error }
        self.rawValue = text
        var tokens: [Token] = []
        for piece in text.utf8.split(separator: NameGrammar.dot, omittingEmptySubsequences: false) {
            if piece.elementsEqual([NameGrammar.star]) {
                tokens.append(.anyOne)
            } else if piece.elementsEqual([NameGrammar.greaterThan]) {
                tokens.append(.anyRest)
            } else {
                tokens.append(.literal(Array(piece)))
            }
        }
        self.tokens = tokens
        var prefix: [UInt8] = []
        var exact = true
        for (index, token) in tokens.enumerated() {
            guard case .literal(let bytes) = token else {
                exact = false
                break
            }
            prefix += bytes
            if index < tokens.count - 1 { prefix.append(NameGrammar.dot) }
        }
        if exact { prefix.append(0) }
        self.subscriptionPrefix = prefix
        self.isExact = exact
        self.exactName = exact ? NotificationName(validatedText: text) : nil
    }

    /// A pattern matching exactly `name`.
    public init(exactly name: NotificationName) {
        // A concrete name is always a valid exact pattern.
        rawValue = name.rawValue
        tokens = name.rawValue.utf8.split(separator: NameGrammar.dot).map { .literal(Array($0)) }
        subscriptionPrefix = Array(name.rawValue.utf8) + [0]
        isExact = true
        exactName = name
    }

    /// Byte-wise, like `NotificationName`.
    public static func == (lhs: NamePattern, rhs: NamePattern) -> Bool { lhs.tokens == rhs.tokens }

    public func hash(into hasher: inout Hasher) { hasher.combine(tokens) }

    /// True when the pattern has no wildcard.
    public let isExact: Bool

    /// The one name an exact pattern matches; nil for a pattern with wildcards.
    public let exactName: NotificationName?

    public var description: String { rawValue }

    /// Whether `name` matches the whole pattern.
    public func matches(_ name: NotificationName) -> Bool {
        var text = name.rawValue
        return text.withUTF8 { matches(nameBytes: UnsafeRawBufferPointer($0)) }
    }

    /// Whether the name in `bytes` (a valid name) matches; allocation-free, for the receive path.
    package func matches(nameBytes bytes: UnsafeRawBufferPointer) -> Bool {
        var position = 0
        let count = bytes.count
        for (index, token) in tokens.enumerated() {
            if position > count { return false }
            switch token {
            case .anyRest:
                return position < count  // one or more tokens remain
            case .anyOne:
                guard position < count else { return false }
                while position < count && bytes[position] != NameGrammar.dot { position += 1 }
            case .literal(let literal):
                guard position + literal.count <= count else { return false }
                for offset in 0..<literal.count where bytes[position + offset] != literal[offset] {
                    return false
                }
                position += literal.count
                if position < count && bytes[position] != NameGrammar.dot { return false }
            }
            if index < tokens.count - 1 {
                // Step over the dot between this token and the next; the name must have one.
                guard position < count else { return false }
                position += 1
            }
        }
        return position == count
    }
}

extension NamePattern: ExpressibleByStringLiteral {
    /// A pattern written in the source: `let feed: NamePattern = "feed.>"`. An invalid literal
    /// is a programmer error: it traps where it is evaluated, naming the reason. Patterns from
    /// input go through the throwing `init(_:)`.
    public init(stringLiteral value: StaticString) {
        do {
            try self.init(value.description)
        } catch {
            preconditionFailure("invalid NamePattern literal \"\(value)\": \(error)")
        }
    }
}
