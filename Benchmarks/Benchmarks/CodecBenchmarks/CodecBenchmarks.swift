// Micro-benchmarks of NBP/1 envelope encoding and decoding (EnvelopeCodec).
//
// Each benchmark iteration runs its operation `benchmark.scaledIterations` times
// (scalingFactor .mega: 1,000,000 operations, about 0.2 s). package-benchmark measures
// the whole iteration and, in its default (scaled) output, divides time and malloc
// counts by 1,000,000, so the figures it prints marked `*` are per single
// encode/decode. `--scale` prints the raw per-iteration figures instead.
//
// Why .mega and not .kilo: on Linux, cpuTotal is read from /proc/self/stat in scheduler
// ticks (10 ms here), so an iteration must last well over 10 ms for it to mean anything.

import Benchmark
import NotificationBus

/// The benchmarked notification: a 14-byte name, a 256-byte payload and two headers.
/// The name, both keys and "acme" are at most 15 UTF-8 bytes, so Swift stores them inline
/// (small strings); the trace value "4bf92f3577b34da6" is 16 bytes, one too many, so a
/// decoded copy of it needs a heap allocation. `traceValue` lets a variant use 15 bytes.
func sampleNotification(traceValue: String = "4bf92f3577b34da6") -> BusNotification {
    // A JSON-looking 256-byte payload; the content does not matter to the codec.
    var payload = Array(#"{"order":"A-1042","items":["#.utf8)
    while payload.count < 255 { payload.append(UInt8(ascii: "0") + UInt8(payload.count % 10)) }
    payload.append(UInt8(ascii: "}"))
    precondition(payload.count == 256)

    let name = try! NotificationName("orders.created")
    precondition(name.rawValue.utf8.count == 14)
    return BusNotification(
        name: name,
        payload: payload,
        headers: ["trace": traceValue, "tenant": "acme"],
        contentType: .json,
        sequence: 42,
        publisherID: 0x5EED_CAFE_F00D_BEEF,
        timestamp: 1_795_305_600_000_000_000
    )
}

/// Benchmark.Configuration is not Sendable, so it is made per use rather than held in a global.
func codecConfiguration() -> Benchmark.Configuration {
    Benchmark.Configuration(
        metrics: [.wallClock, .cpuTotal, .mallocCountTotal, .throughput],
        timeUnits: .nanoseconds,
        warmupIterations: 2,
        scalingFactor: .mega,
        maxDuration: .seconds(8),
        maxIterations: 1_000
    )
}

let benchmarks: @Sendable () -> Void = {
    let notification = sampleNotification()
    let frame = try! EnvelopeCodec.encode(notification)
    // Sanity: the frame round-trips, so the decode benchmarks measure the success path.
    precondition(try! EnvelopeCodec.decode(frame: frame) == notification)
    precondition(frame.withUnsafeBytes { try! EnvelopeCodec.decode($0) } == notification)

    Benchmark("EnvelopeCodec.encode 256B+2 headers", configuration: codecConfiguration()) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try EnvelopeCodec.encode(notification))
        }
    }

    Benchmark("EnvelopeCodec.decode 256B+2 headers", configuration: codecConfiguration()) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try EnvelopeCodec.decode(frame: frame))
        }
    }

    // The receive path: the frame's bytes are lent (as from a zmq_msg_t), not an [UInt8].
    Benchmark("EnvelopeCodec.decode borrowed bytes 256B+2 headers", configuration: codecConfiguration()) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try frame.withUnsafeBytes { try EnvelopeCodec.decode($0) })
        }
    }

    // Same as the decode above but with a 15-byte trace value ("4bf92f3577b34da"), so every
    // decoded string fits inline: isolates the one allocation the 16-byte value costs.
    let smallFrame = try! EnvelopeCodec.encode(sampleNotification(traceValue: "4bf92f3577b34da"))
    Benchmark("EnvelopeCodec.decode 256B+2 headers, all strings <= 15 B", configuration: codecConfiguration()) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try EnvelopeCodec.decode(frame: smallFrame))
        }
    }
}
