

/// One notification as it crosses the bus: a name, opaque payload bytes, small string headers,
/// and the publisher's stamp (publisher id, per-(publisher, name) sequence, publish time).
/// Not `Notification`, so a file that imports Foundation too can name it unqualified.
public struct BusNotification: Hashable, Sendable {
    /// What happened, e.g. `orders.created`.
    public var name: NotificationName
    /// The payload, opaque to the bus.
    public var payload: [UInt8]
    /// Small string metadata (at most 32 entries; keys 1-64 bytes, values up to 1024 bytes).
    public var headers: NotificationHeaders
    /// What the payload's bytes are.
    public var contentType: ContentType
    /// 1 for the first notification of this name from this publisher, then +1 each.
    public var sequence: UInt64
    /// The publisher's random id, new on every publisher start.
    public var publisherID: UInt64
    /// Publish time in nanoseconds since the Unix epoch (UTC).
    public var timestamp: UInt64
    /// NBP/1 flag bits as received (all reserved in version 1).
    public var flags: UInt8
    /// Never on the wire: a typed post's own value, when a bus hands its post to its own
    /// subscriptions in this process (the typed layer takes it instead of decoding the payload).
    /// One reference wide, so the byte path's notifications grow by a word, not an existential.
    /// Not part of equality: the same notification, however it travelled.
    @usableFromInline package var localValue: (any AnyObject & Sendable)?

    /// Creates a notification; the bus fills in `sequence`, `publisherID` and `timestamp` when posting.
    public init(
        name: NotificationName, payload: [UInt8] = [], headers: NotificationHeaders = NotificationHeaders(),
        contentType: ContentType = .unspecified, sequence: UInt64 = 0, publisherID: UInt64 = 0,
        timestamp: UInt64 = 0, flags: UInt8 = 0
    ) {
        self.name = name
        self.payload = payload
        self.headers = headers
        self.contentType = contentType
        self.sequence = sequence
        self.publisherID = publisherID
        self.timestamp = timestamp
        self.flags = flags
    }

    /// What this notification counts against a subscriber's byte bound: payload, headers and
    /// name, plus 64 bytes for the rest (stamp, content type, the buffer's slot). Inlinable: a
    /// call across modules made the subscription buffer copy the event it sized (a retain and a
    /// release of each field).
    @inlinable package var bufferedSize: Int {
        payload.count + headers.encodedByteCount + name.rawValue.utf8.count + 64
    }

    public static func == (lhs: BusNotification, rhs: BusNotification) -> Bool {
        lhs.name == rhs.name && lhs.payload == rhs.payload && lhs.headers == rhs.headers
            && lhs.contentType == rhs.contentType && lhs.sequence == rhs.sequence
            && lhs.publisherID == rhs.publisherID && lhs.timestamp == rhs.timestamp && lhs.flags == rhs.flags
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(payload)
        hasher.combine(headers)
        hasher.combine(contentType)
        hasher.combine(sequence)
        hasher.combine(publisherID)
        hasher.combine(timestamp)
        hasher.combine(flags)
    }
}
