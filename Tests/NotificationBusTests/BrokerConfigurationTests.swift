import Testing
import ZeroMQ

@testable import NotificationBus

// BrokerConfiguration.validate(): each value out of range is refused with a message that names
// it, before anything binds; the defaults pass.
@Suite("BrokerConfiguration: one value, validated once")
struct BrokerConfigurationTests {
    static let base = BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*")

    @Test("the defaults and the presets are valid")
    func defaultsAreValid() throws {
        try Self.base.validate()
        try BrokerConfiguration.lowLatency(frontend: "ipc:///tmp/f", backend: "ipc:///tmp/b").validate()
        #expect(Self.base.subscriberBudget == 64 << 20)
        #expect(Self.base.slowSubscriberPatience == .milliseconds(500))
    }

    static let refused: [(String, @Sendable (inout BrokerConfiguration) -> Void)] = [
        ("backend must differ from frontend", { $0.frontend = "ipc:///tmp/x"; $0.backend = "ipc:///tmp/x" }),
        ("frontend must be an endpoint", { $0.frontend = "" }),
        ("upstream ipc:///tmp/b is this broker's own endpoint", { $0.backend = "ipc:///tmp/b"; $0.upstream = ["ipc:///tmp/b"] }),
        ("highWaterMark must be 0", { $0.highWaterMark = -1 }),
        ("subscriberBudget must be 0", { $0.subscriberBudget = -1 }),
        ("slowSubscriberPatience must be zero to", { $0.slowSubscriberPatience = .milliseconds(-1) }),
        ("slowSubscriberPatience must be zero to", { $0.slowSubscriberPatience = .seconds(3_601) }),
        ("subscriberBudget must be 0 (none: highWaterMark messages) to 1 TiB, not 1048577 MiB", { $0.subscriberBudget = (1 << 40) + (1 << 20) }),
        ("memoryLimit must be 64 MiB to 1 PiB or no limit", { $0.memoryLimit = 63 << 20 }),
        ("idleSpin must be zero to 10 seconds", { $0.idleSpin = .seconds(11) }),
        ("heartbeat must be zero (off) or 0.001 to 2184 seconds", { $0.heartbeat = .seconds(2_185) }),
        ("heartbeat must be zero (off) or 0.001 to 2184 seconds", { $0.heartbeat = .microseconds(10) }),
        ("maximumSubscriptionSize must be 512...1024", { $0.maximumSubscriptionSize = 511 }),
        ("maximumSubscriptionSize must be 512...1024", { $0.maximumSubscriptionSize = 1_025 }),
        ("maximumFrameSize must be at least 512", { $0.maximumFrameSize = 511 }),
    ]

    @Test("each value out of range is named", arguments: 0..<refused.count)
    func outOfRangeIsNamed(index: Int) {
        let (expected, change) = Self.refused[index]
        var configuration = Self.base
        change(&configuration)
        #expect {
            try configuration.validate()
        } throws: { error in
            guard let error = error as? BusError, error.code == .invalidConfiguration, let text = error.reason else { return false }
            return text.contains(expected)
        }
    }

    @Test("the heartbeat's bound is three intervals within the bus's one range")
    func heartbeatBound() throws {
        var configuration = Self.base
        configuration.heartbeat = BrokerConfiguration.maximumHeartbeat
        try configuration.validate()
        #expect(BrokerConfiguration.maximumHeartbeat * 3 <= BusConfiguration.maximumHeartbeat)
    }

    @Test("CURVE with an upstream broker is a security error naming the upstream")
    func curveWithUpstream() throws {
        var configuration = Self.base
        configuration.upstream = ["tcp://127.0.0.1:5999"]
        configuration.security = BrokerSecurity(
            keyPair: try CurveKeyPair.generate(), allowedPublishers: try CurveAllowList(keys: [:]), allowedSubscribers: try CurveAllowList(keys: [:]))
        #expect(configuration.invalidSetting()?.setting == .upstream)
        #expect {
            try configuration.validate()
        } throws: { error in
            (error as? BusError)?.code == .security
        }
    }
}
