import BusViews
import Foundation
import NotificationBus
import Testing
import ZeroMQ

/// Every public type of NBP1, NotificationBus, BusViews and ZeroMQ, named unqualified in a file
/// that imports Foundation too: a clash ("ambiguous for type lookup", as `Notification` was)
/// fails the build, not a user's. Regenerate the list when a public type is added (the types
/// of docs/public-api.txt, which `make api` writes).

/// A message type, to name the generic types that want one.
private struct CoexistenceMessage: BusAsyncMessage {
    static let busName: NotificationName = "coexistence.message"
}

@Suite("Next to Foundation")
struct FoundationCoexistenceTests {
    @Test("Every public type is named unqualified with Foundation imported, and literals make names and patterns")
    func everyPublicTypeUnqualified() {
        // NBP1
        _ = BusNotification.self
        _ = ContentType.self
        _ = EncodeError.self
        _ = EnvelopeCodec.self
        _ = NameError.self
        _ = NamePattern.self
        _ = NotificationHeaders.self
        _ = NotificationName.self
        _ = RejectionReason.self
        _ = RequestReply.self
        _ = WireFormat.self
        // NotificationBus
        _ = Attachment.self
        _ = AuthenticationCounts.self
        _ = AuthenticationDomain.self
        _ = AuthenticationEvent.self
        _ = Broker.self
        _ = BrokerConnection.self
        _ = BrokerEvent.self
        _ = BrokerSecurity.self
        _ = BrokerStatistics.self
        _ = BrokerSubscriptions.self
        _ = BufferingPolicy.self
        _ = Bus.self
        _ = BusConfiguration.self
        _ = BusError.self
        _ = BusEvent.self
        _ = BusEventSequence.self
        _ = (any BusEventSink).self
        _ = BusExecutor.self
        _ = (any BusAsyncMessage).self
        _ = (any BusMainActorMessage).self
        _ = (any BusMessage).self
        _ = (any BusMessageFamily).self
        _ = BusNoSubject.self
        _ = (any BusSubject).self
        _ = BusStats.self
        _ = CurveClientSecurity.self
        _ = CurveServerSecurity.self
        _ = Gap.self
        _ = MessageBridge.self
        _ = MessageEnvelopeSequence<Int>.self
        _ = MessageEvent<Int>.self
        _ = MessageEventSequence<Int>.self
        _ = MessageSequence<Int>.self
        _ = GapCause.self
        _ = NotificationSequence.self
        _ = ObservationToken.self
        _ = Reply.self
        _ = SinkSubscription.self
        _ = SubscriptionStats.self
        _ = TypedNotification<Int>.self
        _ = UndecodableMessage.self
        // BusViews
        _ = AsyncAction.self
        _ = Child.self
        _ = ChildrenBuilder.self
        _ = ReplayPolicy.self
        _ = State<Int>.self
        _ = StateStorage<Int>.self
        _ = TaskSlot<Int>.self
        _ = (any View).self
        _ = ViewContent.self
        _ = ViewFeed.self
        _ = ViewFeedMessages<CoexistenceMessage>.self
        _ = ViewFeedNotifications.self
        _ = ViewHost.self
        _ = ViewID.self
        _ = ViewMetrics.self
        _ = ViewNode.self
        _ = ViewNodeReader.self
        _ = ViewPath.self
        // ZeroMQ
        _ = BlockingMode.self
        _ = Context.self
        _ = CurveAllowList.self
        _ = CurveKeyError.self
        _ = CurveKeyFile.self
        _ = CurveKeyPair.self
        _ = HandshakeFailure.self
        _ = LibZMQ.self
        _ = Message.self
        _ = MessageBatch.self
        _ = PollEvents.self
        _ = Poller.self
        _ = Proxy.self
        _ = Socket.self
        _ = SocketEvent.self
        _ = SocketEvents.self
        _ = SocketOption<Int32>.self
        _ = (any SocketOptionValue).self
        _ = SocketType.self
        _ = WakeSignal.self
        _ = Z85.self
        _ = ZAPReply.self
        _ = ZAPRequest.self
        _ = ZAPStatus.self
        _ = ZMQError.self
        let created: NotificationName = "orders.created"
        let orders: NamePattern = "orders.>"
        #expect(orders.matches(created))
        let posted = BusNotification(name: created)
        #expect(posted.name == created)
        // Foundation's own still works beside them.
        let foundation = Foundation.Notification(name: Foundation.Notification.Name("x"))
        #expect(foundation.name.rawValue == "x")
    }
}
