import Logging

/// How a command's run ends, decided from what happened and what it was asked (a pure value: no
/// bus, no printing, so every exit status its help text promises has a row in a table test):
/// the log lines that say what went wrong, plain detail lines, the summary, and the exit status.
///
/// The command writes them in this order, the summary last: a script reads the last line of
/// standard error (docs/command-line.md, "Summaries").
///
/// `package`, as are the `...Outcome` tables, `CommandSummary` and `HandshakeVerdict`: they are
/// how `nbus` words its own endings, here to be table-tested, not an API for an embedding user.
package struct CommandOutcome: Sendable {
    /// A log line (`nbus COMMAND: ` is added by the log, not here).
    package struct Line: Sendable, Equatable, CustomStringConvertible {
        package let level: Logger.Level
        package let text: String

        package init(_ level: Logger.Level, _ text: String) {
            self.level = level
            self.text = text
        }

        package var description: String { "\(level): \(text)" }
    }

    /// Log lines, in order, before everything else.
    package var lines: [Line] = []
    /// Plain lines written right before a text summary (never with a JSON one, whose object
    /// holds the same details): `subscribe --stats`.
    package var detailLines: [String] = []
    /// The summary, or nil when the command has none (`request`, or a failure that stops a
    /// command before it could count anything).
    package var summary: CommandSummary?
    /// What the process exits with; 0 is success.
    package var exitCode: Int32 = 0
    /// Bytes for standard output, written first (`request`'s reply).
    package var standardOutput: [UInt8] = []

    /// An outcome with `lines`, then `summary`, exiting with `exitCode` (detail lines and
    /// standard output, when a command has them, are set afterwards).
    package init(lines: [Line] = [], summary: CommandSummary? = nil, exitCode: Int32 = 0) {
        self.lines = lines
        self.summary = summary
        self.exitCode = exitCode
    }

    /// The lines' texts at `level`, for tests and messages.
    package func texts(at level: Logger.Level) -> [String] { lines.filter { $0.level == level }.map(\.text) }
}
