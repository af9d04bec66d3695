import ArgumentParser
import Foundation
import Logging
import NotificationBus
import Synchronization

/// `nbus subscribe --decode`: which payloads must decode to be printed (issue 42, item 5). What
/// does not is counted per pattern (the summary's `undecodable`, `/metrics`'
/// `nbus_subscription_undecodable_total`), logged, and not printed: never a crash, and the lines
/// of the payloads that decode are the lines printed without `--decode`.
enum PayloadDecoding: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Every payload is JSON, as a typed observer reads it: content type `json` or `unspecified`
    /// (a producer that did not say), and a JSON text (any value, `3` and `"x"` included).
    case json
    /// By content type: a `json` payload is a JSON text, a `text` one UTF-8; other types (and
    /// `unspecified`) pass unchecked, having no decoding here.
    case auto

    /// Why `notification` does not decode, or nil when it does.
    func failure(_ notification: BusNotification) -> String? {
        // A retained post with no payload clears its name's value (NBP-1 §18.1): an operation,
        // not a message that failed to decode. Printed as it is, as without --decode.
        if notification.clearsRetainedValue { return nil }
        let type = notification.contentType
        switch self {
        case .json:
            guard type == .json || type == .unspecified else { return "content type \(type.name), not json" }
            return Self.isJSON(notification.payload) ? nil : "not a JSON text"
        case .auto:
            if type == .json { return Self.isJSON(notification.payload) ? nil : "not a JSON text" }
            if type == .text { return String(validatingUTF8: notification.payload) == nil ? "text that is not UTF-8" : nil }
            return nil
        }
    }

    /// Whether `payload` is one JSON text (RFC 8259: any value at the top level) as a typed
    /// observer reads it: through `BusJSON`, so its rules hold here too (no trailing comma,
    /// valid UTF-8, nesting at most `BusJSON.maximumDepth`). Foundation's JSONSerialization,
    /// used before, printed `{"a":1,}` and 129 nested arrays that every typed observer refuses.
    static func isJSON(_ payload: [UInt8]) -> Bool {
        guard !payload.isEmpty else { return false }
        return (try? BusJSON.decode(AnyJSONValue.self, from: payload)) != nil
    }
}

/// Any JSON value, read whole through whatever decoder reads it: every member of an object,
/// every element of an array, and a scalar of any kind. `--decode json` uses it to ask BusJSON
/// whether a payload is JSON without knowing the type an observer would decode.
private struct AnyJSONValue: Decodable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            for key in object.allKeys { _ = try object.decode(AnyJSONValue.self, forKey: key) }
            return
        }
        if var array = try? decoder.unkeyedContainer() {
            while !array.isAtEnd { _ = try array.decode(AnyJSONValue.self) }
            return
        }
        let scalar = try decoder.singleValueContainer()
        if scalar.decodeNil() || (try? scalar.decode(Bool.self)) != nil || (try? scalar.decode(Double.self)) != nil { return }
        _ = try scalar.decode(String.self)
    }
}

/// The payloads that did not decode, per pattern (command-line order), read by the summary and by
/// `/metrics` as the subscription's `SubscriptionStats.undecodable`.
final class UndecodableCounts: Sendable {
    private let counts: Mutex<[UInt64]>
    private let patterns: [String]
    private let logger = CommandLog.logger("subscribe")

    init(patterns: [String]) {
        self.patterns = patterns
        counts = Mutex(Array(repeating: 0, count: patterns.count))
    }

    /// Counts `notification`, received through pattern `index`, as undecodable for `reason`: the
    /// first of each pattern as a warning, the rest at debug level (a stream of them would bury
    /// every other line).
    func note(_ notification: BusNotification, pattern index: Int, reason: String) {
        let count = counts.withLock { counts in
            counts[index] += 1
            return counts[index]
        }
        let text = "undecodable \(notification.name) seq=\(notification.sequence): \(reason) (not printed)"
        let metadata: Logger.Metadata = ["pattern": "\(patterns[index])", "undecodable": "\(count)"]
        if count == 1 {
            logger.warning("\(text); later ones of this pattern are counted, and logged at debug level", metadata: metadata)
        } else {
            logger.debug("\(text)", metadata: metadata)
        }
    }

    /// Pattern `index`'s count.
    func count(_ index: Int) -> UInt64 { counts.withLock { $0[index] } }

    /// `stats` with pattern `index`'s count added to its `undecodable`.
    func adding(to stats: SubscriptionStats, pattern index: Int) -> SubscriptionStats {
        var stats = stats
        stats.undecodable += count(index)
        return stats
    }
}
