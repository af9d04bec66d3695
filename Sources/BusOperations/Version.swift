/// The version of NotificationBus and its tools: the one place it is written (`nbus --version`,
/// the broker's `/varz`, the `nbus_build_info` metric). `CHANGELOG.md`'s newest release heading and
/// README's dependency line say the same number, and the git tag of the release is this string
/// (OperationsTests checks the first two against the running binary).
public enum NotificationBusVersion {
    /// The release, as semantic versioning spells it.
    public static let current = "0.2.0"
}
