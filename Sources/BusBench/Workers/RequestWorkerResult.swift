import Foundation
import NotificationBus

/// What became of a requester worker's requests: its one JSON line on stdout.
package struct RequestWorkerResult: Sendable, Codable, Equatable {
    /// Replies whose payload was the request's own (an echo responder's answer).
    package var answered = 0
    /// Replies with another payload (another request's reply: they must never cross).
    package var wrongPayload = 0
    package var noResponders = 0
    package var timedOut = 0
    /// Other errors, by their text.
    package var otherErrors: [String] = []
    /// The slowest request's outcome, seconds from its start.
    package var slowestSeconds = 0.0
}
