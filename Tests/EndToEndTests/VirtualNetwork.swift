#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import ToolSupport
import Synchronization
import TestSupport

// Several "machines" on one: Linux network namespaces joined by veth pairs to a bridge, built with
// iproute2 (`ip`, `tc`). Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); where that is missing (not
// root, a container that may not create namespaces, no iproute2), `VirtualNetwork.create` throws
// `NetworkUnavailable`, which the tests turn into a skip with its message.
//
// Layout, a star: namespace `<id>-switch` holds bridge `br0`; each host is namespace `<id>-<host>`
// with `eth0` (its address, /24) whose veth peer is port `<host>` of `br0`. Namespace names carry
// the test process's PID and a counter, so parallel runs and tests never collide; interface names
// live inside the namespaces, so they cannot collide either. `destroy()` deletes every namespace
// (the veths and the bridge go with them) and is safe to call from a `defer` on any exit path.
// Namespaces left by a run that was killed (its PID gone) are deleted by the next `create`.

/// Why the machine cannot host a virtual network: the test is skipped with this message.
struct NetworkUnavailable: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A star of network namespaces around a Linux bridge.
final class VirtualNetwork: Sendable {
    /// Every namespace this suite creates starts with this, then `<pid>-`.
    static let namePrefix = "nbus-mh-"
    private static let counter = Atomic<Int>(0)

    /// `nbus-mh-<pid>-<n>`.
    let id: String
    let ip: URL
    let tc: URL?
    private let created = Mutex<[String]>([])

    /// The namespace of `host`.
    func namespace(_ host: String) -> String { "\(id)-\(host)" }
    private var switchNamespace: String { namespace("switch") }

    private init(ip: URL, tc: URL?) {
        self.ip = ip
        self.tc = tc
        id = "\(Self.namePrefix)\(getpid())-\(Self.counter.add(1, ordering: .relaxed).newValue)"
    }

    /// Whether this process could try at all: root and iproute2. A suite trait checks this, so the
    /// usual reasons to skip are reported as skips before the test starts, on every compiler.
    static var mayBeAvailable: Bool { geteuid() == 0 && findTool("ip") != nil }

    /// NBUS_REQUIRE_NETNS=1: a machine that cannot host the network fails the tests instead.
    static var required: Bool { ProcessInfo.processInfo.environment["NBUS_REQUIRE_NETNS"] == "1" }

    /// Creates the switch namespace and its bridge; throws `NetworkUnavailable` when this machine
    /// cannot (not root, no iproute2, namespaces or veth/bridge links not permitted).
    static func create() async throws -> VirtualNetwork {
        guard geteuid() == 0 else {
            throw NetworkUnavailable(
                "needs root to create network namespaces (ip netns add); run the tests as root, as CI does")
        }
        guard let ip = findTool("ip") else {
            throw NetworkUnavailable("iproute2 is not installed (no `ip`); `make deps` installs it as root")
        }
        let network = VirtualNetwork(ip: ip, tc: findTool("tc"))
        await network.removeStaleNamespaces()
        do {
            let result = try await network.run(ip, ["netns", "add", network.switchNamespace])
            guard result.status == 0 else {
                throw NetworkUnavailable(
                    "`ip netns add` is not permitted here (a container without CAP_SYS_ADMIN?): \(result.stderr)")
            }
            network.created.withLock { $0.append(network.switchNamespace) }
            let bridge = try await network.run(ip, ["-n", network.switchNamespace, "link", "add", "br0", "type", "bridge"])
            guard bridge.status == 0 else {
                throw NetworkUnavailable("cannot create a Linux bridge in a namespace: \(bridge.stderr)")
            }
            try await network.ipOrThrow(["-n", network.switchNamespace, "link", "set", "br0", "up"])
            try await network.ipOrThrow(["-n", network.switchNamespace, "link", "set", "lo", "up"])
            return network
        } catch {
            network.destroy()
            throw error
        }
    }

    /// Adds a host: namespace `<id>-<host>`, `eth0` with `address`/24, plugged into the bridge.
    func addHost(_ host: String, address: String) async throws {
        let name = namespace(host)
        try await ipOrThrow(["netns", "add", name])
        created.withLock { $0.append(name) }
        let veth = try await run(
            ip, ["link", "add", "eth0", "netns", name, "type", "veth", "peer", "name", host, "netns", switchNamespace])
        guard veth.status == 0 else {
            let message = "ip link add eth0 netns \(name) type veth peer name \(host) netns \(switchNamespace): \(veth.stderr)"
            if veth.stderr.contains("not permitted") || veth.stderr.contains("not supported")
                || veth.stderr.contains("Unknown device type")
            {
                throw NetworkUnavailable("cannot create veth pairs: \(message)")
            }
            throw TestSetupError(message)
        }
        try await ipOrThrow(["-n", switchNamespace, "link", "set", host, "master", "br0", "up"])
        try await ipOrThrow(["-n", name, "addr", "add", "\(address)/24", "dev", "eth0"])
        try await ipOrThrow(["-n", name, "link", "set", "eth0", "up"])
        try await ipOrThrow(["-n", name, "link", "set", "lo", "up"])
    }

    /// Impairs `host`'s link in both directions: `tc qdisc add dev eth0 root netem ARGS` in the
    /// host and on its bridge port. Returns nil, or why it cannot (no `tc`, no sch_netem).
    func impair(_ host: String, netem arguments: [String]) async throws -> String? {
        guard let tc else { return "`tc` (iproute2) is not installed" }
        for (namespace, device) in [(namespace(host), "eth0"), (switchNamespace, host)] {
            let result = try await run(tc, ["-n", namespace, "qdisc", "add", "dev", device, "root", "netem"] + arguments)
            guard result.status == 0 else {
                return "tc qdisc add dev \(device) root netem \(arguments.joined(separator: " ")) failed "
                    + "(sch_netem not available in this kernel?): \(result.stderr)"
            }
        }
        return nil
    }

    /// Cuts `host` off silently, as a host that lost power or its cable: its bridge port goes down,
    /// so whatever is sent to it is dropped without a reply (no RST, no ICMP).
    func cut(_ host: String) async throws {
        try await ipOrThrow(["-n", switchNamespace, "link", "set", host, "down"])
    }

    /// `ip netns exec <id>-<host> COMMAND...`: the arguments for `ip` that run a command on `host`.
    func exec(on host: String, _ command: [String]) -> [String] {
        ["netns", "exec", namespace(host)] + command
    }

    /// Bytes received and sent by `host`'s `eth0` so far (`ip -s -j link`).
    func trafficBytes(of host: String) async throws -> (received: UInt64, sent: UInt64) {
        let result = try await ipOrThrow(["-n", namespace(host), "-s", "-j", "link", "show", "dev", "eth0"])
        guard let links = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [[String: Any]],
            let stats = links.first?["stats64"] as? [String: Any],
            let rx = (stats["rx"] as? [String: Any])?["bytes"] as? NSNumber,
            let tx = (stats["tx"] as? [String: Any])?["bytes"] as? NSNumber
        else { throw TestSetupError("unexpected `ip -s -j link` output: \(result.stdout.prefix(300))") }
        return (rx.uint64Value, tx.uint64Value)
    }

    /// TCP segments retransmitted in `host`'s namespace so far (RetransSegs of /proc/net/snmp).
    func tcpRetransmissions(on host: String) async throws -> UInt64? {
        let result = try await ipOrThrow(exec(on: host, ["cat", "/proc/net/snmp"]))
        let tcpLines = result.stdout.split(separator: "\n").filter { $0.hasPrefix("Tcp:") }
        guard tcpLines.count == 2 else { return nil }
        let names = tcpLines[0].split(separator: " ")
        let values = tcpLines[1].split(separator: " ")
        guard let index = names.firstIndex(of: "RetransSegs"), index < values.count else { return nil }
        return UInt64(values[index])
    }

    /// Deletes every namespace this network created (their veths and the bridge go with them).
    /// Synchronous and bounded, for `defer`. Processes still inside keep a namespace alive until
    /// they exit, so kill them first.
    func destroy() {
        let names = created.withLock { names in
            defer { names.removeAll() }
            return names
        }
        for name in names.reversed() { Self.runQuietly(ip, ["netns", "delete", name]) }
    }

    // MARK: Running ip and tc

    struct Result: Sendable {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `tool arguments...` to completion within 10 s (a hang is an error, never a skip).
    func run(_ tool: URL, _ arguments: [String]) async throws -> Result {
        let child = Child(label: tool.lastPathComponent, executable: tool, arguments: arguments, directory: "/", withStdin: false)
        try child.launch()
        guard let output = await child.waitForExit(timeout: .seconds(10)) else {
            child.signal(SIGKILL)
            throw TestSetupError("did not finish within 10 s: \(child.describe())")
        }
        let stderr = output.stderrText.trimmingCharacters(in: .whitespacesAndNewlines)
        return Result(status: output.bySignal ? 128 + output.status : output.status, stdout: output.stdoutText, stderr: stderr)
    }

    @discardableResult
    func ipOrThrow(_ arguments: [String]) async throws -> Result {
        let result = try await run(ip, arguments)
        guard result.status == 0 else {
            throw TestSetupError("ip \(arguments.joined(separator: " ")) failed (exit \(result.status)): \(result.stderr)")
        }
        return result
    }

    /// Deletes namespaces of earlier runs whose test process is gone (killed before its cleanup
    /// ran), after killing whatever that run left running inside them (a broker never exits alone).
    private func removeStaleNamespaces() async {
        guard let list = try? await run(ip, ["netns", "list"]), list.status == 0 else { return }
        for line in list.stdout.split(separator: "\n") {
            // "nbus-mh-1234-1-broker (id: 3)" or just the name.
            guard let name = line.split(separator: " ").first.map(String.init), name.hasPrefix(Self.namePrefix),
                let pid = Int32(name.dropFirst(Self.namePrefix.count).prefix { $0.isNumber }),
                pid != getpid(), kill(pid, 0) == -1, errno == ESRCH
            else { continue }
            if let pids = try? await run(ip, ["netns", "pids", name]), pids.status == 0 {
                for leftover in pids.stdout.split(separator: "\n").compactMap({ Int32($0) }) { kill(leftover, SIGKILL) }
            }
            Self.runQuietly(ip, ["netns", "delete", name])
        }
    }

    /// Runs a tool, output discarded, waiting at most 5 s: usable where nothing may be awaited.
    private static func runQuietly(_ tool: URL, _ arguments: [String]) {
        let done = DispatchSemaphore(value: 0)
        guard
            let process = try? SpawnedProcess.spawn(
                tool.path, arguments, standardOutput: .null, standardError: .null, onExit: { _ in done.signal() })
        else { return }
        if done.wait(timeout: .now() + 5) == .timedOut { process.send(SIGKILL) }
    }

    static func findTool(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        for folder in folders where FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
            return URL(fileURLWithPath: "\(folder)/\(name)")
        }
        return nil
    }
}
