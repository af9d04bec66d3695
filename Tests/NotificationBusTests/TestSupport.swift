import TestSupport
import ZeroMQ

/// A raw ZeroMQ XPUB bound on a fresh ipc endpoint (10 s receive timeout), to feed a bus
/// hand-made frames as a foreign producer would. The socket keeps its context alive.
func rawPublisher() throws -> (socket: Socket, endpoint: String) {
    let socket = try Context().socket(.xpub)
    try socket.set(.receiveTimeout, .milliseconds(10_000))
    let endpoint = try temporaryIPCEndpoint()
    try socket.bind(endpoint)
    return (socket, endpoint)
}
