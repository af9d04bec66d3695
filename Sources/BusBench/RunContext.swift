import Foundation
import ToolSupport
import ZeroMQ

#if canImport(Glibc)
import Glibc
#endif

/// Where and how a benchmark ran: printed at the top of every report, so a figure is never read
/// without the build, the machine and the code that produced it.
package struct RunContext: Codable, Sendable, Equatable {
    /// `debug` or `release`: the configuration this binary (and so every worker process) was built in.
    package var buildConfiguration: String
    /// Host name, OS and kernel, CPU architecture and model.
    package var machine: String
    /// Cores this process may use.
    package var cores: Int
    /// Physical memory, bytes (0 when unknown).
    package var memoryBytes: UInt64
    /// The libzmq this process is linked against (`zmq_version`).
    package var libzmqVersion: String
    /// The git commit of the working directory's checkout (with `-dirty` when it has changes), nil
    /// outside a checkout or without git.
    package var gitCommit: String?
    /// The command line, as given.
    package var commandLine: String
    /// How loaded the machine was during the run (nil when /proc could not be read, or before
    /// the run ended).
    package var load: MachineLoad?

    /// Whether this is an unoptimised build (SwiftPM defines DEBUG for `-c debug`).
    package static var isDebugBuild: Bool {
        #if DEBUG
        return true
        #else
        return false
        #endif
    }

    /// The warning a debug build prints before its figures.
    package static let debugWarning =
        "DEBUG BUILD: these figures come from an unoptimised build (swift build without -c release), "
        + "several times slower than a release build; a target missed here may be met by a release build "
        + "(swift build -c release, then .build/release/nbus ...)."

    package init(
        buildConfiguration: String, machine: String, cores: Int, memoryBytes: UInt64, libzmqVersion: String,
        gitCommit: String?, commandLine: String
    ) {
        self.buildConfiguration = buildConfiguration
        self.machine = machine
        self.cores = cores
        self.memoryBytes = memoryBytes
        self.libzmqVersion = libzmqVersion
        self.gitCommit = gitCommit
        self.commandLine = commandLine
    }

    /// This process's context now.
    package static func current(arguments: [String] = CommandLine.arguments) -> RunContext {
        let version = LibZMQ.version
        return RunContext(
            buildConfiguration: isDebugBuild ? "debug" : "release", machine: machineDescription(),
            cores: ProcessInfo.processInfo.activeProcessorCount, memoryBytes: ProcessInfo.processInfo.physicalMemory,
            libzmqVersion: "\(version.major).\(version.minor).\(version.patch)", gitCommit: gitCommit(),
            commandLine: arguments.map(shellQuoted).joined(separator: " "))
    }

    /// One line per fact, for the terminal and the page.
    package var lines: [(String, String)] {
        var lines: [(String, String)] = [
            ("build", buildConfiguration + (buildConfiguration == "debug" ? " (unoptimised: see the warning)" : "")),
            ("machine", machine),
            ("cores", "\(cores)" + (memoryBytes > 0 ? String(format: ", %.1f GB memory", Double(memoryBytes) / 1e9) : "")),
            ("libzmq", libzmqVersion),
        ]
        lines.append(("commit", gitCommit ?? "not in a git checkout"))
        lines.append(("command", commandLine))
        lines.append(("load", load?.description(cores: cores) ?? "not measured (no /proc/loadavg, /proc/stat)"))
        return lines
    }

    private static func machineDescription() -> String {
        var parts: [String] = []
        var names = utsname()
        if uname(&names) == 0 {
            func text<T>(_ field: T) -> String {
                withUnsafeBytes(of: field) { bytes in
                    String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                }
            }
            parts.append(text(names.nodename))
            parts.append("\(text(names.sysname)) \(text(names.release)) \(text(names.machine))")
        }
        // The CPU model is a nicety of the report's header: without /proc/cpuinfo it is left out.
        if let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
            let model = line.split(separator: ":", maxSplits: 1).last
        {
            parts.append(model.trimmingCharacters(in: .whitespaces))
        }
        return parts.isEmpty ? "unknown" : parts.joined(separator: ", ")
    }

    /// `git rev-parse --short HEAD` in the working directory (plus `-dirty`), nil when that fails.
    private static func gitCommit() -> String? {
        guard let commit = run(["rev-parse", "--short=12", "HEAD"]), !commit.isEmpty else { return nil }
        let status = run(["status", "--porcelain", "--untracked-files=no"]) ?? ""
        return status.isEmpty ? commit : commit + "-dirty"
    }

    private static func run(_ arguments: [String]) -> String? {
        // Not Foundation's `Process`: see `SpawnedProcess`.
        // No git, or not a checkout: the report says "not in a git checkout" rather than failing a run.
        guard let (status, output) = try? SpawnedProcess.run("/usr/bin/env", ["git"] + arguments), status == 0 else { return nil }
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func shellQuoted(_ argument: String) -> String {
        let safe = argument.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:,+@%".contains($0) }
        return safe && !argument.isEmpty ? argument : "'" + argument.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
