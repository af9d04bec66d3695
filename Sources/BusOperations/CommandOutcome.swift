import Logging

/// How a command's run ends, decided from what happened and what it was asked (a pure value: no
/// bus, no printing, so every exit status its help text promises has a row in a table test):
/// the log lines that say what went wrong, plain detail lines, the summary, and the exit status.
///
/// The command writes them in this order, the summary last: a script reads the last line of
/// standard error (docs/command-line.md, "Summaries").
public struct CommandOutcome: Sendable {
    /// A log line (`nbus COMMAND: ` is added by the log, not here).
    public struct Line: Sendable, Equatable, CustomStringConvertible {
        public let level: Logger.Level
        public let text: String

        public init(_ level: Logger.Level, _ text: String) {
            self.level = level
            self.text = text
        }

        public var description: String { "\(level): \(text)" }
    }

    /// Log lines, in order, before everything else.
    public var lines: [Line] = []
    /// Plain lines written right before a text summary (never with a JSON one, whose object
    /// holds the same details): `subscribe --stats`.
    public var detailLines: [String] = []
    /// The summary, or nil when the command has none (`request`, or a failure that stops a
    /// command before it could count anything).
    public var summary: CommandSummary?
    /// What the process exits with; 0 is success.
    public var exitCode: Int32 = 0
    /// Bytes for standard output, written first (`request`'s reply).
    public var standardOutput: [UInt8] = []

    /// An outcome with `lines`, then `summary`, exiting with `exitCode` (detail lines and
    /// standard output, when a command has them, are set afterwards).
    public init(lines: [Line] = [], summary: CommandSummary? = nil, exitCode: Int32 = 0) {
        self.lines = lines
        self.summary = summary
        self.exitCode = exitCode
    }

    /// The lines' texts at `level`, for tests and messages.
    public func texts(at level: Logger.Level) -> [String] { lines.filter { $0.level == level }.map(\.text) }
}
