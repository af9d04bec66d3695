/// What a batch frame holds, read by walking its records without copying anything
/// (`EnvelopeCodec.peekBatch`): enough to tell a copy another path brought first (NBP-1 §17).
package struct BatchPeek: Equatable, Sendable {
    /// The publisher id every record carries.
    package var publisherID: UInt64
    /// The records (1 to 1024).
    package var recordCount: Int
    /// The lowest and highest sequence numbers among the records (a NotificationBus publisher
    /// writes them ascending and contiguous; a foreign one need not).
    package var lowestSequence: UInt64
    package var highestSequence: UInt64

    package init(publisherID: UInt64, recordCount: Int, lowestSequence: UInt64, highestSequence: UInt64) {
        self.publisherID = publisherID
        self.recordCount = recordCount
        self.lowestSequence = lowestSequence
        self.highestSequence = highestSequence
    }
}
