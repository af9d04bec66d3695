/// Reading standard input failed for `publish --lines`.
struct StandardInputFailed: Error, CustomStringConvertible {
    let reason: String
    var description: String { "reading standard input failed: \(reason)" }
}
