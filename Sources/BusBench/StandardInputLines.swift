import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How the benchmark workers hear from their runner: lines on stdin, read on a thread of their
/// own. End of file means the runner is gone; with `exitAtEOF` the worker then exits at once.
enum StandardInputLines {
    /// Starts the reader; `onLine` runs on the reader thread for each line (without its newline).
    static func read(workerName: String, exitAtEOF: Bool, onLine: @escaping @Sendable (String) -> Void) {
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4_096)
            var pending: [UInt8] = []
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                pending.append(contentsOf: buffer[0..<count])
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    onLine(line)
                }
            }
            guard exitAtEOF else { return }
            BusWorker.writeStandardError("nbus bench \(workerName): stdin closed, exiting\n")
            _exit(3)
        }
    }
}
