import FoundationEssentials
import Synchronization

/// Subject rules in one place: what type has one, what name a subject makes.
enum Subjects {
    /// Whether `M.Subject` is a `BusSubject` (read through Foundation's associated type when the
    /// message is one of Foundation's kinds; a bare `BusMessage` has no subject).
    /// Asked on every post: the answer per type is kept (two dynamic casts, each a conformance
    /// look-up, showed in the typed posting profile).
    static func isBusSubject<M: BusMessage>(_ type: M.Type) -> Bool {
        let key = ObjectIdentifier(type)
        // The type asked last, without a lock or a hash (a process posting one type asks for it
        // on every post: the mutex and the dictionary were about 1% of the typed publisher).
        let bits = UInt(bitPattern: key)
        let last = lastAsked.load(ordering: .relaxed)
        if last != 0, last & ~1 == bits { return last & 1 == 1 }
        let answer: Bool
        if let known = known.withLock({ $0[key] }) {
            answer = known
        } else {
            answer = computeIsBusSubject(type)
            known.withLock { $0[key] = answer }
        }
        // Type metadata is aligned: bit 0 is free for the answer.
        if bits & 1 == 0 { lastAsked.store(bits | (answer ? 1 : 0), ordering: .relaxed) }
        return answer
    }

    private static let known = Mutex<[ObjectIdentifier: Bool]>([:])
    /// The last type asked (its `ObjectIdentifier`'s bits) with its answer in bit 0; 0: none.
    private static let lastAsked = Atomic<UInt>(0)

    private static func computeIsBusSubject<M: BusMessage>(_ type: M.Type) -> Bool {
        if let async = type as? any NotificationCenter.AsyncMessage.Type { return subjectIsBusSubject(async) }
        if let main = type as? any NotificationCenter.MainActorMessage.Type { return subjectIsBusSubject(main) }
        return false
    }

    private static func subjectIsBusSubject<M: NotificationCenter.AsyncMessage>(_: M.Type) -> Bool {
        M.Subject.self is any BusSubject.Type
    }

    private static func subjectIsBusSubject<M: NotificationCenter.MainActorMessage>(_: M.Type) -> Bool {
        M.Subject.self is any BusSubject.Type
    }

    /// `<busName>.<id>`, or `.invalidName` when `id` is not exactly one valid token.
    static func name(_ base: NotificationName, subjectID id: String) throws(BusError) -> NotificationName {
        // One token: a dot would let a subject reach into another subject's names.
        if id.utf8.contains(NameGrammar.dot) { throw .invalidSubject(id: id, reason: "it holds a dot") }
        do {
            _ = try NotificationName(id)
        } catch {
            throw .invalidSubject(id: id, reason: error.description)
        }
        do { return try NotificationName(base.rawValue + "." + id) } catch { throw .invalidName(error) }
    }

    /// What observing `M` with an optional subject subscribes.
    static func pattern<M: BusMessage>(_ type: M.Type, subjectID: String?) throws(BusError) -> NamePattern {
        if let subjectID { return NamePattern(exactly: try name(M.busName, subjectID: subjectID)) }
        guard M.hasBusSubject else { return NamePattern(exactly: M.busName) }
        do { return try NamePattern(M.busName.rawValue + ".*") } catch { throw .invalidName(error) }
    }
}
