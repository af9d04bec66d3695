#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A pipe whose both ends close on exec (the child gets its end through `dup2`, which clears the
/// flag; `SpawnedProcess` closes every other descriptor in its children anyway).
package struct Pipe2: Sendable {
    package let reading: Int32
    package let writing: Int32

    package init() throws(SpawnedProcess.SpawnError) {
        var descriptors: [Int32] = [0, 0]
        // pipe2 is declared only under _GNU_SOURCE: pipe, then the flag.
        guard pipe(&descriptors) == 0 else {
            throw SpawnedProcess.SpawnError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        reading = descriptors[0]
        writing = descriptors[1]
        _ = fcntl(reading, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writing, F_SETFD, FD_CLOEXEC)
    }

    package func closeBoth() {
        close(reading)
        close(writing)
    }
}
