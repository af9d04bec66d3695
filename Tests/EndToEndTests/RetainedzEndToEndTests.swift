#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import ToolSupport

// `nbus broker --retain-names --http`'s `/retainedz` (issue 39, item 8), with real processes:
// `nbus publish --retain` posts more names than the listing shows, one with `--retain-for`; the
// endpoint counts them all and lists the first 1,000 in name order, with size and expiry.

@Suite("/retainedz of nbus broker (real processes)", .serialized, .timeLimit(.minutes(3)))
struct RetainedzEndToEndTests {
    @Test("/retainedz: count and bytes of every kept value, the first 1,000 names sorted with size and expiry, truncated")
    func listsTheKeptValues() async throws {
        let children = try Children()
        defer { children.killAll() }
        let (broker, frontend, _) = try await children.startBroker(["--retain-names", "2000", "--http", "127.0.0.1:0"])
        try #require(await broker.waitForStderr(containing: "monitoring on http://"), "\(broker.describe())")
        let port = try #require(monitoringPort(in: broker.output.stderrText), "\(broker.describe())")

        func retainedz() throws -> [String: Any]? {
            try JSONSerialization.jsonObject(with: Data(try httpGet(port: port, "/retainedz").body.utf8)) as? [String: Any]
        }
        let empty = try #require(try retainedz())
        #expect(empty["count"] as? Int == 0 && empty["truncated"] as? Bool == false, "\(empty)")
        #expect((empty["names"] as? [Any])?.isEmpty == true)

        // 1,005 names (state.k1 ... state.k1005), then one that expires in 10 minutes.
        let publisher = try children.start(
            "publisher",
            ["publish", "state.k", "--lines", "--input", "json", "--retain", "--connect", frontend, "--timeout", "30"],
            withStdin: true)
        try publisher.writeStdinAndClose((1...1_005).map { "{\"name\":\"state.k\($0)\",\"payload\":\"v\"}\n" }.joined())
        expectExit(await publisher.waitForExit(timeout: .seconds(60)), 0, publisher)
        let expiring = try children.start(
            "expiring", ["publish", "state.a", "soon", "--retain", "--retain-for", "600", "--connect", frontend, "--timeout", "30"])
        expectExit(await expiring.waitForExit(timeout: .seconds(60)), 0, expiring)

        // The broker keeps each as it forwards it: asked until all 1,006 show, bounded.
        let listing = try #require(
            try await eventually { () -> [String: Any]? in
                guard let object = try retainedz(), object["count"] as? Int == 1_006 else { return nil }
                return object
            }, "\(bodyOf(port))")
        let names = try #require(listing["names"] as? [[String: Any]])
        #expect(listing["truncated"] as? Bool == true)
        #expect(names.count == 1_000)
        let expected = (["state.a"] + (1...1_005).map { "state.k\($0)" }).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(names.compactMap { $0["name"] as? String } == Array(expected.prefix(1_000)))
        // Every listed value's size is its frame: more than its name and payload, and all within the total.
        let sizes = names.compactMap { $0["bytes"] as? Int }
        #expect(sizes.count == 1_000 && sizes.allSatisfy { $0 > "state.k1005".utf8.count + 1 })
        #expect(try #require(listing["bytes"] as? Int) > sizes.reduce(0, +))
        let first = try #require(names.first)
        #expect(first["name"] as? String == "state.a")
        let remaining = try #require(first["expiresInSeconds"] as? Double, "\(first)")
        #expect(remaining > 500 && remaining <= 600, "\(first)")
        #expect((first["expiresAt"] as? String)?.hasSuffix("Z") == true, "\(first)")
        #expect(names.dropFirst().allSatisfy { $0["expiresInSeconds"] == nil && $0["expiresAt"] == nil })
        // The index at / lists it.
        #expect(try httpGet(port: port, "/").body.contains("\n/retainedz "))

        broker.signal(SIGTERM)
        expectExit(await broker.waitForExit(), 0, broker)
    }

    private func bodyOf(_ port: Int) -> String {
        (try? httpGet(port: port, "/retainedz").body) ?? "(no answer)"
    }
}
