import Dispatch
import ZeroMQ

/// The event loop's last steps, once the bus is closing: flush, send the end of stream and wait
/// for its acknowledgements, end every subscription and wait, close the sockets.
extension BusEventLoop {
    /// Flushes what it can within the close timeout, then ends every subscription and waiter
    /// and closes the sockets and the context; the lifecycle becomes `closed`.
    func shutDown() {
        // Normally `closing` already; a terminated context ends the loop while `open`.
        core.requestClose()
        // Posts are refused from now on; the XPUB is the loop's alone until it closes it.
        core.closePublisherSocket()
        var queued = OutboundPosts()
        var queuedValues = LocalValues()
        var jobs: [UnownedJob] = []
        core.changeInterest { $0.closed = true }
        let leftovers = core.mailbox.withLock { box in
            swap(&box.jobs, &jobs)
            swap(&box.outbound, &queued)
            swap(&box.localValues, &queuedValues)
            defer {
                box.commands.removeAll()
                box.spaceWaiters.removeAll()
            }
            return (box.commands, box.spaceWaiters)
        }
        for waiter in leftovers.1 { waiter.resume() }
        // Tasks still on the bus's executor go on elsewhere: nothing here runs jobs any more.
        let executor = self.executor.asUnownedTaskExecutor()
        for job in jobs { DispatchQueue.global().async { job.runSynchronously(on: executor) } }
        for command in leftovers.0 {
            switch command {
            case .addWaiter(let request, let continuation):
                continuations[request.id] = continuation
                perform([WaiterStateMachine.Action.resume(id: request.id, error: .closed)])
            case .addSubscription(let storage): storage.finishFromBus()
            case .removeSubscription, .cancelWaiter, .resumeReading: break
            }
        }
        let closeTimeout = UInt64(configuration.closeTimeoutInMilliseconds) * 1_000_000
        let deadline = Timestamps.monotonicNanoseconds() + closeTimeout
        // Several brokers: one that takes nothing for a quarter of the close timeout is given up
        // on (when the others bring its subscribers), so the rest of it goes through them.
        posts.shortenPathStallLimit(to: closeTimeout / 4)
        flushPending(until: deadline)
        // Then what was still in the mailbox, in order after what the loop had taken.
        // Not merged: what was still in the mailbox at close goes as it was posted.
        if posts.takeLeftovers(&queued, localValues: &queuedValues, allocationFailed: { record($0, "allocating a frame") }) {
            flushPending(until: deadline)
        }
        posts.dropUnsent(with: &queued)
        sendEndOfStream(sequences: core.mailbox.withLock { $0.sequences.all }, deadline: deadline)
        // Let ZeroMQ deliver what it already holds, within the same timeout.
        do {
            try sockets.lingerOnClose(
                milliseconds: configuration.closeTimeoutInMilliseconds, givenUp: posts.parkedPaths,
                givenUpMilliseconds: Int32(clamping: Timestamps.milliseconds(until: deadline)))
        } catch {
            record(error, "setting linger")
        }
        receiver.finishAll()
        perform(waiters.close())
        publishStats()
        log.flush(now: Timestamps.monotonicNanoseconds())
        sockets.close()
        sockets.context.terminate()
        core.markClosed()
    }

    /// Sends the pending posts until none is left or `deadline` passes, waiting in blocking sends when
    /// ZeroMQ refuses (back-pressure) rather than polling (see `waitForRoomToSend`).
    private func flushPending(until deadline: UInt64) {
        guard let publisher = sockets.publisher else { return }
        while posts.hasUnsent && Timestamps.monotonicNanoseconds() < deadline && !contextTerminated {
            if sockets.loopback && receiver.readingPaused {
                // A full local subscription: wait (briefly) for its consumer, then look again.
                var poller = Poller()
                poller.register(fileDescriptor: core.wake.fileDescriptor)
                do { try poller.poll(timeoutMilliseconds: 1) } catch { record(error, "zmq_poll") }
                core.wake.drain()
                receiver.resumeReadingUnlessFull()
                continue
            }
            // A kept budget goes on while closing: a stopped subscriber is disconnected, not
            // waited for until the close timeout.
            disconnectSubscribersPastBudget()
            if !sendPending() {
                if posts.hasSeveralPaths {
                    // Several brokers: each path is retried after a short poll (no blocking send
                    // on one socket while another could take its frames).
                    park(timeout: 1, includePublisher: false)
                    continue
                }
                // Held back for a subscriber past its budget: nothing goes until the next look
                // (2 ms); the close timeout bounds the wait as it bounds a full queue's.
                if holdsForSubscriberBudget {
                    parkWhileHoldingForBudget()
                    continue
                }
                // With a kept budget, short waits: the policy decides between them (its patience).
                var wait = Timestamps.milliseconds(until: deadline)
                if budgetSide != nil { wait = min(wait, 10) }
                do {
                    try publisher.set(.sendTimeout, .milliseconds(Int32(clamping: wait)))
                } catch {
                    record(error, "setting the send timeout")
                    return
                }
                if send(on: publisher, mode: .blocking) > 0 { framesAccepted() }
            }
        }
    }

    /// Sends the last sequence per name, then waits, until `deadline`, for every NotificationBus
    /// subscriber to acknowledge it, re-sending every 20 ms meanwhile. Re-sending, not
    /// `XPUB_NODROP`: libzmq still drops a message for a pipe that was full a moment ago. Staying
    /// connected matters too: libzmq discards what is queued at a subscriber when its publisher
    /// disconnects. Receivers treat repeats as no-ops.
    ///
    /// A connection lost meanwhile, or earlier while posting (the broker died or restarted),
    /// unsubscribes every subscriber at once: what they were sent died with the broker.
    /// Those subscribers (`PublisherStateMachine.vanished`) are waited for until `deadline` too,
    /// so that when they come back through the next connection the repeated record tells them
    /// what they lost; otherwise their loss would be silent. One that never comes back is counted
    /// in `endOfStreamUnacknowledged`.
    private func sendEndOfStream(sequences: [NotificationName: UInt64], deadline: UInt64) {
        guard !sockets.publishers.isEmpty else { return }
        let frames = publisherSide.endOfStreamFrames(sequences: sequences, wallClock: Timestamps.wallClockNanoseconds())
        guard !frames.isEmpty else { return }
        // A lost connection read now still makes its subscribers `vanished`.
        _ = readHandshakeFailures()
        // With a kept budget the XPUB refuses a frame while any matching queue is full: the end of
        // stream goes past full queues instead (it is re-sent every 20 ms until acknowledged), so
        // one stopped subscriber never keeps it from the others.
        if budgetSide != nil, let publisher = sockets.publisher {
            do { try SubscriberBudgetSide.refusesAtFullQueues(publisher, false) } catch { record(error, "switching ZMQ_XPUB_NODROP") }
        }
        // Unsubscriptions may be read a moment before the monitor's disconnect that explains
        // them: a departure in the last 100 ms is given that moment before the close gives up.
        func waiting() -> Bool {
            !publisherSide.expectedAtClose.isEmpty
                || publisherSide.hasUnexplainedDepartures(since: Timestamps.wallClockNanoseconds() &- 100_000_000)
        }
        repeat {
            for frame in frames {
                // A full pipe refuses it now; the next round re-sends. Every broker gets it.
                for publisher in sockets.publishers {
                    do { _ = try publisher.sendIfReady(frame) } catch { record(error, "sending the end of stream") }
                }
            }
            let resendAt = min(deadline, Timestamps.monotonicNanoseconds() + 20_000_000)
            while waiting(), Timestamps.monotonicNanoseconds() < resendAt, !contextTerminated {
                var poller = Poller()
                for publisher in sockets.publishers { poller.register(publisher) }
                for monitor in sockets.handshakeMonitors where monitor.isPublisher { poller.register(monitor.reader) }
                do { try poller.poll(timeoutMilliseconds: Timestamps.milliseconds(until: resendAt)) } catch { record(error, "zmq_poll") }
                _ = readSubscriptions()
                _ = readHandshakeFailures()
            }
        } while waiting() && Timestamps.monotonicNanoseconds() < deadline && !contextTerminated
        stats.endOfStreamUnacknowledged = UInt64(publisherSide.expectedAtClose.count)
    }
}
