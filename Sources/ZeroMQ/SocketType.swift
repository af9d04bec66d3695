import CZeroMQ

/// The ZeroMQ socket patterns this wrapper supports.
public enum SocketType: Sendable, CaseIterable, CustomStringConvertible {
    case pub, sub, xpub, xsub, pair, push, pull, req, rep, dealer, router

    /// The libzmq constant (`ZMQ_PUB`, ...).
    public var rawValue: Int32 {
        switch self {
        case .pub: return ZMQ_PUB
        case .sub: return ZMQ_SUB
        case .xpub: return ZMQ_XPUB
        case .xsub: return ZMQ_XSUB
        case .pair: return ZMQ_PAIR
        case .push: return ZMQ_PUSH
        case .pull: return ZMQ_PULL
        case .req: return ZMQ_REQ
        case .rep: return ZMQ_REP
        case .dealer: return ZMQ_DEALER
        case .router: return ZMQ_ROUTER
        }
    }

    public var description: String {
        switch self {
        case .pub: return "PUB"
        case .sub: return "SUB"
        case .xpub: return "XPUB"
        case .xsub: return "XSUB"
        case .pair: return "PAIR"
        case .push: return "PUSH"
        case .pull: return "PULL"
        case .req: return "REQ"
        case .rep: return "REP"
        case .dealer: return "DEALER"
        case .router: return "ROUTER"
        }
    }
}
