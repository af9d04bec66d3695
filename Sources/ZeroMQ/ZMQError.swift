import CZeroMQ

/// An error from libzmq: the `errno` it set, the operation that failed, and `zmq_strerror`'s text.
public struct ZMQError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The errors callers routinely branch on, by name; everything else is `.other`.
    public enum Kind: Sendable, Equatable {
        /// `EAGAIN`: a non-blocking call would block, or a send/receive timeout expired.
        case wouldBlock
        /// `ETERM`: the context is shutting down; the socket must be closed.
        case contextTerminated
        /// `EADDRINUSE`: the endpoint is already bound.
        case addressInUse
        /// `EINVAL`: an argument (endpoint, option, value) was rejected.
        case invalidArgument
        /// `EPROTONOSUPPORT`: the transport is not supported (or misspelled).
        case protocolNotSupported
        /// `ENOENT`: unbind/disconnect of an endpoint that is not bound/connected.
        case endpointNotFound
        /// `EFSM`: the socket is in the wrong state for this call (REQ/REP order).
        case wrongState
        /// `ENOTSUP`: the operation is not supported by this socket type.
        case notSupported
        /// Any other `errno`.
        case other
    }

    /// The `errno` value libzmq reported.
    public let code: Int32
    /// The libzmq function that failed, e.g. `"zmq_bind"`.
    public let operation: String
    /// The endpoint the call was given (bind, connect, unbind, disconnect), so the message says
    /// which of several endpoints failed.
    public let endpoint: String?

    /// Creates an error for `code` raised by `operation` (on `endpoint`, when it took one).
    public init(code: Int32, operation: String, endpoint: String? = nil) {
        self.code = code
        self.operation = operation
        self.endpoint = endpoint
    }

    /// The same error, naming the endpoint the call was given.
    public func on(endpoint: String) -> ZMQError {
        ZMQError(code: code, operation: operation, endpoint: endpoint)
    }

    /// `zmq_strerror(code)`: libzmq's text for the error.
    public var message: String { String(cString: zmq_strerror(code)) }

    /// The named case for `code`.
    public var kind: Kind {
        switch code {
        case czmq_eagain(): return .wouldBlock
        case czmq_eterm(): return .contextTerminated
        case czmq_eaddrinuse(): return .addressInUse
        case czmq_einval(): return .invalidArgument
        case czmq_eprotonosupport(): return .protocolNotSupported
        case czmq_enoent(): return .endpointNotFound
        case czmq_efsm(): return .wrongState
        case czmq_enotsup(): return .notSupported
        default: return .other
        }
    }

    public var description: String {
        let call = endpoint.map { "\(operation) \($0)" } ?? operation
        return "\(call): \(message) (errno \(code))"
    }
}
