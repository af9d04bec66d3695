import Foundation
import Synchronization
import TestSupport
import Testing
@testable import ToolSupport

#if canImport(Glibc)
import Glibc
#endif

@Suite("LineSplitter: the one line splitter of publish --lines, the workers' stdin and ChildProcess")
struct LineSplitterTests {
    /// Every line of `chunks` fed one after another, then the end of input.
    private func split(_ chunks: [String], maximum: Int = .max - 1) -> [InputLine] {
        var splitter = LineSplitter(maximumLineBytes: maximum)
        var lines: [InputLine] = []
        for chunk in chunks {
            splitter.append(Array(chunk.utf8))
            while let line = splitter.next() { lines.append(line) }
        }
        if let last = splitter.finish() { lines.append(last) }
        return lines
    }

    @Test("Lines across chunk boundaries, CRLF, empty lines and a last line without a newline")
    func boundaries() {
        #expect(
            split(["ab", "c\nd", "e\r", "\n\n", "f"])
                == [.bytes(Array("abc".utf8)), .bytes(Array("de".utf8)), .bytes([]), .bytes(Array("f".utf8))])
        #expect(split(["x\n"]) == [.bytes(Array("x".utf8))])
        #expect(split([]) == [])
        // A lone \r inside a line is kept; bytes that are not UTF-8 are kept as they are.
        var splitter = LineSplitter()
        splitter.append([0x61, 0x0D, 0x62, 0xFF, 0x0A])
        #expect(splitter.next() == .bytes([0x61, 0x0D, 0x62, 0xFF]))
        #expect(splitter.next() == nil && splitter.finish() == nil)
    }

    @Test("A line over the maximum is reported with its length and the next line is whole")
    func tooLong() {
        #expect(
            split(["12345", "6789\nok\n"], maximum: 4) == [.tooLong(byteCount: 9), .bytes(Array("ok".utf8))])
        // Exactly the maximum, with CRLF: kept.
        #expect(split(["1234\r\n"], maximum: 4) == [.bytes(Array("1234".utf8))])
        // A dropped chunk ending in the `\r` of a `\r\n` split across reads: the length leaves it out,
        // as it does for a line kept whole; a `\r` not followed by `\n` is part of the line.
        #expect(split(["123456\r", "\nok\n"], maximum: 4) == [.tooLong(byteCount: 6), .bytes(Array("ok".utf8))])
        #expect(split(["123456\r", "x\n"], maximum: 4) == [.tooLong(byteCount: 8)])
        // An unterminated long tail is reported at the end too.
        #expect(split(["abcdefgh"], maximum: 3) == [.tooLong(byteCount: 8)])
    }

    @Test("Memory stays bounded by the maximum while a long line streams in")
    func bounded() {
        var splitter = LineSplitter(maximumLineBytes: 16)
        for _ in 0..<10_000 {
            splitter.append([UInt8](repeating: 0x41, count: 100))
            #expect(splitter.next() == nil)
        }
        splitter.append(Array("\nend\n".utf8))
        #expect(splitter.next() == .tooLong(byteCount: 1_000_000))
        #expect(splitter.next()?.text == "end")
    }

    @Test("FileDescriptorLines reads a real pipe to its end, and reports a read failure", .timeLimit(.minutes(1)))
    func fileDescriptor() async throws {
        var fds: [Int32] = [-1, -1]
        #expect(pipe(&fds) == 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        let lines = try await runBlocking { () -> [InputLine] in
            let text = Array("one\r\ntwo\nthree".utf8)
            _ = text.withUnsafeBytes { write(writeEnd, $0.baseAddress, $0.count) }
            close(writeEnd)
            var reader = FileDescriptorLines(fileDescriptor: readEnd)
            var lines: [InputLine] = []
            while let line = reader.next() { lines.append(line) }
            close(readEnd)
            return lines
        }
        #expect(lines.map(\.text) == ["one", "two", "three"])
        // read(2) on a directory fails with EISDIR (a closed descriptor's number could be reused
        // by a test running alongside).
        let directory = open("/", O_RDONLY | O_DIRECTORY)
        #expect(directory >= 0)
        defer { close(directory) }
        var failing = FileDescriptorLines(fileDescriptor: directory)
        #expect(failing.next() == .readFailed(reason: String(cString: strerror(EISDIR))))
        #expect(failing.next() == nil)
    }
}

@Suite("OneShot: the one one-shot signal of the outer layers", .timeLimit(.minutes(1)))
struct OneShotTests {
    @Test("The first value wins and reaches waiters before and after it was set")
    func firstWins() async throws {
        let signal = OneShot<Int>()
        let early = Task { await signal.value }
        let earlyArrived = EventLog<Int>()
        Task { if let value = await early.value { earlyArrived.append(value) } }
        #expect(signal.current == nil)
        #expect(signal.finish(1))
        #expect(!signal.finish(2))
        await earlyArrived.wait(count: 1)
        #expect(earlyArrived.events == [1])
        #expect(await signal.value == 1 && signal.current == 1)
    }

    @Test("A cancelled waiter gets nil; valueIgnoringCancellation still waits for the value")
    func cancellation() async throws {
        let signal = OneShot<String>()
        let waiting = Task { await signal.value }
        waiting.cancel()
        #expect(await waiting.value == nil)

        let started = Gate()
        let stubborn = Task {
            started.fire()
            return await signal.valueIgnoringCancellation()
        }
        await started.wait()
        stubborn.cancel()
        signal.finish("exited")
        #expect(await stubborn.value(within: standardWait, "the uncancellable wait") == "exited")
    }
}

@Suite("PositionalJoin: many positional arguments parsed in linear time")
struct PositionalJoinTests {
    static let flags: Set<String> = ["--stats", "-h", "--help"]

    @Test(
        "positionals are joined at the first one's place; options keep their values",
        arguments: [
            (["a.one"], ["a.one"]),
            (["a.one", "b.two", "--timeout", "3"], ["a.one\u{0}b.two", "--timeout", "3"]),
            (["--count", "5", "a.one", "--stats", "b.two"], ["--count", "5", "a.one\u{0}b.two", "--stats"]),
            (["a.one", "--format=json", "b.two"], ["a.one\u{0}b.two", "--format=json"]),
            // An option whose value is missing (the next argument is an option): the parser says so.
            (["--timeout", "--stats", "a.one"], ["--timeout", "--stats", "a.one"]),
            // An unlisted flag takes the next argument as its value: it stays apart, never lost.
            (["a.one", "--quiet", "b.two", "c.three"], ["a.one\u{0}c.three", "--quiet", "b.two"]),
            // After --, everything is positional, dashes included.
            (["a.one", "--", "--odd", "b"], ["a.one\u{0}--odd\u{0}b"]),
            (["--stats"], ["--stats"]),
            (["", "a.one"], ["\u{0}a.one"]),
        ] as [([String], [String])])
    func join(arguments: [String], expected: [String]) {
        #expect(PositionalJoin.join(arguments, flags: Self.flags) == expected)
    }

    @Test("split gives back every value, empty ones included, and leaves unjoined ones alone")
    func split() {
        #expect(PositionalJoin.split(["a.one\u{0}\u{0}b.two", "c.three"]) == ["a.one", "", "b.two", "c.three"])
        let many = (0..<10_000).map { "p\($0).x.>" }
        let joined = PositionalJoin.join(many + ["--timeout", "1"], flags: Self.flags)
        #expect(joined.count == 3)
        #expect(PositionalJoin.split([joined[0]]) == many)
    }
}
