import ArgumentParser
import BusOperations
import Foundation
import NotificationBus
import ServiceLifecycle

/// The running publisher: waits for its subscribers, posts, closes and prints its summary. A
/// graceful shutdown cancels the waiting or posting; what was posted is still flushed at close.
struct PublishService: Service {
    /// With --no-wait, when nothing was sent and no connection is up: how long closing looks for
    /// a handshake's verdict (within --close-timeout). A handshake takes a round trip or two and
    /// libzmq retries every 100 ms; this is far above that on a LAN, with room for a loaded
    /// machine, and only a publish that reached no broker waits it out.
    static let refusalGrace = Duration.seconds(2)

    let command: Publish
    let bus: Bus
    let name: NotificationName
    let headers: NotificationHeaders
    let contentType: ContentType

    func run() async throws {
        let (command, bus, name) = (self.command, self.bus, self.name)
        let ending: PublishOutcome.Ending
        do {
            let (headers, contentType) = (self.headers, self.contentType)
            let skipped = try await cancelWhenGracefulShutdown {
                try await command.post(bus, name, headers, contentType)
            }
            ending = .finished(name: name, skippedLines: skipped, verdict: await verdictBeforeClosing())
        } catch let missing as Publish.SubscribersMissing {
            ending = .subscribersMissing(missing.outcome, name: missing.name)
        } catch let error as ExitCode {
            await bus.close()
            throw error
        } catch {
            ending = .failed(reason: "\(error)")
        }
        let stats = await bus.close()
        let (outcome, format) = (PublishOutcome.of(ending, stats: stats, options: command.outcomeOptions), command.summaryFormat)
        // After the --http server and the connection watch have stopped: the summary is last.
        try await LastWords.atEnd { try finish("publish", outcome, format: format) }
    }

    /// Posting ended: says so, and looks at the handshakes when nothing else did.
    ///
    /// --no-wait waited for nobody, so whether a server would have it at all (an unlisted key,
    /// CURVE on one side only) has not been looked at yet, and a short run closes within
    /// milliseconds of connecting, before any verdict. A publisher whose handshake never
    /// completed has sent nothing: when nothing was sent and no connection is up, wait a
    /// moment (a handshake takes a round trip or two; libzmq retries every 100 ms) for the
    /// connection or a refusal. A plain fire-and-forget publish that reached a broker closes at
    /// once; one that found nothing listening says so (exit 2: nothing was sent).
    private func verdictBeforeClosing() async -> HandshakeVerdict? {
        if Task.isShuttingDownGracefully {
            logLine(.notice, "publish", "nbus publish: stopping on signal; closing (up to \(command.closeTimeout) s)")
        }
        var verdict: HandshakeVerdict?
        let sofar = bus.stats
        if command.noWait && !Task.isShuttingDownGracefully && sofar.sent == 0 && sofar.connectedEndpoints == 0
            && command.endpoints.bind.isEmpty
        {
            // An ipc socket file that is not there: nothing to wait for, nothing answered.
            verdict =
                command.connectsToSomethingThere
                ? await HandshakeVerdict.of(bus, connections: 1, within: min(SecondsOption.duration(command.closeTimeout), Self.refusalGrace))
                : .nothingThere
        }
        logLine(.debug, "publish", "nbus publish: posted all; closing (up to \(command.closeTimeout) s)")
        return verdict
    }
}
