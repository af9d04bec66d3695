#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import ZeroMQ

/// Who uses a bus's XPUB socket. The event loop holds it while it works and lets go of it while
/// it sleeps: a post made then is sent by the posting thread itself, with no hand-off and no
/// wake-up (the latency of a quiet bus is ZeroMQ's own). Under load the loop is awake, holds the
/// socket, and posts go through the mailbox in batches as before. Every change happens under the
/// mailbox lock, the full memory barrier libzmq asks for when a socket changes threads.
///
/// `loop` -> `free` (the loop parks) -> `poster` (one post is being sent) -> `free` -> `loop`
/// (the loop woke; it waits out a poster's send). The loop never takes it from a poster.
enum PublisherSocketOwner {
    case loop
    case free
    case poster
}

/// A bus's XPUB as posting threads see it, for sends made while they own it (`PublisherSocketOwner.poster`).
///
/// `@unchecked Sendable`: `socket` is used only by the owner `Mailbox.publisherOwner` names, and
/// ownership changes only under the mailbox lock (a full memory barrier), which is exactly what
/// libzmq requires of a socket used by more than one thread: never at once, a barrier between.
final class DirectPublisher: @unchecked Sendable {
    let socket: Socket

    init(_ socket: Socket) {
        self.socket = socket
    }
}
