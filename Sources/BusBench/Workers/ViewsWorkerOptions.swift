import Foundation
import NotificationBus

/// What one process of `nbus bench views` (and `filter`) does (`nbus bench worker views`).
package struct ViewsWorkerOptions: Sendable, Codable {
    /// The scenario; a host's carries its own subscription.
    package var scenario: ViewsScenario
    /// Which process this is.
    package var role: ViewsWorker.Role
    /// Where the publisher binds / a host connects.
    package var endpoint: String
    /// A host's consumer style (required for a host).
    package var style: ViewStyle?
    /// Publisher: each host's subscription, so it knows how many hosts to wait for on each name.
    package var hostSubscriptions: [ViewSubscription]
    /// Exit as soon as stdin reaches end of file (the runner holds the pipe's write end).
    package var exitOnStandardInputEOF = true

    /// Options for `role`; a publisher waits for `hostSubscriptions` (one per host).
    package init(
        scenario: ViewsScenario, role: ViewsWorker.Role, endpoint: String, style: ViewStyle? = nil,
        hostSubscriptions: [ViewSubscription] = []
    ) {
        self.scenario = scenario
        self.role = role
        self.endpoint = endpoint
        self.style = style
        self.hostSubscriptions = hostSubscriptions
    }

    /// The command line that runs this worker through `command` (see `BenchWorkerCommand`).
    func arguments(command: [String]) -> [String] {
        BenchWorkerCommand.arguments(command, .views, self)
    }
}

extension ViewsWorkerOptions: BenchWorkerOptions {
    static let template = ViewsWorkerOptions(scenario: ViewsScenario(), role: .publisher, endpoint: "")
    static let requiredKeys = ["role", "endpoint"]
    static let optionalKeys = ["style"]
    static let example = #"{"role":"host","endpoint":"ipc:///tmp/v.sock","style":"onReceive"}"#

    var outOfRange: String? {
        do {
            try scenario.validate()
            return nil
        } catch {
            return "scenario: \(error)"
        }
    }
}
