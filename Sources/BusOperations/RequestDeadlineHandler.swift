import NIOCore
import NIOHTTPTypes

// Internal, not private: MonitoringHTTPService (MonitoringServer.swift) installs it.
/// The time limits of one connection, after the HTTP/1 decoder: a whole request (head and body)
/// within `requestTimeout` of the connection opening or of the previous response, the response
/// taken by the client within `responseTimeout`, a body of at most `maximumBodySize`. Whatever
/// a client does, its connection ends within seconds.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var deadline: Scheduled<Void>?
    private var bodyBytes = 0
    /// After a malformed request: its 400 answer is the last one.
    private var closeAfterResponse = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context, MonitoringHTTPService.requestTimeout) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context, MonitoringHTTPService.requestTimeout)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            bodyBytes = 0
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
            if bodyBytes > MonitoringHTTPService.maximumBodySize {
                context.close(promise: nil)
                return
            }
        case .end:
            // The request is in; now the answer has to go out.
            arm(context, MonitoringHTTPService.responseTimeout)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        // Once the response has reached the socket, the client has requestTimeout for its next
        // request (or to leave).
        let written = promise ?? context.eventLoop.makePromise()
        context.write(data, promise: written)
        written.futureResult.assumeIsolated().whenComplete { result in
            // A write that failed (the client left) closes the connection; its error says nothing
            // the close does not.
            if self.closeAfterResponse || (try? result.get()) == nil {
                context.close(promise: nil)
            } else {
                self.arm(context, MonitoringHTTPService.requestTimeout)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed or oversized head (NIO's decoder reads no further): Hummingbird answers
        // 400, and the connection then ends, however much more the client sends.
        closeAfterResponse = true
        arm(context, MonitoringHTTPService.responseTimeout)
        context.fireErrorCaught(error)
    }

    private func arm(_ context: ChannelHandlerContext, _ timeout: Duration) {
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(timeout.nanoseconds)) {
            context.close(promise: nil)
        }
    }
}
