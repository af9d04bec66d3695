/// The numbers NBP/1 fixes; see `protocol/NBP-1.md`.
public enum WireFormat {
    /// The version byte of a frame that carries one notification.
    public static let version: UInt8 = 1
    /// Bytes of fixed header after the name's NUL.
    public static let fixedHeaderSize = 32
    /// Longest name, in UTF-8 bytes.
    public static let maximumNameLength = 255
    /// Most header entries.
    public static let maximumHeaderCount = 32
    /// Largest header map, in bytes.
    public static let maximumHeadersLength = 4096
    /// Longest header key, in bytes.
    public static let maximumKeyLength = 64
    /// Longest header value, in bytes.
    public static let maximumValueLength = 1024
    /// Where each field of the fixed header sits, counted from the byte after the name's NUL
    /// (NBP-1 §7). The decoder, the encoder and `EnvelopeCodec.stampSequence` read them from here.
    public enum FixedHeaderOffset {
        /// The version byte.
        public static let version = 0
        /// The flags byte.
        public static let flags = 1
        /// The content-type byte.
        public static let contentType = 2
        /// The name's length in bytes (u8), repeated for checking.
        public static let nameLength = 3
        /// The header map's length in bytes (u16, big-endian).
        public static let headersLength = 4
        /// The number of header entries (u8).
        public static let headerCount = 6
        /// Reserved; written 0, ignored on receipt.
        public static let reserved = 7
        /// The sequence number per (publisher, name) (u64, big-endian).
        public static let sequence = 8
        /// The publisher id (u64, big-endian).
        public static let publisherID = 16
        /// Publish time, nanoseconds since the Unix epoch (u64, big-endian).
        public static let timestamp = 24
    }

    /// A receiver's maximum payload unless configured otherwise: 1 MiB.
    public static let defaultMaximumPayload = 1 << 20

    /// The largest well-formed frame for a receiver whose maximum payload is `maximumPayload`:
    /// `255 + 1 + 32 + 4096 + maximumPayload` (NBP-1 §6).
    public static func largestFrame(maximumPayload: Int = defaultMaximumPayload) -> Int {
        maximumNameLength + 1 + fixedHeaderSize + maximumHeadersLength + max(0, maximumPayload)
    }

    /// The transport limit (`ZMQ_MAXMSGSIZE`) NotificationBus sets on sockets that receive frames:
    /// twice the largest well-formed frame. A frame up to it is read and rejected by the codec,
    /// counted (`payloadTooLarge`); a larger one makes libzmq drop the connection before reading
    /// it, so a peer cannot make a receiver hold a frame of any size it likes (NBP-1 §6).
    public static func transportFrameLimit(maximumPayload: Int = defaultMaximumPayload) -> Int64 {
        let doubled = largestFrame(maximumPayload: maximumPayload).multipliedReportingOverflow(by: 2)
        return doubled.overflow ? Int64.max : Int64(doubled.partialValue)
    }

    /// The largest subscription message a NotificationBus socket accepts from a peer (bytes,
    /// including ZeroMQ's leading subscribe/unsubscribe byte). NotificationBus's own subscriptions
    /// are at most about 290 bytes (a presence topic with a 255-byte pattern); a subscription is
    /// a prefix of a frame, and nothing past a name's NUL is worth filtering on. Larger ones are
    /// refused by disconnecting the peer: libzmq's subscription tries recurse once per byte, and
    /// removing a subscription of some hundred kilobytes overflows the thread's stack.
    public static let maximumSubscriptionLength = 1024
}
