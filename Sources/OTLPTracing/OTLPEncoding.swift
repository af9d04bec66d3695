/// The protobuf wire format of OTLP's `ExportTraceServiceRequest`, written by hand for the
/// fields `OTLPSpanData` has (opentelemetry-proto's trace/v1, common/v1, resource/v1), so that
/// `nbus` exports without swift-protobuf. Fields are written in field-number order and scalar
/// fields at their default value are left out, as protobuf's own serializers do: the bytes equal
/// the Python `opentelemetry-proto` package's for the same request (OTLPEncodingTests' vectors).
public enum OTLPEncoding {
    /// One `ResourceSpans` (the resource: `service.name` and `resourceAttributes`) with one
    /// `ScopeSpans` (`scopeName`, `scopeVersion`) holding `spans`.
    public static func exportTraceServiceRequest(
        serviceName: String, resourceAttributes: [OTLPAttribute] = [], scopeName: String, scopeVersion: String,
        spans: [OTLPSpanData]
    ) -> [UInt8] {
        var request = ProtobufWriter()
        // ExportTraceServiceRequest.resource_spans = 1
        request.message(1) { resourceSpans in
            // ResourceSpans.resource = 1
            resourceSpans.message(1) { resource in
                // Resource.attributes = 1
                for attribute in [OTLPAttribute("service.name", .string(serviceName))] + resourceAttributes {
                    resource.message(1) { $0.keyValue(attribute) }
                }
            }
            // ResourceSpans.scope_spans = 2
            resourceSpans.message(2) { scopeSpans in
                // ScopeSpans.scope = 1: InstrumentationScope name = 1, version = 2
                scopeSpans.message(1) { scope in
                    scope.string(1, scopeName)
                    scope.string(2, scopeVersion)
                }
                // ScopeSpans.spans = 2
                for span in spans { scopeSpans.message(2) { $0.span(span) } }
            }
        }
        return request.bytes
    }
}

/// Protobuf's wire format: varints, fixed-width numbers and length-delimited fields.
struct ProtobufWriter {
    private(set) var bytes: [UInt8] = []

    enum WireType: UInt64 {
        case varint = 0, fixed64 = 1, lengthDelimited = 2, fixed32 = 5
    }

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func tag(_ field: UInt64, _ type: WireType) {
        varint(field << 3 | type.rawValue)
    }

    /// A varint field; left out at 0 (proto3's default) unless `always` (a oneof member).
    mutating func uint64(_ field: UInt64, _ value: UInt64, always: Bool = false) {
        guard value != 0 || always else { return }
        tag(field, .varint)
        varint(value)
    }

    mutating func fixed64(_ field: UInt64, _ value: UInt64, always: Bool = false) {
        guard value != 0 || always else { return }
        tag(field, .fixed64)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func fixed32(_ field: UInt64, _ value: UInt32) {
        guard value != 0 else { return }
        tag(field, .fixed32)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func bytesField(_ field: UInt64, _ value: [UInt8], always: Bool = false) {
        guard !value.isEmpty || always else { return }
        tag(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ field: UInt64, _ value: String, always: Bool = false) {
        bytesField(field, Array(value.utf8), always: always)
    }

    /// A nested message, written whatever it holds (a message field that is set is sent even
    /// when empty).
    mutating func message(_ field: UInt64, _ body: (inout ProtobufWriter) -> Void) {
        var nested = ProtobufWriter()
        body(&nested)
        bytesField(field, nested.bytes, always: true)
    }

    // MARK: OTLP messages

    /// `KeyValue`: key = 1, value = 2 (an `AnyValue`).
    mutating func keyValue(_ attribute: OTLPAttribute) {
        string(1, attribute.key)
        message(2) { $0.anyValue(attribute.value) }
    }

    /// `AnyValue`, a oneof: string_value = 1, bool_value = 2, int_value = 3, double_value = 4,
    /// array_value = 5 (`ArrayValue`: values = 1). A oneof member is written even at its default.
    mutating func anyValue(_ value: OTLPAttribute.Value) {
        switch value {
        case .string(let text): string(1, text, always: true)
        case .bool(let flag): uint64(2, flag ? 1 : 0, always: true)
        case .int(let number): uint64(3, UInt64(bitPattern: number), always: true)
        case .double(let number): fixed64(4, number.bitPattern, always: true)
        case .array(let values):
            message(5) { array in
                for element in values { array.message(1) { $0.anyValue(element) } }
            }
        }
    }

    /// `Span`.
    mutating func span(_ span: OTLPSpanData) {
        bytesField(1, span.context.traceID.bytes)  // trace_id
        bytesField(2, OTLPHex.bigEndianBytes(span.context.spanID))  // span_id
        string(3, span.context.traceState)  // trace_state
        if let parent = span.parentSpanID { bytesField(4, OTLPHex.bigEndianBytes(parent)) }  // parent_span_id
        string(5, span.name)  // name
        uint64(6, span.kind.rawValue)  // kind
        fixed64(7, span.startTimeUnixNano)  // start_time_unix_nano
        fixed64(8, span.endTimeUnixNano)  // end_time_unix_nano
        for attribute in span.attributes { message(9) { $0.keyValue(attribute) } }  // attributes
        for event in span.events {  // events = 11: time_unix_nano = 1, name = 2, attributes = 3
            message(11) { encoded in
                encoded.fixed64(1, event.timeUnixNano)
                encoded.string(2, event.name)
                for attribute in event.attributes { encoded.message(3) { $0.keyValue(attribute) } }
            }
        }
        uint64(12, UInt64(span.droppedEvents))  // dropped_events_count
        for link in span.links {  // links = 13: trace_id 1, span_id 2, trace_state 3, attributes 4, flags 6
            message(13) { encoded in
                encoded.bytesField(1, link.context.traceID.bytes)
                encoded.bytesField(2, OTLPHex.bigEndianBytes(link.context.spanID))
                encoded.string(3, link.context.traceState)
                for attribute in link.attributes { encoded.message(4) { $0.keyValue(attribute) } }
                encoded.fixed32(6, Self.flags(link.context.traceFlags, remote: link.context.isRemote))
            }
        }
        uint64(14, UInt64(span.droppedLinks))  // dropped_links_count
        if let status = span.status {  // status = 15: message = 2, code = 3
            message(15) { encoded in
                encoded.string(2, status.message)
                encoded.uint64(3, status.code.rawValue)
            }
        }
        fixed32(16, Self.flags(span.context.traceFlags, remote: span.parentSpanID != nil && span.parentIsRemote))  // flags
    }

    /// OTLP's span and link flags: the W3C trace flags in bits 0-7; bit 8 says that bit 9 (the
    /// parent, or the linked span, is remote) is known.
    static func flags(_ traceFlags: UInt8, remote: Bool) -> UInt32 {
        UInt32(traceFlags) | 0x100 | (remote ? 0x200 : 0)
    }
}
