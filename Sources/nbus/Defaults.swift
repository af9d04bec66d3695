import ArgumentParser
import NotificationBus

/// Where `nbus broker` listens by default, and so where `publish` and `subscribe` connect.
enum DefaultEndpoints {
    static let frontend = "tcp://127.0.0.1:5550"
    static let backend = "tcp://127.0.0.1:5551"
}

/// `--bind`/`--connect`, shared by publish and subscribe.
struct EndpointOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Bind this endpoint (direct topology: others connect here). Repeatable.", valueName: "endpoint"))
    var bind: [String] = []

    @Option(name: .long, help: ArgumentHelp("Connect to this endpoint (a broker, or a binding peer). Repeatable.", valueName: "endpoint"))
    var connect: [String] = []

    func attachments(defaultConnect: String) -> [Attachment] {
        let attachments = bind.map(Attachment.bind) + connect.map(Attachment.connect)
        return attachments.isEmpty ? [.connect(defaultConnect)] : attachments
    }
}

/// Turns a `BusError` into a one-line message on stderr and a non-zero exit.
func fail(_ command: String, _ error: any Error, code: Int32 = 1) -> ExitCode {
    printError("nbus \(command): \(error)")
    return ExitCode(code)
}

/// Prints to standard error.
func printError(_ text: String) {
    var standardError = StandardError()
    print(text, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileWriter.standardError.write(string)
    }
}
