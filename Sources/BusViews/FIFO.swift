/// A first-in first-out queue over an array with a moving head: O(1) amortised push and pop.
struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    init() {}

    init(_ elements: some Sequence<Element>) { storage = Array(elements) }

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }

    /// The queued elements, oldest first.
    var elements: ArraySlice<Element> { storage[head...] }

    mutating func append(_ element: Element) { storage.append(element) }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head >= 1024 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
