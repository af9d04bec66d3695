import BusOperations
import Foundation
import NotificationBus
import ServiceLifecycle
import ToolSupport

/// The running subscriber: prints until `--count`, `--timeout`, a refused CURVE key or a graceful
/// shutdown, then closes and prints its summary. On a signal it closes the bus first and lets the
/// printing tasks finish what was already buffered, so the summary counts exactly what was printed.
struct SubscribeService: Service {
    let command: Subscribe
    let bus: Bus
    let streams: [BusEventSequence]
    /// With --http: the delivery-latency histogram, fed as each notification is printed.
    let latency: DeliveryLatencyMetrics?
    /// With --decode: the payloads that did not decode, per pattern.
    let undecodable: UndecodableCounts

    private typealias Ending = SubscribeOutcome.Ending

    func run() async throws {
        let (command, bus, streams, undecodable) = (self.command, self.bus, self.streams, self.undecodable)
        let printer = EventPrinter(limit: command.count, format: command.format == .json ? .json : .text, latency: latency)
        // Not on `bus.executor`: formatting and writing every notification is heavy, and on the
        // bus's own thread it would stop reading meanwhile (a burst then makes this subscriber
        // slow at the broker); on another core the two run side by side.
        let printing = Task { await command.printEvents(of: streams, printing: printer, undecodable: undecodable) }
        let ending = await withTaskGroup(of: Ending?.self) { group -> Ending in
            group.addTask {
                _ = await printing.value
                return .printingEnded
            }
            if let timeout = command.timeout {
                group.addTask {
                    do {
                        try await Task.sleep(for: SecondsOption.duration(timeout))
                        // The connection wait ends now too (it is bounded by --timeout): which
                        // task the group hands over first must not decide what is said.
                        if command.connectWait != nil, !(await Subscribe.somethingAnswers(bus, within: .zero)) { return .nothingAnswered }
                        return .timedOut
                    } catch {
                        return nil
                    }
                }
            }
            if let wait = command.connectWait {
                // No broker running: say so after a bounded wait, rather than wait in silence
                // (connecting only; once something answered, libzmq's reconnections take over).
                group.addTask { await Subscribe.somethingAnswers(bus, within: wait) ? nil : .nothingAnswered }
            }
            group.addTask {
                do {
                    try await gracefulShutdown()
                    return .signalled
                } catch {
                    return nil
                }
            }
            if command.watchesMemory {
                group.addTask {
                    await command.logMemoryResets(of: bus)
                    return nil
                }
            }
            group.addTask {
                // A refused key, or a server with another security mechanism (CURVE against
                // plaintext), stays so: say it instead of waiting in silence. Bounded by a year,
                // i.e. for as long as the subscriber runs.
                do {
                    try await bus.waitForHandshakeRefusal(timeout: .seconds(365 * 86_400))
                    return .refused
                } catch {
                    return nil
                }
            }
            var first: Ending?
            while first == nil, let next = await group.next() { first = next }
            switch first {
            case .signalled?:
                // Stop reading; every stream ends once its buffer is printed.
                await bus.close()
            case .timedOut?, .refused?, .nothingAnswered?:
                // Closed before the printing stops: cancelling it ends the subscriptions, and a
                // bus forgets the streams no subscription matches, so the summary would find none
                // tracked and hide a tail it does not know (NBP-1 §15.2), as a signal never did.
                await bus.close()
                printing.cancel()
            case .printingEnded?, nil:
                break
            }
            group.cancelAll()
            return first ?? .printingEnded
        }
        _ = await printing.value

        let perPattern = zip(command.patterns, streams).enumerated().map { index, subscription in
            (subscription.0, undecodable.adding(to: subscription.1.stats, pattern: index))
        }
        let busStats = await bus.close()
        let counts = SubscribeOutcome.Counts(printed: printer.count, perPattern: perPattern, bus: busStats)
        let (outcome, format) = (SubscribeOutcome.of(ending, counts: counts, options: command.outcomeOptions), command.summaryFormat)
        // After the --http server and the connection watch have stopped: the summary is last.
        try await LastWords.atEnd { try finish("subscribe", outcome, format: format) }
    }
}
