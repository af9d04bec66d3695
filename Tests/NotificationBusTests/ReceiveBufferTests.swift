import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

@testable import NotificationBus

// `BusConfiguration.receiveBufferBytes` reaches the kernel: the subscriber's TCP connection to
// the broker, found among this process's descriptors by its peer's port, has that receive buffer
// (Linux doubles what `SO_RCVBUF` is given, and then stops tuning it).
@Suite("The subscriber's kernel receive buffer", .timeLimit(.minutes(1)))
struct ReceiveBufferTests {
    @Test("receiveBufferBytes 128 KiB: the subscriber's connection has a 256 KiB buffer, the system's otherwise")
    func receiveBufferIsApplied() async throws {
        let broker = try Broker(BrokerConfiguration(frontend: "tcp://127.0.0.1:*", backend: "tcp://127.0.0.1:*"))
        let backendPort = try #require(Self.port(of: broker.backendEndpoint), "\(broker.backendEndpoint)")
        var configuration = BusConfiguration.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint)
        configuration.receiveBufferBytes = 128 << 10
        let sized = try Bus(configuration)
        let sizedFeed = try sized.notifications(named: "rcvbuf.>")
        try await sized.ready("rcvbuf.>")
        let sizedBuffers = Self.receiveBuffers(ofConnectionsTo: backendPort)
        #expect(sizedBuffers == [256 << 10], "SO_RCVBUF of the connections to port \(backendPort): \(sizedBuffers)")
        _ = await sized.close()
        _ = sizedFeed
        // Without it, the system's (tuned by the kernel, never the doubled 128 KiB).
        let plain = try Bus(.brokered(frontend: broker.frontendEndpoint, backend: broker.backendEndpoint))
        let plainFeed = try plain.notifications(named: "rcvbuf.>")
        try await plain.ready("rcvbuf.>")
        let plainBuffers = Self.receiveBuffers(ofConnectionsTo: backendPort)
        #expect(!plainBuffers.isEmpty && !plainBuffers.contains(256 << 10), "\(plainBuffers)")
        _ = await plain.close()
        _ = plainFeed
        _ = await broker.stop()
    }

    private static func port(of endpoint: String) -> UInt16? {
        endpoint.split(separator: ":").last.flatMap { UInt16($0) }
    }

    /// `SO_RCVBUF` of every TCP socket of this process whose peer is 127.0.0.1:`port`.
    private static func receiveBuffers(ofConnectionsTo port: UInt16) -> [Int32] {
        var buffers: [Int32] = []
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for entry in entries {
            guard let fd = Int32(entry) else { continue }
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
            }
            guard named == 0, address.sin_family == sa_family_t(AF_INET), UInt16(bigEndian: address.sin_port) == port else {
                continue
            }
            var size: Int32 = 0
            var sizeLength = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, &sizeLength) == 0 { buffers.append(size) }
        }
        return buffers
    }
}
