import ArgumentParser
import BusOperations
import Foundation
import NIOCore
import ToolSupport
import ZeroMQ

@main
struct NBus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nbus",
        abstract: "NotificationBus: a cross-process NotificationCenter carried by ZeroMQ.",
        discussion: """
            Notifications are named (`orders.created`) and travel as NBP/1 frames \
            (NBP-1.md: share/doc/nbus/ where nbus is installed, protocol/ in the source). Patterns: exact `orders.created`, one token \
            `orders.*.eu`, the rest `orders.>`.

            Log lines go to standard error in one format, set by --log-level and --log-format \
            text|json, which every command that logs takes (demo and bench print reports \
            instead); machine-readable output is --format json (docs/command-line.md). \
            Shell completions: \
            `nbus --generate-completion-script bash|zsh|fish` (`make install` and the Debian \
            package install them). Deployment, units and CURVE: deployment.md, beside NBP-1.md.
            """,
        subcommands: [Demo.self, BrokerCommand.self, Publish.self, Subscribe.self, Request.self, ReplyCommand.self, Keygen.self, Bench.self]
    )

    /// `-V` and `--version`, on this command alone: argument-parser's own `--version` (from
    /// `configuration.version`) has no short form and answers on every subcommand too.
    @Flag(name: [.customShort("V"), .customLong("version")], help: "Show the version.")
    var version = false

    func run() async throws {
        guard version else { throw CleanExit.helpRequest(self) }
        print(NotificationBusVersion.current)
    }

    /// Refuses arguments that are not valid UTF-8, then parses and runs as ArgumentParser does.
    ///
    /// Swift's `CommandLine.arguments` repairs invalid UTF-8 with U+FFFD, so `nbus publish $'\xff'`
    /// and `nbus publish $'\xfe'` would both post the name "\u{FFFD}": different input, the same
    /// effect, silently. The raw `argv` is checked once here, for every command, before parsing.
    static func main() async {
        if let message = invalidUTF8Argument(CommandLine.unsafeArgv, count: Int(CommandLine.argc)) {
            exit(withError: ValidationError(message))
        }
        CommandLog.bootstrap()
        // The --http server runs on NIO's shared event loops: one thread serves a few scrapes a
        // minute, where the default (one per core) would start 64 on a 64-core broker host.
        NIOSingletons.groupLoopCountSuggestion = 1
        // glibc gives the top of the heap back once 128 KiB of it is free, and takes it again at
        // the next burst: every frame libzmq queues became a page fault (78,000 per 1,000,000
        // notifications at a subscriber). Keep up to 64 MiB free instead; the broker gives memory
        // back itself when idle (`releaseFreeMemory`).
        keepFreeHeap(upTo: 64 << 20)
        await main(Subscribe.joiningPatterns(Array(CommandLine.arguments.dropFirst())))
    }

    /// The message for the first of `argv[1..<count]` that is not valid UTF-8, or nil when all are.
    static func invalidUTF8Argument(_ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>, count: Int) -> String? {
        guard count > 1 else { return nil }
        for index in 1..<count {
            guard let argument = argv[index], String(validatingCString: argument) == nil else { continue }
            let bytes = UnsafeRawBufferPointer(start: argument, count: strlen(argument))
            // Printable ASCII as is, every other byte as \xNN: the reader sees which bytes are wrong.
            let shown = bytes.map { byte in
                (0x20..<0x7F).contains(byte) && byte != UInt8(ascii: "\\")
                    ? String(UnicodeScalar(byte)) : String(format: "\\x%02X", byte)
            }.joined()
            return "argument \(index) ('\(shown)') is not valid UTF-8: nbus takes names, patterns, payloads and "
                + "options as UTF-8 text (publish --lines sends any bytes from standard input)"
        }
        return nil
    }
}
