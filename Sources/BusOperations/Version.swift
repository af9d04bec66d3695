/// The version of NotificationBus and its tools: the one place it is written (`nbus --version`,
/// the broker's `/varz`, the `nbus_build_info` metric).
public enum NotificationBusVersion {
    /// The release, as semantic versioning spells it.
    public static let current = "0.9.0"
}
