import Foundation
import NotificationBus

/// Options of a requester worker: `count` requests at once from one bus, through a broker.
package struct RequestWorkerOptions: Sendable, Codable {
    /// The broker's frontend (publishers) and backend (subscribers).
    package var frontend: String
    package var backend: String
    /// The requests' name.
    package var name: String
    /// Requests sent at once from this process's one bus.
    package var count: Int = 20
    /// Each request's timeout, seconds.
    package var timeoutSeconds: Double = 30
    /// Seconds until the worker gives up altogether (exit 4).
    package var hardDeadlineSeconds: Int = 300

    package init(frontend: String, backend: String, name: String) {
        self.frontend = frontend
        self.backend = backend
        self.name = name
    }
}

extension RequestWorkerOptions: BenchWorkerOptions {
    static let template = RequestWorkerOptions(frontend: "", backend: "", name: "")
    static let requiredKeys = ["frontend", "backend", "name"]
    static let optionalKeys: [String] = []
    static let example = #"{"frontend":"ipc:///tmp/f.sock","backend":"ipc:///tmp/b.sock","name":"echo.x","count":20}"#

    var outOfRange: String? {
        typealias C = BenchWorkerCommand
        guard timeoutSeconds.isFinite else { return "timeoutSeconds must be a number, got \(timeoutSeconds)" }
        // Only validity matters here; the message below says what is wrong in the options' terms.
        if (try? NotificationName(name)) == nil { return "name must be a valid notification name, got '\(name)'" }
        return C.range("count", count, 1...100_000) ?? C.range("timeoutSeconds", timeoutSeconds, 0.001...3_600)
            ?? C.range("hardDeadlineSeconds", hardDeadlineSeconds, 1...86_400)
    }
}
