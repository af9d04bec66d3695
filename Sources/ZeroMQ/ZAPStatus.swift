/// A ZAP reply's status code (RFC 27).
public enum ZAPStatus: String, Sendable, CaseIterable {
    /// 200: admitted.
    case success = "200"
    /// 300: a temporary error; the client may retry.
    case temporaryError = "300"
    /// 400: refused.
    case failure = "400"
    /// 500: the handler failed (a malformed request, say).
    case internalError = "500"
}
