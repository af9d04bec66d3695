#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
import ZeroMQ
import TestSupport

@Suite("Typed errors and context lifecycle")
struct ErrorAndLifecycleTests {
    @Test("Binding the same tcp endpoint twice is addressInUse")
    func doubleBindIsAddressInUse() throws {
        let context = try Context()
        let first = try context.socket(.pub)
        try first.bind(TestEndpoint.tcpAnyPort)
        let endpoint = try first.lastEndpoint()
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        let second = try context.socket(.pub)
        do {
            try second.bind(endpoint)
            Issue.record("second bind to \(endpoint) succeeded")
        } catch {
            #expect(error.kind == .addressInUse)
            #expect(error.operation == "zmq_bind")
            #expect(!error.message.isEmpty)
            // Which of several endpoints failed: the message says.
            #expect(error.endpoint == endpoint)
            #expect(error.description.hasPrefix("zmq_bind \(endpoint): "), "\(error)")
        }
    }

    @Test("Binding an ipc path another socket listens on is addressInUse, not a silent takeover")
    func doubleBindIPCIsAddressInUse() throws {
        let context = try Context()
        let endpoint = try temporaryIPCEndpoint()
        let first = try context.socket(.pull)
        try first.bind(endpoint)
        let second = try context.socket(.pull)
        do {
            try second.bind(endpoint)
            Issue.record("second bind to \(endpoint) succeeded")
        } catch {
            #expect(error.kind == .addressInUse)
        }
        // The first listener still works.
        let sender = try context.socket(.push)
        try sender.connect(endpoint)
        try sender.send("still here")
        try first.set(.receiveTimeout, .milliseconds(5_000))
        #expect(try first.receiveString() == "still here")
    }

    @Test("Closing or unbinding removes the socket file of an ipc bind (libzmq 4.3 leaves it behind)")
    func closeRemovesIPCFile() throws {
        let context = try Context()
        let endpoint = try temporaryIPCEndpoint()
        let path = String(endpoint.dropFirst("ipc://".count))
        let socket = try context.socket(.pub)
        try socket.bind(endpoint)
        #expect(FileManager.default.fileExists(atPath: path))
        socket.close()
        #expect(!FileManager.default.fileExists(atPath: path))

        let again = try context.socket(.pub)
        try again.bind(endpoint)
        try again.unbind(endpoint)
        #expect(!FileManager.default.fileExists(atPath: path))
        again.close()
    }

    @Test("Closing leaves alone a file another socket has bound at the same path since")
    func closeLeavesOthersIPCFile() throws {
        let context = try Context()
        let endpoint = try temporaryIPCEndpoint()
        let path = String(endpoint.dropFirst("ipc://".count))
        let first = try context.socket(.pull)
        try first.bind(endpoint)
        // Someone removes the file and binds the path anew (another process, after a restart).
        try FileManager.default.removeItem(atPath: path)
        let second = try context.socket(.pull)
        try second.bind(endpoint)
        first.close()
        #expect(FileManager.default.fileExists(atPath: path))
        // And the second listener is still reachable there.
        let sender = try context.socket(.push)
        try sender.connect(endpoint)
        try sender.send("to the second")
        try second.set(.receiveTimeout, .milliseconds(5_000))
        #expect(try second.receiveString() == "to the second")
    }

    @Test("Binding an ipc path whose socket file outlived its listener (a killed process) works")
    func bindOverStaleIPCFile() throws {
        let endpoint = try temporaryIPCEndpoint()
        let path = String(endpoint.dropFirst("ipc://".count))
        // What a SIGKILLed process leaves: a socket file nobody listens on.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        close(fd)
        try #require(bound == 0 && FileManager.default.fileExists(atPath: path))

        let context = try Context()
        let listener = try context.socket(.pull)
        try listener.bind(endpoint)
        let sender = try context.socket(.push)
        try sender.connect(endpoint)
        try sender.send("over the stale file")
        try listener.set(.receiveTimeout, .milliseconds(5_000))
        #expect(try listener.receiveString() == "over the stale file")
    }

    @Test("A malformed endpoint is a typed error with libzmq's text")
    func malformedEndpoint() throws {
        let context = try Context()
        let socket = try context.socket(.sub)
        #expect(throws: ZMQError.self) { try socket.connect("nonsense") }
        do { try socket.connect("bogus://x") } catch {
            #expect(error.kind == .protocolNotSupported)
            #expect(error.description.contains("zmq_connect"))
        }
    }

    @Test("A tcp port above 65535 is refused, not wrapped to its low 16 bits as libzmq would")
    func outOfRangePortIsRefused() throws {
        let context = try Context()
        let socket = try context.socket(.pub)
        for endpoint in ["tcp://127.0.0.1:99999", "tcp://127.0.0.1:65536", "tcp://127.0.0.1:0000065537"] {
            do {
                try socket.bind(endpoint)
                Issue.record("bound \(endpoint): \(try socket.lastEndpoint())")
            } catch {
                #expect(error.kind == .invalidArgument && error.endpoint == endpoint, "\(error)")
            }
        }
        do {
            try socket.connect("tcp://127.0.0.1:5000;127.0.0.1:700000")
            Issue.record("connected with source port 700000")
        } catch {
            #expect(error.kind == .invalidArgument, "\(error)")
        }
        #expect(TCPEndpoint.outOfRangePort(in: "tcp://127.0.0.1:65535") == nil)
        #expect(TCPEndpoint.outOfRangePort(in: "tcp://127.0.0.1:*") == nil)
        #expect(TCPEndpoint.outOfRangePort(in: "tcp://[::1]:70000") == "70000")
        #expect(TCPEndpoint.outOfRangePort(in: "ipc:///tmp/a:99999") == nil)
    }

    @Test("Unbind and disconnect of unknown endpoints are endpointNotFound")
    func unbindUnknown() throws {
        let context = try Context()
        let socket = try context.socket(.pub)
        do { try socket.unbind("tcp://127.0.0.1:1") } catch { #expect(error.kind == .endpointNotFound) }
        try socket.bind(TestEndpoint.tcpAnyPort)
        try socket.unbind(try socket.lastEndpoint())
    }

    @Test("Using a closed socket is a typed error, not a crash")
    func closedSocket() throws {
        let context = try Context()
        let socket = try context.socket(.pub)
        socket.close()
        socket.close()
        #expect(throws: ZMQError.self) { try socket.bind(TestEndpoint.inproc()) }
    }

    @Test("Shutting the context down makes a blocked receive return contextTerminated")
    func shutdownUnblocksReceive() throws {
        let context = try Context()
        let outcome = Mutex<ZMQError.Kind?>(nil)
        let socketReady = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let thread = Thread {
            do {
                let socket = try context.socket(.pull)
                try socket.bind(TestEndpoint.inproc("shutdown"))
                socketReady.signal()
                _ = try socket.receive()  // blocks: no timeout set, nobody sends
                socket.close()
            } catch {
                outcome.withLock { $0 = (error as? ZMQError)?.kind }
                socketReady.signal()
            }
            finished.signal()
        }
        thread.start()
        socketReady.wait()
        context.shutdown()
        // Bounded: the receive either returns ETERM promptly or the test fails instead of hanging.
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(outcome.withLock { $0 } == .contextTerminated)
        context.terminate()
        #expect(context.isShutDown)
    }

    @Test("Creating a socket on a shut-down context is contextTerminated")
    func socketAfterShutdown() throws {
        let context = try Context()
        context.shutdown()
        do {
            _ = try context.socket(.pub)
            Issue.record("socket creation succeeded after shutdown")
        } catch {
            #expect(error.kind == .contextTerminated)
        }
    }
}

@Suite("TCPEndpoint.hostProblem: hosts that can be no address")
struct TCPEndpointHostTests {
    @Test("numeric hosts must be IPv4 addresses, bracketed ones IPv6, names must be names")
    func hosts() throws {
        for good in [
            "tcp://127.0.0.1:5550", "tcp://*:5550", "tcp://localhost:1", "tcp://broker.site-a:5551", "tcp://[::1]:5550",
            "tcp://[fe80::1%eth0]:5550", "tcp://eth0:5555", "tcp://127.1:5", "tcp://10.0.0.1;192.168.1.2:5550", "ipc:///tmp/x:1",
            "tcp://my_host.local.:9",
        ] {
            #expect(TCPEndpoint.hostProblem(in: good) == nil, "\(good)")
        }
        for bad in [
            "tcp://256.1.1.1:1", "tcp://1.2.3.4.5:1", "tcp://[::zz]:1", "tcp://::1:5", "tcp://exa mple:1", "tcp://a..b:1",
            "tcp://-a.b:1", "tcp://a-.b:1", "tcp://[::1:5", "tcp://\(String(repeating: "a", count: 64)).b:1",
        ] {
            #expect(TCPEndpoint.hostProblem(in: bad) != nil, "\(bad)")
        }
    }

    @Test("connect and bind refuse such a host with EINVAL instead of retrying it for ever")
    func socketsRefuse() throws {
        let context = try Context()
        defer { context.terminate() }
        let socket = try context.socket(.sub)
        defer { socket.close() }
        #expect(throws: ZMQError.self) { try socket.connect("tcp://256.1.1.1:1") }
        #expect(throws: ZMQError.self) { try socket.bind("tcp://300.1.1.1:5000") }
    }
}
