import Foundation
import NotificationBus
import Synchronization
import TestSupport
import Testing

// Message types as an application declares them: one async type with five fields of different
// kinds, one main-actor type, one type with a cross-process subject, one family.

struct TypedOrderCreated: BusAsyncMessage, Equatable {
    static let busName: NotificationName = "typed.orders.created"
    var id: Int
    var total: Double
    var customer: String
    var items: [String]
    var express: Bool?
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<TypedOrderCreated> {
    static var typedOrderCreated: Self { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<TypedOrderShipped> {
    static var typedOrderShipped: Self { .init() }
}

struct TypedBadgeChanged: BusMainActorMessage, Equatable {
    static let busName: NotificationName = "typed.ui.badge"
    var count: Int
}

final class TypedOrder: BusSubject, Sendable {
    let number: String
    init(_ number: String) { self.number = number }
    var busSubjectID: String { number }
}

struct TypedOrderShipped: BusAsyncMessage, Equatable {
    typealias Subject = TypedOrder
    static let busName: NotificationName = "typed.orders.shipped"
    var carrier: String
}

enum TypedOrderEvent: BusMessageFamily, Equatable {
    case created(TypedOrderCreated)
    case shipped(TypedOrderShipped)
    static let busPattern: NamePattern = "typed.orders.>"
    static let members: [any BusMessage.Type] = [TypedOrderCreated.self, TypedOrderShipped.self]
    init?(member: any BusMessage) {
        switch member {
        case let created as TypedOrderCreated: self = .created(created)
        case let shipped as TypedOrderShipped: self = .shipped(shipped)
        default: return nil
        }
    }
}

private let sample = TypedOrderCreated(id: 42, total: 9.5, customer: "Zoë «Acme»", items: ["a", "b"], express: nil)

@Suite("Typed messages", .timeLimit(.minutes(1)))
struct TypedMessageTests {
    @Test("A message posted by type arrives as the same value, with its metadata, on an embedded bus")
    func embeddedRoundTrip() async throws {
        let bus = try Bus(.embedded())
        let envelopes = try bus.messageEnvelopes(of: TypedOrderCreated.self)
        try await bus.ready(envelopes.pattern)
        try await bus.post(sample, headers: ["tenant": "acme"])
        let received = try #require(await envelopes.first(1).first)
        #expect(received.message == sample)
        #expect(received.name == TypedOrderCreated.busName && received.sequence == 1)
        #expect(received.publisherID == bus.publisherID && received.timestamp > 0)
        #expect(received.headers["tenant"] == "acme" && received.notification.contentType == .json)
        #expect(envelopes.stats.undecodable == 0)
        await bus.close()
    }

    @Test("Swift publisher -> Broker over tcp -> typed observer: every field intact")
    func throughBroker() async throws {
        let broker = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        let publisher = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let subscriber = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let got = Watched<[TypedOrderCreated]>([])
        let token = try subscriber.addObserver(for: .typedOrderCreated) { order in got.update { $0.append(order) } }
        try await subscriber.ready(token.pattern)
        let second = TypedOrderCreated(id: -7, total: 1e-3, customer: "", items: [], express: true)
        try await publisher.post(sample)
        try await publisher.post(second)
        #expect(await got.wait(until: { $0.count == 2 }))
        #expect(got.value == [sample, second])
        #expect(token.stats.undecodable == 0 && token.stats.delivered == 2)
        #expect(publisher.stats.messagesEncoded == 2 && subscriber.stats.messagesDecoded == 2)
        token.cancel()
        await publisher.close()
        await subscriber.close()
        await broker.stop()
    }

    @Test("A raw JSON body posted through the byte API, as a Python producer would, decodes")
    func rawJSONDecodes() async throws {
        let bus = try Bus(.embedded())
        let orders = try bus.messages(of: TypedOrderCreated.self)
        try await bus.ready(orders.pattern)
        // Keys in another order, an unknown key, no `express`, content type left unspecified.
        let body = #"{"items":["x"],"customer":"py","extra":1,"total":2.25,"id":7}"#
        try await bus.post(name: "typed.orders.created", payload: Array(body.utf8))
        let order = try #require(await orders.first(1).first)
        #expect(order == TypedOrderCreated(id: 7, total: 2.25, customer: "py", items: ["x"], express: nil))
        await bus.close()
    }

    @Test("Malformed and mistyped JSON is counted per type, in-band, and the good ones keep flowing")
    func undecodableCounted() async throws {
        let bus = try Bus(.embedded())
        let events = try bus.messageEvents(of: TypedOrderCreated.self)
        let plain = try bus.messages(of: TypedOrderCreated.self)
        let other = try bus.messages(of: TypedOrderShipped.self)
        try await bus.ready(events.pattern)
        try await bus.ready(other.pattern)
        let bodies = [
            #"{"id":1,"total":1,"customer":"a","items":[]}"#,  // good
            #"{"id":2,"total":"#,  // malformed
            #"{"id":"three","total":1,"customer":"a","items":[]}"#,  // mistyped
            #"{"id":4,"total":4,"customer":"d","items":["z"]}"#,  // good
        ]
        for body in bodies { try await bus.post(name: "typed.orders.created", payload: Array(body.utf8), contentType: .json) }
        try await bus.post(name: "typed.orders.created", payload: Array("5".utf8), contentType: .text)  // not JSON
        try await bus.post(name: "typed.orders.created", payload: Array(#"{"id":6,"total":6,"customer":"f","items":[]}"#.utf8))

        let seen = await events.first(6)
        #expect(seen.count == 6)
        var decoded: [Int] = []
        var undecodable: [String] = []
        for event in seen {
            switch event {
            case .message(let envelope): decoded.append(envelope.message.id)
            case .undecodable(let notification, let error):
                #expect(notification.name == TypedOrderCreated.busName && error.type == "TypedOrderCreated")
                undecodable.append(error.reason)
            case .gap(let gap): Issue.record("unexpected \(gap)")
            case .cleared(let notification): Issue.record("unexpected clear \(notification)")
            }
        }
        #expect(decoded == [1, 4, 6])
        #expect(undecodable.count == 3 && undecodable[2].contains("content type text"))
        #expect(events.stats.undecodable == 3)
        // The values-only form skips them, counting them the same.
        #expect(await plain.first(3).map(\.id) == [1, 4, 6])
        #expect(plain.stats.undecodable == 3)
        // Another type's subscription saw none of it.
        #expect(other.stats.received == 0 && other.stats.undecodable == 0)
        await bus.close()
    }

    @Test("A main-actor message type's observer runs on the main actor")
    func mainActorObserver() async throws {
        let bus = try Bus(.embedded())
        let got = Watched<[Int]>([])
        let token = try bus.addObserver(for: TypedBadgeChanged.self) { badge in
            MainActor.assertIsolated("a main-actor message's observer off the main actor")
            got.update { $0.append(badge.count) }
        }
        try await bus.ready(token.pattern)
        for count in 1...3 { try await bus.post(TypedBadgeChanged(count: count)) }
        #expect(await got.wait(until: { $0.count == 3 }))
        #expect(got.value == [1, 2, 3])
        token.cancel()
        await bus.close()
    }

    @Test("An async observer runs on the isolation its closure names")
    func asyncObserverIsolation() async throws {
        let bus = try Bus(.embedded())
        let got = Watched<Int>(0)
        let token = try bus.addObserver(for: TypedOrderCreated.self) { @MainActor order in
            MainActor.assertIsolated()
            got.update { $0 += order.id }
        }
        try await bus.ready(token.pattern)
        try await bus.post(sample)
        #expect(await got.wait(until: { $0 == 42 }))
        token.cancel()
        await bus.close()
    }

    @Test("A cancelled or dropped token removes the subscription at the publisher")
    func tokenUnsubscribes() async throws {
        let broker = try Broker(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")
        let publisher = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let subscriber = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        var token: ObservationToken? = try subscriber.addObserver(for: TypedOrderCreated.self) { _ in }
        try await publisher.waitForSubscribers(matching: TypedOrderCreated.busName)
        token?.cancel()
        try await publisher.waitForNoSubscribers(matching: TypedOrderCreated.busName)

        token = try subscriber.addObserver(for: TypedOrderCreated.self) { _ in }
        try await publisher.waitForSubscribers(matching: TypedOrderCreated.busName)
        #expect(token != nil)
        token = nil  // dropped, never cancelled
        try await publisher.waitForNoSubscribers(matching: TypedOrderCreated.busName)
        await publisher.close()
        await subscriber.close()
        await broker.stop()
    }

    @Test("A subject becomes the last name token: one subject's observer sees only its own")
    func subjectFiltering() async throws {
        let bus = try Bus(.embedded())
        let a = TypedOrder("A-1"), b = TypedOrder("B-2")
        let onlyA = try bus.messageEnvelopes(of: a, for: TypedOrderShipped.self)
        let all = try bus.messageEnvelopes(of: TypedOrderShipped.self)
        #expect(onlyA.pattern.rawValue == "typed.orders.shipped.A-1" && all.pattern.rawValue == "typed.orders.shipped.*")
        try await bus.ready(onlyA.pattern)
        try await bus.ready(all.pattern)
        try await bus.post(TypedOrderShipped(carrier: "b"), subject: b)
        try await bus.post(TypedOrderShipped(carrier: "a"), subject: a)
        #expect(await onlyA.first(1).map(\.message.carrier) == ["a"])
        #expect(await all.first(2).map(\.name.rawValue) == ["typed.orders.shipped.B-2", "typed.orders.shipped.A-1"])
        #expect(onlyA.stats.received == 1)
        // The identifier forms select the same names.
        let byIdentifier = try bus.messages(for: .typedOrderCreated)
        #expect(byIdentifier.pattern.rawValue == "typed.orders.created")
        let got = Watched<[String]>([])
        let token = try bus.addObserver(of: b, for: .typedOrderShipped) { shipped in got.update { $0.append(shipped.carrier) } }
        #expect(token.pattern.rawValue == "typed.orders.shipped.B-2")
        try await bus.ready(token.pattern)
        try await bus.post(TypedOrderShipped(carrier: "a2"), subject: a)
        try await bus.post(TypedOrderShipped(carrier: "b2"), subject: b)
        #expect(await got.wait(until: { $0 == ["b2"] }))
        token.cancel()
        // Without a subject such a type cannot be posted (its observers subscribe `.*`), and a
        // subject id must be one token.
        await #expect(throws: BusError.subjectRequired(type: "TypedOrderShipped", name: TypedOrderShipped.busName)) {
            try await bus.post(TypedOrderShipped(carrier: "x"))
        }
        await #expect(throws: BusError.invalidSubject(id: "a.b", reason: "it holds a dot")) {
            try await bus.post(TypedOrderShipped(carrier: "x"), subject: TypedOrder("a.b"))
        }
        await bus.close()
    }

    @Test("A family takes its members from one pattern, decoding each by its name")
    func family() async throws {
        let bus = try Bus(.embedded())
        let events = try bus.messageEvents(of: TypedOrderEvent.self)
        try await bus.ready(events.pattern)
        try await bus.post(sample)
        try await bus.post(TypedOrderShipped(carrier: "dhl"), subject: TypedOrder("A-1"))
        try await bus.post(name: "typed.orders.refunded", payload: Array("{}".utf8), contentType: .json)
        let seen = await events.first(3)
        guard seen.count == 3 else { return }
        #expect(seen[0] == .message(TypedNotification(message: .created(sample), notification: envelope(seen[0]))))
        if case .message(let shipped) = seen[1] { #expect(shipped.message == .shipped(TypedOrderShipped(carrier: "dhl"))) }
        else { Issue.record("expected the shipped member, got \(seen[1])") }
        if case .undecodable(let notification, let error) = seen[2] {
            #expect(notification.name.rawValue == "typed.orders.refunded" && error.reason.contains("no member type"))
        } else {
            Issue.record("expected an undecodable refund, got \(seen[2])")
        }
        #expect(events.stats.undecodable == 1)
        await bus.close()
    }

    private func envelope(_ event: MessageEvent<TypedOrderEvent>) -> BusNotification {
        if case .message(let envelope) = event { return envelope.notification }
        return BusNotification(name: "none")
    }

    @Test("A post nobody wants is not encoded; the same type posts to NotificationCenter.default too")
    func unwantedNotEncodedAndFoundation() async throws {
        let bus = try Bus(.embedded())
        try await bus.post(sample)
        #expect(bus.stats.unwanted == 1 && bus.stats.messagesEncoded == 0)

        let got = Watched<[Int]>([])
        let token = NotificationCenter.default.addObserver(of: BusNoSubject.self, for: .typedOrderCreated) { order async in
            got.update { $0.append(order.id) }
        }
        NotificationCenter.default.post(sample)
        #expect(await got.wait(until: { $0 == [42] }))
        NotificationCenter.default.removeObserver(token)
        await bus.close()
    }
}
