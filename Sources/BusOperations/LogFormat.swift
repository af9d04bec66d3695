/// How log lines are written: one line per event, a timestamp, a level, the logger's label, the
/// message and its fields.
public enum LogFormat: String, CaseIterable, Sendable {
    /// `2026-11-25T10:38:11.123Z info nbus broker: message key=value ...`, for people.
    case text
    /// One JSON object per line (`timestamp`, `level`, `label`, `message`, then the fields), for
    /// log collectors.
    case json
}
