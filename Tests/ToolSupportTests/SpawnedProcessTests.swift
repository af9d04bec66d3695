import Foundation
import TestSupport
import Testing
@testable import ToolSupport

#if canImport(Glibc)
import Glibc
#endif

// SpawnedProcess replaces Foundation's `Process` (whose `run()` can crash a process holding many
// descriptors): real children, /bin/sh, every property the tests and `nbus bench` rely on.
@Suite("SpawnedProcess: posix_spawn without Foundation's Process", .timeLimit(.minutes(1)))
struct SpawnedProcessTests {
    @Test("exit status, standard output, standard error merged or not, and input")
    func runsToTheEnd() throws {
        let echoed = try SpawnedProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(echoed.status == 3 && echoed.output == "out\n", "\(echoed)")
        let merged = try SpawnedProcess.run("/bin/sh", ["-c", "echo out; echo err >&2"], mergingStandardError: true)
        #expect(merged.status == 0 && merged.output.contains("out\n") && merged.output.contains("err\n"), "\(merged)")
        let copied = try SpawnedProcess.run("/bin/cat", [], input: "line one\nline two\n")
        #expect(copied.status == 0 && copied.output == "line one\nline two\n", "\(copied)")
        // No input: standard input is /dev/null, read to its end at once.
        let empty = try SpawnedProcess.run("/bin/cat", [])
        #expect(empty.status == 0 && empty.output.isEmpty)
    }

    @Test("a signal ends a child: bySignal with the signal's number; run reports 128 + it")
    func signalled() throws {
        let process = try SpawnedProcess.spawn("/bin/sleep", ["30"])
        #expect(process.isRunning)
        process.send(SIGTERM)
        let ended = process.waitUntilExit()
        #expect(ended == SpawnedProcess.Termination(status: SIGTERM, bySignal: true))
        #expect(!process.isRunning)
        // A second wait returns at once; a signal to a reaped child is not sent.
        #expect(process.waitUntilExit() == ended)
        process.send(SIGKILL)
        let killed = try SpawnedProcess.run("/bin/sh", ["-c", "kill -KILL $$"])
        #expect(killed.status == 128 + SIGKILL)
    }

    @Test("directory and environment are the child's; onExit runs before waitUntilExit returns")
    func directoryAndEnvironment() throws {
        let folder = try TempFolder()
        defer { folder.remove() }
        let output = try Pipe2()
        let seen = Watched<SpawnedProcess.Termination?>(nil)
        let process = try SpawnedProcess.spawn(
            "/bin/sh", ["-c", "pwd; echo \"$NBUS_SPAWN_TEST\""], directory: folder.path,
            environment: ["NBUS_SPAWN_TEST": "value one", "PATH": "/usr/bin:/bin"],
            standardOutput: .descriptor(output.writing)
        ) { ended in seen.update { $0 = ended } }
        close(output.writing)
        let text = String(decoding: SpawnedProcess.readToEnd(output.reading), as: UTF8.self)
        close(output.reading)
        let ended = process.waitUntilExit()
        #expect(seen.value == ended && ended.status == 0)
        let resolved = URL(fileURLWithPath: folder.path).resolvingSymlinksInPath().path
        #expect(text == "\(resolved)\nvalue one\n" || text == "\(folder.path)\nvalue one\n", "\(text)")
    }

    @Test("the child inherits no descriptor but its three streams")
    func descriptorsClosed() throws {
        // A descriptor without close-on-exec, as libzmq's or a careless library's may be.
        let open = Glibc.open("/dev/null", O_RDONLY)
        try #require(open >= 0)
        defer { close(open) }
        let listed = try SpawnedProcess.run("/bin/sh", ["-c", "ls /proc/self/fd"])
        let descriptors = listed.output.split(separator: "\n").compactMap { Int32($0) }
        // 0, 1, 2, and the one ls opens to list the folder.
        #expect(!descriptors.contains(open), "\(descriptors)")
        #expect(descriptors.filter { $0 > 2 }.count <= 1, "\(descriptors)")
    }

    @Test("a missing executable or directory is an error that names it")
    func failures() {
        #expect {
            _ = try SpawnedProcess.spawn("/nonexistent/tool", [])
        } throws: { "\($0)".contains("/nonexistent/tool") }
        #expect {
            _ = try SpawnedProcess.spawn("/bin/true", [], directory: "/nonexistent/folder")
        } throws: { "\($0)".contains("cannot start /bin/true") }
    }
}
