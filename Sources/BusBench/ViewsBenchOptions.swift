import Foundation
import NotificationBus

/// How `nbus bench views` runs its scenario: which binary and command start the workers, and
/// the baselines measured alongside.
package struct ViewsBenchOptions: Sendable {
    /// The scenario every style runs.
    package var scenario: ViewsScenario
    /// The `nbus` executable to start workers from (normally this process's own executable).
    package var nbusExecutable: String
    /// The arguments that select the hidden worker command, `BenchWorkerCommand.nbusSubcommand` unless told otherwise.
    package var workerCommand: [String]
    /// The `nbus-baseline` executable (next to `nbus`, where SwiftPM builds it).
    package var baselineExecutable: String
    /// Seconds of each baseline (raw libzmq at the scenario's rate; Foundation as many posts);
    /// 0 skips them.
    package var baselineSeconds = 2.0

    package init(scenario: ViewsScenario = ViewsScenario(), workerCommand: [String] = BenchWorkerCommand.nbusSubcommand) {
        self.scenario = scenario
        self.nbusExecutable = ThroughputOptions.currentExecutable()
        self.workerCommand = workerCommand
        baselineExecutable = (ThroughputOptions.executableDirectory() as NSString).appendingPathComponent("nbus-baseline")
    }
}
