import ZeroMQ

/// The foundation demo: one process posts a few NBP/1 notifications over `inproc://` and a
/// subscriber decodes and prints them. Waits for the subscription to reach the publisher
/// (XPUB sees it) instead of sleeping past the slow-joiner window.
public enum EmbeddedDemo {
    /// Posts `count` notifications named `demo.orders.<n>` and calls `print` with each decoded line.
    public static func run(count: Int = 5, print: (String) -> Void) throws {
        let context = try Context()
        let endpoint = "inproc://nbus-demo"
        let publisher = try context.socket(.xpub)
        try publisher.set(.receiveTimeout, 5_000)
        try publisher.bind(endpoint)
        let subscriber = try context.socket(.sub)
        try subscriber.set(.receiveTimeout, 5_000)
        try subscriber.connect(endpoint)
        let pattern = try NamePattern("demo.orders.>")
        try subscriber.subscribe(pattern.subscriptionPrefix)
        // Readiness: XPUB receives [0x01, prefix...] once the subscription is live.
        while try publisher.receive() != [1] + pattern.subscriptionPrefix {}
        print("subscribed to \(pattern) (ZeroMQ prefix \"\(String(decoding: pattern.subscriptionPrefix, as: UTF8.self))\")")

        let publisherID = UInt64.random(in: 1...UInt64.max)
        for index in 1...count {
            let notification = Notification(
                name: try NotificationName(index % 2 == 0 ? "demo.orders.shipped" : "demo.orders.created"),
                payload: Array(#"{"order":\#(index)}"#.utf8), headers: ["region": "eu"], contentType: .json,
                sequence: UInt64((index + 1) / 2), publisherID: publisherID,
                timestamp: Timestamps.wallClockNanoseconds())
            try publisher.send(try EnvelopeCodec.encode(notification))
        }
        for _ in 1...count {
            let n = try subscriber.receive { bytes, _ in try EnvelopeCodec.decode(bytes) }
            let headers = n.headers.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
            print(
                "\(n.name) seq=\(n.sequence) publisher=\(String(n.publisherID, radix: 16)) "
                    + "type=\(n.contentType) headers=[\(headers)] payload=\(String(decoding: n.payload, as: UTF8.self))")
        }
    }
}
