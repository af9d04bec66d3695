/// What consumers in other modules of this package (BusViews' typed modifiers, issue 42 item 7)
/// need to read messages the way the bus's own typed sequences do: a subscription that takes this
/// bus's own typed posts as values, and one notification turned into a message (the value itself
/// when it is one of this process's posts, no coding; else decoded from its JSON). Package
/// access: not part of the public API, which offers the same through `messageEvents(of:)`.
extension Bus {
    /// `subscribe(_:sink:)` for a typed consumer: a post of this bus's own typed API reaches
    /// `sink` as the value (`BusNotification.message(as:)` takes it), not as JSON made for it.
    /// `retained`: the retained values of the names it matches first, as `subscribe(_:sink:retained:)`.
    package func typedSubscribe(_ pattern: NamePattern, sink: any BusEventSink, retained: Bool = false) throws(BusError)
        -> SinkSubscription
    {
        SinkSubscription(handle: try subscribe(pattern, .default, sink: sink, retained: retained, takesLocalValues: true))
    }

    /// `addObserver(forName:buffering:using:)` for a typed consumer (values of this bus's own
    /// posts handed over as they are; `block` turns each into a message).
    package func addTypedObserver(
        forName pattern: NamePattern, buffering: BufferingPolicy, retained: Bool = false,
        using block: @escaping @isolated(any) @Sendable (BusNotification) async -> Void
    ) throws(BusError) -> ObservationToken {
        observe(try subscribe(pattern, buffering, retained: retained, takesLocalValues: true), block)
    }
}

extension BusMessage {
    /// What observing this type for one subject subscribes: exactly `<busName>.<subject id>`
    /// (`.invalidSubject` when the id is not one valid token).
    package static func busSubjectPattern(subjectID: String) throws(BusError) -> NamePattern {
        try Subjects.pattern(Self.self, subjectID: subjectID)
    }
}

/// Where a consumer in another module of this package counts the messages it decodes: the bus's
/// `BusStats.messagesDecoded`, as the bus's own typed sequences count theirs (issue 42).
package struct MessageDecodeCounter: Sendable {
    let core: BusCore
}

extension Bus {
    /// This bus's decode counter, for `BusNotification.message(as:countingIn:)`.
    package var messageDecodeCounter: MessageDecodeCounter { MessageDecodeCounter(core: core) }
}

extension BusNotification {
    /// The message this notification carries, as `type`: this bus's own post's value as it is
    /// (no coding, nothing counted) when it is a `type`; otherwise its JSON decoded, as
    /// `messageEvents(of:)` does (content type `json` or `unspecified`), and counted in
    /// `counter`'s `BusStats.messagesDecoded` when it decodes. Call it on the consuming side,
    /// never on the I/O thread.
    package func message<M: BusMessage>(as type: M.Type, countingIn counter: MessageDecodeCounter) throws(UndecodableMessage) -> M {
        var notification = self
        if let local = localValue as? LocalMessageValue {
            if let message = local.value(as: M.self) { return message }
            // Another type under the same name: from its JSON, as from another process.
            LocalMessageValue.materialize(&notification)
        }
        let message = try MessageDecoding<M>.single().decode(notification)
        counter.core.noteMessageDecoded()
        return message
    }
}
