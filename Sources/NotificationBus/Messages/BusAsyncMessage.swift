import FoundationEssentials

/// A message observers take asynchronously, on an isolation of their choosing, or as an
/// `AsyncSequence` (`Bus.messages(of:)`): the task style. Also a Foundation `AsyncMessage`.
public protocol BusAsyncMessage: NotificationCenter.AsyncMessage, BusMessage {
    /// What the message is about; by default none (`BusNoSubject`). A `BusSubject` makes the
    /// subject's id the last token of the name.
    associatedtype Subject = BusNoSubject
}
