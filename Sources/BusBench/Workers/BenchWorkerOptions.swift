import Foundation

/// A worker's options, as `BenchWorkerCommand` carries them on the command line.
protocol BenchWorkerOptions: Codable {
    /// The defaults, for the keys a hand-written command line leaves out.
    static var template: Self { get }
    /// The keys a command line must give.
    static var requiredKeys: [String] { get }
    /// The keys of optional properties (absent from `template`'s JSON when nil).
    static var optionalKeys: [String] { get }
    /// A minimal options object, for error messages.
    static var example: String { get }
    /// The first value out of its range, as a sentence; nil when every one is usable (a worker
    /// must not trap on a hand-written value).
    var outOfRange: String? { get }
}

extension BenchWorkerOptions {
    /// The options as a JSON object's keys and values.
    var keys: [String: Any] {
        // Encoding these plain option structs cannot fail; an empty template would make every key
        // "unknown", which the decode below reports loudly rather than silently.
        guard let data = try? JSONEncoder().encode(self),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }
}
