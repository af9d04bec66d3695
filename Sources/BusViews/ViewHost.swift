import NotificationBus

/// The main-actor host of a headless view tree on a bus.
///
/// It makes nodes when identities enter the tree, evaluates `body` (counted, at the configured
/// cost), runs appear/disappear, starts and cancels tasks, and holds `onReceive` and task-feed
/// subscriptions for as long as their nodes exist.
@MainActor
public final class ViewHost {
    /// The bus `onReceive` and task feeds subscribe on.
    public let bus: Bus
    /// The busy work of each `body` evaluation, unless the content sets its own.
    public var defaultBodyCost: Duration
    /// The root node, while mounted.
    public private(set) var root: ViewNode?
    /// Subscriptions that could not be made (bus closed, not a subscriber); the modifier then does nothing.
    public private(set) var subscriptionErrors: [BusError] = []

    private var dirty: [ViewNode] = []
    private var dirtyIDs: Set<ObjectIdentifier> = []
    private var batchDepth = 0
    private var retired: [(path: ViewPath, recorder: ViewMetricsRecorder)] = []

    /// A host on `bus`; every `body` costs `defaultBodyCost` of busy work unless its content says otherwise.
    public init(bus: Bus, defaultBodyCost: Duration = .zero) {
        self.bus = bus
        self.defaultBodyCost = defaultBodyCost
    }

    // MARK: Tree

    /// Makes `view` the visible root (replacing any previous root) and returns its node.
    @discardableResult
    public func mount(_ view: some View, id: ViewID = "root") -> ViewNode {
        unmount()
        return batch {
            let node = makeNode(Child(id) { view }, path: ViewPath([id]))
            node.shownByParent = true
            root = node
            appear(node)
            return node
        }
    }

    /// Removes the whole tree: everything disappears, tasks are cancelled, subscriptions released.
    public func unmount() {
        guard let node = root else { return }
        batch {
            destroy(node)
            root = nil
        }
    }

    /// The node at `path` (`"root/tabs/feed"`), if it exists.
    public func node(at path: String) -> ViewNode? {
        var components = path.split(separator: "/").map { ViewID(String($0)) }[...]
        guard let first = components.popFirst(), var node = root, node.path.components.first == first else { return nil }
        for id in components {
            guard let child = node.childNodes[id] else { return nil }
            node = child
        }
        return node
    }

    /// Every node now in the tree, parents before children.
    public var nodes: [ViewNode] {
        var result: [ViewNode] = []
        func visit(_ node: ViewNode) {
            result.append(node)
            node.children.forEach(visit)
        }
        if let root { visit(root) }
        return result
    }

    /// Metrics per path, for nodes in the tree and nodes destroyed (summed when a path was reused).
    public func metricsByPath() -> [ViewPath: ViewMetrics] {
        var byPath: [ViewPath: ViewMetrics] = [:]
        for (path, recorder) in retired { byPath[path, default: ViewMetrics()].add(recorder.snapshot) }
        for node in nodes { byPath[node.path, default: ViewMetrics()].add(node.metrics) }
        return byPath
    }

    /// All views' metrics summed.
    public func totalMetrics() -> ViewMetrics {
        metricsByPath().values.reduce(into: ViewMetrics()) { $0.add($1) }
    }

    // MARK: Rendering

    /// Marks `node` for re-evaluation; renders now unless a delivery or render is in progress.
    func invalidate(_ node: ViewNode) {
        if dirtyIDs.insert(ObjectIdentifier(node)).inserted { dirty.append(node) }
        if batchDepth == 0 { flush() }
    }

    private func batch<Result>(_ work: () -> Result) -> Result {
        batchDepth += 1
        let result = work()
        batchDepth -= 1
        if batchDepth == 0 { flush() }
        return result
    }

    private func flush() {
        batchDepth += 1
        while !dirty.isEmpty {
            let node = dirty.removeFirst()
            dirtyIDs.remove(ObjectIdentifier(node))
            if node.exists { render(node) }
        }
        batchDepth -= 1
    }

    private func makeNode(_ child: Child, path: ViewPath) -> ViewNode {
        let view = child.make()
        let node = ViewNode(path: path, view: view, host: self)
        for property in Mirror(reflecting: view).children {
            if let bound = property.value as? any NodeBoundProperty { bound.bind(to: node) }
        }
        render(node)
        return node
    }

    private func render(_ node: ViewNode) {
        let start = Timestamps.monotonicNanoseconds()
        let content = node.view.body
        BodyCost.spin(for: content.bodyCost ?? defaultBodyCost)
        let elapsed = Timestamps.monotonicNanoseconds() &- start
        node.recorder.update { metrics in
            metrics.bodyEvaluations += 1
            metrics.bodyNanoseconds += elapsed
            metrics.mainActorBusyNanoseconds += elapsed
        }
        reconcileModifiers(of: node, with: content.modifiers)
        reconcileChildren(of: node, with: content.layout)
    }

    // MARK: Modifiers

    private func reconcileModifiers(of node: ViewNode, with modifiers: [ViewModifier]) {
        let old = node.slots
        var slots: [ModifierSlot] = []
        for (index, modifier) in modifiers.enumerated() {
            if index < old.count, old[index].modifier.keepsSlot(of: modifier) {
                let slot = old[index]
                let previous = slot.task
                slot.modifier = modifier
                if let previous, let current = slot.task, current.idDiffers(from: previous), node.isVisible {
                    restartTask(slot, of: node)
                }
                slots.append(slot)
            } else {
                if index < old.count { tearDown(old[index], of: node) }
                let slot = install(modifier, on: node)
                if node.isVisible { startTask(slot, of: node) }
                slots.append(slot)
            }
        }
        for slot in old.dropFirst(modifiers.count) { tearDown(slot, of: node) }
        node.slots = slots
    }

    private func install(_ modifier: ViewModifier, on node: ViewNode) -> ModifierSlot {
        let slot = ModifierSlot(modifier)
        switch modifier {
        case .onReceive(let pattern, let buffering, let start, let typed, _):
            do {
                let deliver: @MainActor @Sendable (BusNotification) -> Void = { [weak self, weak slot, weak node] notification in
                    guard let self, let slot, let node else { return }
                    self.deliver(notification, through: slot, to: node)
                }
                // Typed: this bus's own posts come as values, decoded by nobody (issue 42, item 4).
                // `.retained`: the current values of the names first (issue 39).
                let retained = start == .retained
                slot.observation =
                    typed
                    ? try bus.addTypedObserver(forName: pattern, buffering: buffering, retained: retained) { @MainActor in deliver($0) }
                    : try bus.addObserver(forName: pattern, buffering: buffering, retained: retained) { @MainActor in deliver($0) }
            } catch {
                subscriptionErrors.append(error)
            }
        case .task(let task):
            if let request = task.feed {
                do {
                    slot.feed = try ViewFeedStorage(
                        bus: bus, pattern: request.pattern, replay: request.replay, start: request.start,
                        buffering: request.buffering, typed: request.typed, metrics: node.recorder)
                } catch {
                    subscriptionErrors.append(error)
                }
            }
        case .onAppear, .onDisappear:
            break
        case .unusable(let error):
            subscriptionErrors.append(error)
        }
        return slot
    }

    private func tearDown(_ slot: ModifierSlot, of node: ViewNode) {
        stopTask(slot, of: node)
        slot.observation?.cancel()
        slot.observation = nil
        slot.feed?.close()
        slot.feed = nil
    }

    /// `onReceive`: the action runs, then `body` is re-evaluated, state change or not.
    private func deliver(_ notification: BusNotification, through slot: ModifierSlot, to node: ViewNode) {
        guard node.exists, case .onReceive(_, _, _, let typed, let action) = slot.modifier else { return }
        // A typed action's clear of a retained value: no message, so nothing runs, and it is not
        // undecodable (a byte action gets the empty notification, as any subscription does).
        if typed && notification.clearsRetainedValue { return }
        batch {
            let updatesBefore = node.stateUpdateCount
            let start = Timestamps.monotonicNanoseconds()
            let taken = action(notification, bus.messageDecodeCounter)
            let elapsed = Timestamps.monotonicNanoseconds() &- start
            guard taken else {
                // A typed action's notification that did not decode: counted, no re-render.
                node.recorder.update { metrics in
                    metrics.undecodable += 1
                    metrics.mainActorBusyNanoseconds += elapsed
                }
                return
            }
            let now = Timestamps.wallClockNanoseconds()
            let changedState = node.stateUpdateCount != updatesBefore
            node.recorder.update { metrics in
                metrics.messagesHandled += 1
                if !changedState { metrics.messagesFiltered += 1 }
                metrics.handlingNanoseconds += elapsed
                metrics.mainActorBusyNanoseconds += elapsed
                metrics.recordLatency(now >= notification.timestamp ? now - notification.timestamp : 0)
            }
            invalidate(node)
        }
    }

    // MARK: Tasks

    private func startTask(_ slot: ModifierSlot, of node: ViewNode) {
        guard let task = slot.task, slot.running == nil else { return }
        switch task.operation {
        case .plain(let action):
            slot.running = Task(priority: task.priority, operation: action)
        case .feed(let action):
            guard let storage = slot.feed else { return }
            let feed = ViewFeed(storage: storage, session: storage.activate())
            slot.running = launch(action, with: feed, priority: task.priority)
        }
        node.recorder.update { $0.tasksStarted += 1 }
    }

    private func stopTask(_ slot: ModifierSlot, of node: ViewNode) {
        slot.feed?.deactivate()
        guard let running = slot.running else { return }
        running.cancel()
        slot.running = nil
        node.recorder.update { $0.tasksCancelled += 1 }
    }

    /// `task(id:)` saw a new id while visible: cancel the run and start a new one.
    private func restartTask(_ slot: ModifierSlot, of node: ViewNode) {
        guard let task = slot.task else { return }
        if let running = slot.running {
            running.cancel()
            slot.running = nil
            node.recorder.update { $0.tasksCancelled += 1 }
        }
        switch task.operation {
        case .plain(let action):
            slot.running = Task(priority: task.priority, operation: action)
        case .feed(let action):
            guard let storage = slot.feed else { return }
            let feed = ViewFeed(storage: storage, session: storage.restart())
            slot.running = launch(action, with: feed, priority: task.priority)
        }
        node.recorder.update { $0.tasksStarted += 1 }
    }

    // MARK: Lifecycle

    private func appear(_ node: ViewNode) {
        guard node.exists, !node.isVisible else { return }
        node.isVisible = true
        node.recorder.update { $0.appearances += 1 }
        for slot in node.slots {
            if case .onAppear(let action) = slot.modifier { measure(node, action) }
        }
        for slot in node.slots { startTask(slot, of: node) }
        for child in node.children where child.shownByParent { appear(child) }
    }

    private func disappear(_ node: ViewNode) {
        guard node.isVisible else { return }
        for child in node.children where child.isVisible { disappear(child) }
        for slot in node.slots {
            if case .onDisappear(let action) = slot.modifier { measure(node, action) }
        }
        for slot in node.slots { stopTask(slot, of: node) }
        node.isVisible = false
        node.recorder.update { $0.disappearances += 1 }
    }

    private func destroy(_ node: ViewNode) {
        guard node.exists else { return }
        disappear(node)
        for child in node.children { destroy(child) }
        for slot in node.slots { tearDown(slot, of: node) }
        node.slots = []
        node.childNodes = [:]
        node.childOrder = []
        node.exists = false
        retired.append((node.path, node.recorder))
    }

    private func measure(_ node: ViewNode, _ action: @MainActor () -> Void) {
        let start = Timestamps.monotonicNanoseconds()
        action()
        let elapsed = Timestamps.monotonicNanoseconds() &- start
        node.recorder.update { $0.mainActorBusyNanoseconds += elapsed }
    }

    // MARK: Children

    private func reconcileChildren(of node: ViewNode, with layout: ViewContent.Layout) {
        var wanted: [(child: Child, shown: Bool)] = []
        switch layout {
        case .stack(let children):
            wanted = children.map { ($0, true) }
        case .tabs(let selection, let tabs):
            wanted = tabs.map { ($0, $0.id == selection) }
        case .lazyList(let rowCount, let window, let row):
            let inWindow = window.clamped(to: 0..<rowCount)
            node.madeRows = node.madeRows.filter { $0 < rowCount }.union(inWindow)
            wanted = node.madeRows.sorted().map { (row($0), inWindow.contains($0)) }
        }
        var seen: Set<ViewID> = []
        wanted = wanted.filter { seen.insert($0.child.id).inserted }
        for id in node.childOrder where !seen.contains(id) {
            if let child = node.childNodes[id] { destroy(child) }
            node.childNodes[id] = nil
        }
        for (child, shown) in wanted {
            if let existing = node.childNodes[child.id] {
                guard existing.shownByParent != shown else { continue }
                existing.shownByParent = shown
                if node.isVisible {
                    if shown { appear(existing) } else { disappear(existing) }
                }
            } else {
                let made = makeNode(child, path: node.path.appending(child.id))
                made.shownByParent = shown
                node.childNodes[child.id] = made
                if node.isVisible && shown { appear(made) }
            }
        }
        node.childOrder = wanted.map(\.child.id)
    }
}

/// Starts a feed task off any actor, so the closure's own isolation decides where it runs. When
/// the closure returns while its view is still visible (its loop ended early), the feed stops
/// queueing for it.
private func launch(
    _ action: @escaping @isolated(any) @Sendable (ViewFeed) async -> Void, with feed: ViewFeed, priority: TaskPriority
) -> Task<Void, Never> {
    Task(priority: priority) {
        await ViewFeedStorage.$running.withValue(ObjectIdentifier(feed.storage)) {
            await action(feed)
        }
        feed.storage.runFinished(session: feed.session)
    }
}
