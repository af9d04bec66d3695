import Foundation

/// One of the targets, evaluated on this run.
package struct ViewsTarget: Codable, Sendable {
    /// The target as the issue states it.
    package var requirement: String
    /// The scenario the target is defined for.
    package var scenario: String
    /// Whether this run is that scenario: when not, the target is not judged ("not this scenario").
    package var applies: Bool
    /// What this run measured (shown even when the target does not apply, for information).
    package var measured: String
    /// Met or not, judged only when `applies`; nil when the run cannot tell (a style missing...).
    package var met: Bool?

    package init(requirement: String, scenario: String, applies: Bool, measured: String, met: Bool?) {
        self.requirement = requirement
        self.scenario = scenario
        self.applies = applies
        self.measured = measured
        self.met = applies ? met : nil
    }

    package var verdict: String {
        guard applies else { return "not this scenario" }
        switch met {
        case true?: return "met"
        case false?: return "NOT MET"
        case nil: return "cannot tell"
        }
    }
}
