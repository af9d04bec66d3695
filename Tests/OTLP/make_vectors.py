#!/usr/bin/env python3
"""Prints the OTLP encoding vectors of Tests/OTLPTracingTests/OTLPEncodingTests.swift.

Each case is an ExportTraceServiceRequest built with the `opentelemetry-proto` package (Python
protobuf) and serialized by it; the Swift test builds the same request with OTLPTracing's
hand-written encoder and expects the same bytes. Run it after changing a case on either side:

    python3 Tests/OTLP/make_vectors.py
"""

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

TRACE = bytes(range(1, 17))
SPAN = bytes(range(0x11, 0x19))
PARENT = bytes(range(0x21, 0x29))
LINKED_TRACE = bytes(range(0xa1, 0xb1))
LINKED_SPAN = bytes(range(0xb1, 0xb9))
START = 1_700_000_000_123_456_789


def kv(key, value):
    if isinstance(value, bool):
        any_value = AnyValue(bool_value=value)
    elif isinstance(value, int):
        any_value = AnyValue(int_value=value)
    elif isinstance(value, float):
        any_value = AnyValue(double_value=value)
    elif isinstance(value, list):
        any_value = AnyValue(array_value=ArrayValue(values=[kv("", v).value for v in value]))
    else:
        any_value = AnyValue(string_value=value)
    return KeyValue(key=key, value=any_value)


def request(service, spans):
    message = ExportTraceServiceRequest()
    resource_spans = message.resource_spans.add()
    resource_spans.resource.attributes.append(kv("service.name", service))
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "nbus"
    scope_spans.scope.version = "0.2.0"
    scope_spans.spans.extend(spans)
    return message


def minimal():
    span = Span(trace_id=TRACE, span_id=SPAN, name="send orders.created", kind=Span.SPAN_KIND_PRODUCER,
                start_time_unix_nano=START, end_time_unix_nano=START + 1500, flags=0x101)
    span.attributes.extend([kv("messaging.message.body.size", 2), kv("messaging.system", "notificationbus")])
    return request("nbus-publish", [span])


def full():
    span = Span(trace_id=TRACE, span_id=SPAN, trace_state="vendor=1", parent_span_id=PARENT,
                name="receive orders.created", kind=Span.SPAN_KIND_CONSUMER,
                start_time_unix_nano=START, end_time_unix_nano=START + 2_000_000, flags=0x301)
    span.attributes.extend([
        kv("empty", ""), kv("flag", False), kv("negative", -7), kv("ratio", 1.5), kv("list", ["a", 1]),
        kv("text", "é€"),
    ])
    event = span.events.add()
    event.time_unix_nano = START + 1000
    event.name = "exception"
    event.attributes.extend([kv("exception.type", "E"), kv("exception.message", "boom")])
    link = span.links.add()
    link.trace_id = LINKED_TRACE
    link.span_id = LINKED_SPAN
    link.attributes.append(kv("why", "batch"))
    link.flags = 0x101
    span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message="boom"))
    return request("nbus-subscribe", [span])


def two():
    first = Span(trace_id=TRACE, span_id=SPAN, name="a", kind=Span.SPAN_KIND_INTERNAL,
                 start_time_unix_nano=1, end_time_unix_nano=2, flags=0x100)
    first.status.CopyFrom(Status(code=Status.STATUS_CODE_OK))
    second = Span(trace_id=TRACE, span_id=PARENT, parent_span_id=SPAN, name="b", kind=Span.SPAN_KIND_CLIENT,
                  start_time_unix_nano=3, end_time_unix_nano=3, flags=0x101)
    return request("s", [first, second])


if __name__ == "__main__":
    for name, build in [("minimal", minimal), ("full", full), ("two", two)]:
        print(f'        "{name}": "{build().SerializeToString().hex()}",')
