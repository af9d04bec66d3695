import Foundation

/// The hidden command by which the benchmarks start their worker processes:
/// `nbus bench worker KIND OPTIONS`, OPTIONS being the worker's options as one JSON argument.
/// Built (`arguments`) and read back (`run`) here alone, so a runner and its worker cannot
/// disagree about a flag; `nbus` only hands the two arguments over.
package enum BenchWorkerCommand {
    /// The arguments that select the hidden command in `nbus`.
    package static let nbusSubcommand = ["bench", "worker"]

    /// The benchmark a worker belongs to.
    package enum Kind: String, Sendable, CaseIterable {
        /// `nbus bench throughput`: a bus publisher or subscriber (`BusWorkerOptions`).
        case throughput
        /// `nbus bench overload`: the fast publisher or the slow subscriber (`OverloadWorkerOptions`).
        case overload
        /// `nbus bench views` and `filter`: the publisher or a view host (`ViewsWorkerOptions`).
        case views
        /// The request/reply load test: `count` requests at once from one bus (`RequestWorkerOptions`).
        case requests
    }

    /// The exit status for options that do not decode (a runner and a worker of different builds).
    package static let usageStatus: Int32 = 64

    /// The command line that runs a worker: `command` (the hidden command's path in the
    /// executable), the kind, the options as JSON.
    static func arguments(_ command: [String], _ kind: Kind, _ options: some Encodable) -> [String] {
        let encoder = JSONEncoder()
        // Paths stay readable (and findable in /proc/PID/cmdline): no `\/`.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain structs cannot fail; "{}" would then fail loudly in the worker.
        let json = (try? encoder.encode(options)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return command + [kind.rawValue, json]
    }

    /// Runs the worker `kind` with `options` (a JSON object, as `arguments` wrote it, or by hand:
    /// keys left out keep their defaults, except the required ones); the process's exit status.
    package static func run(kind: Kind, options: String) async -> Int32 {
        do throws(WorkerOptionsError) {
            switch kind {
            case .throughput: return await BusWorker.run(try decode(BusWorkerOptions.self, options))
            case .overload: return await OverloadWorker.run(try decode(OverloadWorkerOptions.self, options))
            case .views: return await ViewsWorker.run(try decode(ViewsWorkerOptions.self, options))
            case .requests: return await RequestWorker.run(try decode(RequestWorkerOptions.self, options))
            }
        } catch {
            WorkerProcess.writeStandardError("nbus bench worker \(kind.rawValue): \(error)\n")
            return usageStatus
        }
    }

    /// `json` over the defaults (`template`): every key of `T` that `json` does not give keeps its
    /// default, and a required key missing is an error that names it.
    static func decode<T: BenchWorkerOptions>(_ type: T.Type, _ json: String) throws(WorkerOptionsError) -> T {
        // Not JSON, or not an object: one clear error below, whatever the parser's complaint was.
        guard let given = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else {
            throw WorkerOptionsError(message: "the options must be one JSON object, e.g. \(T.example)")
        }
        let known = Set(T.template.keys.keys).union(T.optionalKeys)
        func quoted(_ keys: [String]) -> String { keys.map { "'\($0)'" }.joined(separator: ", ") }
        var problems: [String] = []
        let missing = T.requiredKeys.filter { given[$0] == nil }
        if !missing.isEmpty { problems.append("missing required key(s) \(quoted(missing))") }
        let unknown = given.keys.filter { !known.contains($0) }.sorted()
        if !unknown.isEmpty { problems.append("unknown key(s) \(quoted(unknown))") }
        guard problems.isEmpty else {
            throw WorkerOptionsError(
                message: problems.joined(separator: "; ") + " (the keys are \(known.sorted().joined(separator: ", ")); "
                    + "e.g. \(T.example))")
        }
        let merged = T.template.keys.merging(given) { _, given in given }
        let options: T
        do {
            let data = try JSONSerialization.data(withJSONObject: merged)
            options = try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw WorkerOptionsError(message: "the options do not decode (\(error))")
        }
        if let problem = options.outOfRange { throw WorkerOptionsError(message: problem) }
        return options
    }

    /// "KEY must be from A to B" unless `value` is within `range`.
    static func range<V: Comparable>(_ key: String, _ value: V, _ range: ClosedRange<V>) -> String? {
        range.contains(value) ? nil : "\(key) must be from \(range.lowerBound) to \(range.upperBound), got \(value)"
    }
}

/// Options a worker cannot run with: the message says which key and what is expected.
struct WorkerOptionsError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
