#if canImport(Glibc)
import Glibc
#endif

/// Checks for `ipc://` endpoints. libzmq's ipc bind silently takes over a socket file that another
/// socket is still listening on, leaving that listener unreachable; `Socket.bind` refuses instead.
enum IPCEndpoint {
    /// The filesystem path of an `ipc://` endpoint, or nil for other transports and for Linux
    /// abstract sockets (`ipc://@name`), which the kernel itself refuses to bind twice.
    static func path(of endpoint: String) -> String? {
        guard endpoint.hasPrefix("ipc://") else { return nil }
        let path = String(endpoint.dropFirst("ipc://".count))
        guard !path.isEmpty, !path.hasPrefix("@"), path != "*" else { return nil }
        return path
    }

    /// Whether something accepts connections on the Unix socket at `path` now.
    static func hasListener(atPath path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        return result == 0
    }

    /// Which file a bound socket made: its device and inode, so it can be removed at close
    /// only if it is still that file (not one another process bound at the path since).
    struct SocketFile: Equatable {
        let path: String
        let device: UInt64
        let inode: UInt64

        /// The Unix socket file at `path` now, or nil (missing, or not a socket).
        init?(atPath path: String) {
            var status = stat()
            // A failing lstat (ENOENT above all) means there is no socket file to speak of: nil.
            guard (try? systemCall("lstat", { lstat(path, &status) })) != nil,
                status.st_mode & S_IFMT == S_IFSOCK
            else { return nil }
            self.path = path
            device = UInt64(status.st_dev)
            inode = UInt64(status.st_ino)
        }

        /// Removes the file if the path still names this very file. libzmq 4.3 leaves the files
        /// of closed ipc listeners behind (on close, on unbind and on context termination).
        func removeIfUnchanged() {
            guard SocketFile(atPath: path) == self else { return }
            // Tidying after libzmq: a file that another process removed or that cannot be removed
            // (EACCES) costs nothing but a stale name, and a later bind replaces it anyway.
            _ = try? systemCall("unlink", { unlink(path) })
        }
    }
}
