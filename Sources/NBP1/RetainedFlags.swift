// Retained values (NBP-1 §18): the two flag bits a notification carries, and what they mean to an
// application. Pure functions over bytes, like the rest of the module.

extension WireFormat {
    /// The flag bits of a notification (the fixed header's `flags`, a batch record's `flags`).
    /// Bits not named here stay reserved: senders write 0, receivers ignore them.
    public enum Flag {
        /// Set by a publisher: "keep this as the name's current value" (an empty payload clears
        /// it). A live delivery keeps the bit; a receiver that does not know it sees a plain
        /// notification (NBP-1 §18).
        public static let retain: UInt8 = 0x01
        /// Set by whoever hands out a kept value (a broker's snapshot): this is the name's
        /// current value, delivered because the subscription is new, not a change happening now.
        public static let retainedCopy: UInt8 = 0x02
    }
}

extension WireFormat {
    /// The header that bounds how long a retained value is kept (NBP-1 §18): decimal
    /// milliseconds, counted from when the keeper (a broker) takes it, since clocks are not
    /// synchronised. Absent, or not a number of 1 to 2^53 milliseconds: kept until replaced,
    /// cleared or evicted.
    public static let retainForHeader = "retain-for"
}

extension BusNotification {
    /// Whether this is a kept current value delivered to a new subscription (MQTT's retained
    /// flag as a subscriber sees it), rather than a change posted now.
    public var isRetained: Bool { flags & WireFormat.Flag.retainedCopy != 0 }

    /// Whether its publisher asked for it to be kept as the name's current value.
    public var asksToBeRetained: Bool { flags & WireFormat.Flag.retain != 0 }

    /// A retained post with no payload: removes the name's kept value (MQTT's rule).
    public var clearsRetainedValue: Bool { asksToBeRetained && payload.isEmpty }
}

extension BusNotification {
    /// The `retain-for` header as nanoseconds; nil when absent or not a valid number.
    public var retainedLifetimeNanoseconds: UInt64? {
        guard let text = headers[WireFormat.retainForHeader] else { return nil }
        return WireFormat.retainedLifetimeNanoseconds(text.utf8)
    }
}
