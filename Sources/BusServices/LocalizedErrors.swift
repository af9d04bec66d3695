#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import NBP1
import NotificationBus
import ZeroMQ

// Foundation's `localizedDescription` of a Swift error that is not a `LocalizedError` is "The
// operation could not be completed" on Linux. The libraries below BusBench do not import
// Foundation, so their errors gain `LocalizedError` here, in the light BusServices product
// (FoundationEssentials only, where the toolchain has it): an application that links it gets
// each error's own sentence from `localizedDescription`.
// The types are this package's own (no `@retroactive` needed); these are their only conformances.

extension BusError: LocalizedError {
    /// The error's own sentence (`description`), for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension RejectionReason: LocalizedError {
    /// The reason's own sentence (`description`), for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension NameError: LocalizedError {
    /// The error's own sentence (`description`), for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension EncodeError: LocalizedError {
    /// The error's own sentence (`description`), for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension ZMQError: LocalizedError {
    /// The error's own sentence (`description`), for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension CurveKeyError: LocalizedError {
    /// The error's own sentence (`description`), for `localizedDescription`.
    public var errorDescription: String? { description }
}
