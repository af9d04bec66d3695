import ArgumentParser
import BusOperations

/// `--http` of `nbus broker`.
struct BrokerHTTPOptions: ParsableArguments {
    @Option(name: .customLong("http"), help: ArgumentHelp(
        "Serve /metrics, /healthz, /varz, /connz, /subsz and /retainedz on HOST:PORT (a bare PORT is 127.0.0.1; 0 picks a free port, logged). Off by default.",
        valueName: "host:port"))
    var http: String?

    func validate() throws {
        if let http {
            do { _ = try HTTPListenAddress(parsing: http) } catch { throw ValidationError("--http \(error)") }
        }
    }
}
