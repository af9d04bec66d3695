import Foundation

/// Why a benchmark failed: a child process misbehaved, or the accounting does not add up.
package enum BenchError: Error, CustomStringConvertible, Sendable {
    /// The executable to start is missing.
    case executableNotFound(String)
    /// A child could not be started.
    case launchFailed(label: String, reason: String)
    /// A child exited with a failure status, was killed, or timed out; its stderr is attached.
    case childFailed(label: String, status: String, stderr: String)
    /// A child said something unexpected on stdout (or nothing at all).
    case badOutput(label: String, output: String, stderr: String)
    /// Messages were lost or malformed where the benchmark requires none.
    case accountingMismatch(String)
    /// An invalid option combination (found before anything starts: a usage error).
    case invalidOptions(String)
    /// The scenario could not be set up (its subscriptions failed, a view is missing).
    case setupFailed(String)

    package var description: String {
        switch self {
        case .executableNotFound(let path):
            return "\(path) not found (build it: swift build -c release --product nbus-baseline)"
        case .launchFailed(let label, let reason):
            return "could not start \(label): \(reason)"
        case .childFailed(let label, let status, let stderr):
            return "\(label) failed (\(status))" + Self.indented(stderr, title: "its stderr")
        case .badOutput(let label, let output, let stderr):
            return "\(label) printed no usable result" + Self.indented(output, title: "its stdout")
                + Self.indented(stderr, title: "its stderr")
        case .accountingMismatch(let details):
            return "ACCOUNTING MISMATCH: \(details)"
        case .invalidOptions(let details):
            return details
        case .setupFailed(let details):
            return "setup failed: \(details)"
        }
    }

    private static func indented(_ text: String, title: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return "; \(title) is empty" }
        let lines = trimmed.split(separator: "\n", omittingEmptySubsequences: false).suffix(40)
        return "\n--- \(title) ---\n" + lines.map { "  " + $0 }.joined(separator: "\n")
    }
}

