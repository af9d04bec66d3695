import Foundation

/// The answer a run gives, in words: which style kept up, which lost what and why, what each cost.
package struct ViewsVerdict: Codable, Sendable {
    /// One style's verdict.
    package struct Style: Codable, Sendable {
        package var style: ViewStyle
        /// Kept up with the publisher and lost nothing its design does not accept.
        package var ok: Bool
        /// The sentence: kept up or fell behind, losses by cause and why, the main-actor cost.
        package var text: String
    }

    /// The answer in one or two sentences.
    package var headline: String
    /// Per style, in the report's order.
    package var styles: [Style]
}
