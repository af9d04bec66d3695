// swift_task_switch calls per element of a `for await` loop over an iterator shaped as the bus's
// (`next(isolation:)` with a synchronous fast path and an awaited refill), in the places a user
// writes the loop. Counted from outside with a uprobe (run.sh); 100 loops of 1,000 elements.
final class Buffer: @unchecked Sendable {  // one task uses it at a time
    var items: [Int] = Array(0..<1000)
    var index = 0
    @inline(never) nonisolated(nonsending) func refill() async -> Int? { nil }
}

struct Numbers: AsyncSequence {
    let buffer: Buffer
    struct AsyncIterator: AsyncIteratorProtocol {
        let buffer: Buffer
        @inlinable mutating func next() async -> Int? { await next(isolation: nil) }
        @inlinable @inline(__always) mutating func next(isolation actor: isolated (any Actor)?) async -> Int? {
            if buffer.index < buffer.items.count {
                buffer.index += 1
                return buffer.items[buffer.index - 1]
            }
            return await buffer.refill()
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: buffer) }
}

@inline(never) func namedFunction() async -> Int {
    var sum = 0
    for await number in Numbers(buffer: Buffer()) { sum &+= number }
    return sum
}

let place = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "task"
var total = 0
for _ in 0..<100 {
    switch place {
    case "named":  // for await in a named nonisolated async function
        total &+= await Task { await namedFunction() }.value
    case "by-hand":  // next(isolation: nil) called by hand in a Task closure
        let numbers = Numbers(buffer: Buffer())
        total &+= await Task { () -> Int in
            var sum = 0
            var iterator = numbers.makeAsyncIterator()
            while let number = await iterator.next(isolation: nil) { sum &+= number }
            return sum
        }.value
    default:  // for await in a Task closure, as the README writes it
        let numbers = Numbers(buffer: Buffer())
        total &+= await Task { () -> Int in
            var sum = 0
            for await number in numbers { sum &+= number }
            return sum
        }.value
    }
}
print(place, total)
