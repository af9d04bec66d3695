import HummingbirdCore
import Logging
import NIOCore

// Internal, not private: MonitoringHTTPService (MonitoringServer.swift) sets it up.
/// Hummingbird's HTTP/1 child channel with the connection cap in front: every accepted connection
/// first passes `ConnectionCapHandler`, then NIO's bounded HTTP/1 decoder.
struct MonitoringChildChannel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let http: HTTP1Channel
    let connections: ConnectionRegistry

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        // Called on the channel's event loop, as Hummingbird's own setup is.
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionCapHandler(connections: connections))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return http.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await http.handle(value: value, logger: logger)
    }
}

/// First in each connection's pipeline: past the cap, a new connection is closed as soon as it is
/// active (before a byte of it is parsed); otherwise it is counted until it closes.
private final class ConnectionCapHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let connections: ConnectionRegistry
    private var admitted = false

    init(connections: ConnectionRegistry) {
        self.connections = connections
    }

    func channelActive(context: ChannelHandlerContext) {
        admitted = connections.admit(context.channel)
        context.fireChannelActive()
        if !admitted { context.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if admitted { connections.remove(context.channel) }
        admitted = false
        context.fireChannelInactive()
    }
}
