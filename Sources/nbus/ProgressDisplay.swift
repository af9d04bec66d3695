import ArgumentParser
import BusBench
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Progress of a long benchmark on stderr: step lines, and the posting progress as a bar that
/// updates in place (carriage return) when stderr is a terminal, or as a plain line every few
/// seconds when it is not (a log, a pipe, CI).
final class ProgressDisplay: Sendable {
    private struct State {
        /// Whether the last thing written is a bar without its newline.
        var barShown = false
        var lastDraw: UInt64 = 0
        var lastLine: UInt64 = 0
        var lastRun = ""
    }

    /// Step lines are written (not `--quiet`).
    let steps: Bool
    /// The posting progress is shown (bar or periodic lines).
    let bar: Bool
    /// stderr is a terminal: the bar is redrawn in place.
    let inPlace: Bool
    private let state = Mutex(State())
    /// Redraw at most this often (terminal), or write a line this often (not a terminal), ns.
    private let drawInterval: UInt64 = 100_000_000
    private let lineInterval: UInt64 = 5_000_000_000

    init(steps: Bool, bar: Bool, inPlace: Bool = isatty(STDERR_FILENO) == 1) {
        self.steps = steps
        self.bar = bar
        self.inPlace = inPlace
    }

    /// The handlers to give a benchmark run.
    var handlers: BenchProgressHandlers {
        BenchProgressHandlers(step: { [self] in step($0) }, posting: { [self] in posting($0) })
    }

    /// Writes one step line (clearing a bar first, which the next update redraws).
    func step(_ line: String) {
        guard steps else { return }
        state.withLock { state in
            var text = line + "\n"
            if state.barShown {
                text = "\r\u{1B}[2K" + text
                state.barShown = false
            }
            Self.write(text)
        }
    }

    /// Shows the posting progress: redraws the bar, or writes a line every 5 s.
    func posting(_ progress: PostingProgress) {
        guard bar else { return }
        let now = Self.monotonic()
        state.withLock { state in
            let newRun = progress.run != state.lastRun
            if newRun {
                state.lastRun = progress.run
                state.lastLine = now
            }
            if inPlace {
                guard newRun || now - state.lastDraw >= drawInterval || progress.fraction >= 1 else { return }
                state.lastDraw = now
                Self.write("\r\u{1B}[2K" + Self.bar(progress, width: Self.terminalColumns()))
                state.barShown = true
            } else {
                guard now - state.lastLine >= lineInterval else { return }
                state.lastLine = now
                Self.write(Self.line(progress) + "\n")
            }
        }
    }

    /// Ends a bar still on screen with a newline (call before printing the report).
    func finish() {
        state.withLock { state in
            if state.barShown { Self.write("\n") }
            state.barShown = false
        }
    }

    /// `[views] posting [#########...........]  45%  4.5/10 s  90,000 posted`, fitted to `width`.
    static func bar(_ progress: PostingProgress, width: Int) -> String {
        let percent = Int((progress.fraction * 100).rounded(.down))
        let tail = String(format: " %3d%%  %.1f/%@ s  ", percent, progress.elapsedSeconds, number(progress.plannedSeconds))
            + "\(count(progress.posted)) posted"
        let head = "[\(progress.run)] posting "
        let room = width - 1 - head.count - tail.count - 2
        guard room >= 10 else { return String((head + tail).prefix(max(1, width - 1))) }
        let cells = min(40, room)
        let filled = Int((progress.fraction * Double(cells)).rounded(.down))
        return head + "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: cells - filled) + "]" + tail
    }

    /// `  [views] posting: 45%, 4.5 of 10 s, 90,000 posted`.
    static func line(_ progress: PostingProgress) -> String {
        String(
            format: "  [%@] posting: %d%%, %.1f of %@ s, %@ posted", progress.run, Int((progress.fraction * 100).rounded(.down)),
            progress.elapsedSeconds, number(progress.plannedSeconds), count(progress.posted))
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(format: "%.0f", value) : String(format: "%g", value)
    }

    private static func count(_ value: Int) -> String { Format.count(value) }

    private static func terminalColumns() -> Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }

    private static func monotonic() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    private static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// Runs a benchmark until it returns, or until SIGINT/SIGTERM: then the benchmark's task is
/// cancelled, which stops every child process it started (SIGTERM, then SIGKILL) and waits for
/// them, and the command exits 128 + the signal. A second signal exits at once.
func runInterruptibly<T: Sendable>(
    _ display: ProgressDisplay, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    await TerminationSignals.install()
    let outcome = await withTaskGroup(of: InterruptibleOutcome<T>?.self) { group -> InterruptibleOutcome<T> in
        group.addTask {
            do { return .finished(.success(try await body())) } catch { return .finished(.failure(error)) }
        }
        group.addTask { await TerminationSignals.wait().map { .signal($0) } }
        var result = InterruptibleOutcome<T>.signal(SIGINT)
        for await next in group {
            guard let next else { continue }
            result = next
            break
        }
        group.cancelAll()
        if case .signal = result {
            // The benchmark's cancellation handler stops its children; wait for it to finish.
            while let next = await group.next() { _ = next }
        }
        return result
    }
    switch outcome {
    case .finished(let result):
        return try result.get()
    case .signal(let number):
        display.finish()
        FileHandle.standardError.write(Data("interrupted (signal \(number)): every child process stopped\n".utf8))
        throw ExitCode(128 + number)
    }
}

/// How `runInterruptibly`'s body ended: its result, or a termination signal first.
private enum InterruptibleOutcome<T: Sendable>: Sendable {
    case finished(Result<T, any Error>)
    case signal(Int32)
}
