#!/usr/bin/env python3
"""A minimal OTLP/HTTP trace receiver: prints every span it is sent as one JSON line.

    python3 examples/python/otlp_receiver.py --port 4318
    nbus subscribe 'orders.>' --otlp-endpoint http://127.0.0.1:4318

It answers POST /v1/traces with protobuf bodies (Content-Type application/x-protobuf, OTLP/HTTP's
default), each parsed with the `opentelemetry-proto` package
(`ExportTraceServiceRequest.FromString`): python3 -m pip install opentelemetry-proto. It first
prints `listening PORT` (with --port 0, the port the system chose), then for each span:

    {"service": "nbus-subscribe", "scope": "nbus", "traceId": "...", "spanId": "...",
     "parentSpanId": "...", "name": "receive orders.created", "kind": "CONSUMER", ...}

A body that does not parse is answered 400 and printed as {"error": ...}. For trying `nbus
--otlp-endpoint` out and for the tests (OTLPExportTests); a real deployment sends to an
OpenTelemetry Collector, Jaeger or any other OTLP receiver.
"""

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest, ExportTraceServiceResponse)
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
except ImportError:
    sys.exit("otlp_receiver.py needs opentelemetry-proto: python3 -m pip install opentelemetry-proto")


# Requests are handled on threads of their own (several exporters at once): one line at a time.
_output = threading.Lock()


def emit(record):
    line = json.dumps(record) + "\n"
    with _output:
        sys.stdout.write(line)
        sys.stdout.flush()


def any_value(value):
    which = value.WhichOneof("value")
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, which) if which else None


def attributes(key_values):
    return {kv.key: any_value(kv.value) for kv in key_values}


def span_json(service, scope, span):
    return {
        "service": service,
        "scope": scope.name,
        "scopeVersion": scope.version,
        "traceId": span.trace_id.hex(),
        "spanId": span.span_id.hex(),
        "parentSpanId": span.parent_span_id.hex(),
        "traceState": span.trace_state,
        "name": span.name,
        "kind": Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
        "startTimeUnixNano": span.start_time_unix_nano,
        "endTimeUnixNano": span.end_time_unix_nano,
        "attributes": attributes(span.attributes),
        "events": [{"name": e.name, "timeUnixNano": e.time_unix_nano, "attributes": attributes(e.attributes)}
                   for e in span.events],
        "links": [{"traceId": l.trace_id.hex(), "spanId": l.span_id.hex()} for l in span.links],
        "status": {"code": Status.StatusCode.Name(span.status.code).removeprefix("STATUS_CODE_"),
                   "message": span.status.message},
        "flags": span.flags,
    }


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path != "/v1/traces":
            self.answer(404, b"")
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        content_type = self.headers.get("Content-Type", "")
        try:
            if content_type != "application/x-protobuf":
                raise ValueError(f"Content-Type {content_type!r}, not application/x-protobuf")
            request = ExportTraceServiceRequest.FromString(body)
        except (DecodeError, ValueError) as error:
            emit({"error": str(error)})
            self.answer(400, b"")
            return
        for resource_spans in request.resource_spans:
            service = attributes(resource_spans.resource.attributes).get("service.name")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    emit(span_json(service, scope_spans.scope, span))
        self.answer(200, ExportTraceServiceResponse().SerializeToString())

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


def main():
    p = argparse.ArgumentParser(description="Print the spans OTLP/HTTP exporters send, one JSON line each.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=4318, help="0: any free port (printed)")
    a = p.parse_args()
    server = ThreadingHTTPServer((a.host, a.port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
