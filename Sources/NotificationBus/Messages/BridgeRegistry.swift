import FoundationEssentials
import Synchronization

/// Which bridges a bus has, by (message type, direction): an async type may not be bridged both
/// ways (Foundation calls its observers later, in another task, so what the bus bridge posted
/// cannot be told apart from a local post: it would echo back onto the bus, and between two such
/// processes for ever).
struct BridgeRegistry {
    enum Direction: Hashable { case intoCenter, fromCenter }
    /// How many bridges of each async type and direction are open.
    var async: [BridgeKey: Int] = [:]

    struct BridgeKey: Hashable {
        var type: ObjectIdentifier
        var direction: Direction
    }
}

/// Lets the center's observer reach its bridge without keeping it alive (the bridge owns the
/// observation, which owns the closure). Set once, right after the observer is added, before
/// anything can be posted to it by this code; a post by another thread in between finds nil
/// and is not forwarded (the bridge did not exist yet when it was posted).
final class BridgeBox: Sendable {
    private let weakBridge = Mutex<WeakBridge>(WeakBridge())

    private struct WeakBridge {
        weak var bridge: MessageBridge?
    }

    var bridge: MessageBridge? {
        get { weakBridge.withLock { $0.bridge } }
        set { weakBridge.withLock { $0.bridge = newValue } }
    }
}
