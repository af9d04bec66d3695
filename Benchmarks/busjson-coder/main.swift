import FoundationEssentials
import Glibc
import BJ

struct BenchOrder: Codable, Equatable {
    var id: Int
    var total: Double
    var customer: String
    var items: [String]
    var express: Bool
    init(id: Int) { self.id = id; total = 9.5; customer = "Acme Corporation"; items = ["widget", "gadget"]; express = id % 2 == 0 }
}
func handBuiltJSON(id: Int) -> [UInt8] {
    let express = id % 2 == 0 ? "true" : "false"
    return Array("{\"id\":\(id),\"total\":9.5,\"customer\":\"Acme Corporation\",\"items\":[\"widget\",\"gadget\"],\"express\":\(express)}".utf8)
}
#if BUSJSON_FIELDS
// The Codable-free path (BusJSON.writeObject / readObject), as BenchOrder's conformance uses it.
func fastEncode(_ m: BenchOrder) throws -> [UInt8] {
    try BusJSON.writeObject { object in
        object.field("id", m.id)
        try object.field("total", m.total)
        object.field("customer", m.customer)
        object.field("items", m.items)
        object.field("express", m.express)
    }
}
func fastDecode(_ payload: [UInt8]) throws -> BenchOrder {
    let object = try BusJSON.readObject(payload)
    var order = BenchOrder(id: try object.field("id"))
    order.total = try object.field("total")
    order.customer = try object.field("customer")
    order.items = try object.field("items")
    order.express = try object.field("express")
    return order
}
#endif
func now() -> Double { var t = timespec(); clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9 }
let n = 200_000
let payloads = (0..<1000).map { handBuiltJSON(id: 100000 + $0) }
for (i, p) in payloads.prefix(10).enumerated() { precondition(try! BusJSON.encode(BenchOrder(id: 100000 + i)) == p) }
#if BUSJSON_FIELDS
for (i, p) in payloads.prefix(10).enumerated() {
    precondition(try! fastEncode(BenchOrder(id: 100000 + i)) == p)
    precondition(try! fastDecode(p) == BenchOrder(id: 100000 + i))
}
#endif
if CommandLine.arguments.count > 1 {
    var total = 0
    let mode = CommandLine.arguments[1]
    for i in 0..<3_000_000 {
        if mode == "dec" { total &+= try! BusJSON.decode(BenchOrder.self, from: payloads[i % 1000]).id }
        else { total &+= try! BusJSON.encode(BenchOrder(id: 100000 + i)).count }
    }
    print(total)
    exit(0)
}
var best = (enc: 1e9, dec: 1e9, hand: 1e9, fastEnc: 1e9, fastDec: 1e9)
for _ in 0..<5 {
    var t = now(); var total = 0
    for i in 0..<n { total &+= try! BusJSON.encode(BenchOrder(id: 100000 + i)).count }
    best.enc = min(best.enc, (now() - t) / Double(n) * 1e9)
    t = now()
    for i in 0..<n { total &+= handBuiltJSON(id: 100000 + i).count }
    best.hand = min(best.hand, (now() - t) / Double(n) * 1e9)
    t = now()
    for i in 0..<n { total &+= try! BusJSON.decode(BenchOrder.self, from: payloads[i % 1000]).id }
    best.dec = min(best.dec, (now() - t) / Double(n) * 1e9)
    #if BUSJSON_FIELDS
    t = now()
    for i in 0..<n { total &+= try! fastEncode(BenchOrder(id: 100000 + i)).count }
    best.fastEnc = min(best.fastEnc, (now() - t) / Double(n) * 1e9)
    t = now()
    for i in 0..<n { total &+= try! fastDecode(payloads[i % 1000]).id }
    best.fastDec = min(best.fastDec, (now() - t) / Double(n) * 1e9)
    #endif
    if total == 42 { print(total) }
}
var line = "encode \(Int(best.enc)) ns  decode \(Int(best.dec)) ns  hand-built \(Int(best.hand)) ns"
#if BUSJSON_FIELDS
line += "  fields: encode \(Int(best.fastEnc)) ns  decode \(Int(best.fastDec)) ns"
#endif
print(line)
