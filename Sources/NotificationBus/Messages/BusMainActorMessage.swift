import FoundationEssentials

/// A message whose observers run on the main actor (`Bus.addObserver(for:using:)` with a
/// `@MainActor` closure): the onReceive style. Also a Foundation `MainActorMessage`. `Sendable`
/// (Foundation's is not required to be) because the value crosses from the bus's thread, or
/// from a poster on another isolation, to the main actor.
public protocol BusMainActorMessage: NotificationCenter.MainActorMessage, BusMessage {
    /// What the message is about; by default none (`BusNoSubject`).
    associatedtype Subject = BusNoSubject
}
