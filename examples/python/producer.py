#!/usr/bin/env python3
"""Publish NBP/1 notifications from Python (pyzmq + protocol/python/nbp.py).

    python3 examples/python/producer.py orders.created '{"id":{n}}' --count 10 \\
        --header tenant=acme --content-type json                 # to `nbus broker`'s frontend
    python3 examples/python/producer.py orders.created hi --bind ipc:///tmp/orders.sock

The socket is an XPUB (a PUB that also reports subscriptions), so before sending
the producer waits, up to --timeout seconds, until a subscription that covers
NAME has reached it: a subscription message (first byte 1) whose topic is a
prefix of NAME + 0x00 (NBP-1 section 5.1). That is what defeats ZeroMQ's slow
joiner without sleeping. --no-wait sends at once. Through a broker this works
too: the broker forwards subscriptions upstream.

Every notification gets this process's publisher id (random, nonzero, new at
every start) and the next sequence number for NAME, starting at 1 (NBP-1
section 8). Sends are lossless back-pressure (ZMQ_XPUB_NODROP): a full
subscriber queue makes the producer wait (up to --timeout) instead of dropping.

--trace sends each notification in an OpenTelemetry producer span (opentelemetry-sdk),
whose context the SDK's propagator writes into the headers: W3C Trace Context's
`traceparent` (and `tracestate` when the context has one), NBP-1 section 2.2.1. A
NotificationBus subscriber with a tracer continues that trace. For each notification
it prints `trace TRACE_ID SPAN_ID` (hex) on stdout.

Exit status: 0 sent, 2 no subscriber in time or bad arguments, 1 send failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "protocol", "python"))

import nbp  # noqa: E402

try:
    import zmq
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("producer.py: pyzmq is missing: python3 -m pip install pyzmq "
             "(or on Debian: apt-get install python3-zmq, then use /usr/bin/python3)")

DEFAULT_FRONTEND = "tcp://127.0.0.1:5550"  # `nbus broker`'s default frontend
CONTENT_TYPES = {"unspecified": 0, "text": 1, "json": 2, "cbor": 3, "msgpack": 4, "protobuf": 5}


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="producer.py", description="Publish NBP/1 notifications to a broker frontend or a direct endpoint.")
    p.add_argument("name", help="notification name, e.g. orders.created")
    p.add_argument("payload", nargs="?", default="", help="payload text; {n} becomes the notification number (1-based)")
    p.add_argument("-c", "--count", type=int, default=1, help="how many notifications (default 1)")
    p.add_argument("--header", action="append", default=[], metavar="KEY=VALUE", help="a header; repeatable, order kept")
    p.add_argument("--content-type", default="unspecified",
                   help="unspecified, text, json, cbor, msgpack, protobuf, or a code 0-255")
    p.add_argument("--payload-hex", metavar="HEX", help="binary payload given as hex (instead of PAYLOAD)")
    p.add_argument("--connect", action="append", default=[], metavar="ENDPOINT",
                   help=f"connect to ENDPOINT, repeatable (default {DEFAULT_FRONTEND}, the broker frontend)")
    p.add_argument("--bind", action="append", default=[], metavar="ENDPOINT",
                   help="bind ENDPOINT, repeatable (direct topology: subscribers connect here)")
    p.add_argument("--no-wait", action="store_true", help="send at once, without waiting for a subscription")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for a subscriber / a full queue (default 10)")
    p.add_argument("--rate", type=float, help="notifications per second (default: as fast as possible)")
    p.add_argument("--print-frames", action="store_true", help="print every frame sent, as hex, one per line on stdout")
    p.add_argument("--trace", action="store_true",
                   help="send each in an OpenTelemetry span, its context in traceparent/tracestate (needs opentelemetry-sdk)")
    a = p.parse_args(argv)
    try:
        nbp.validate_name(a.name)
    except ValueError as e:
        p.error(str(e))
    if a.name.split(".")[0] == "_nbus":
        p.error("names whose first token is _nbus are reserved for the bus (NBP-1 section 15)")
    if a.count < 1:
        p.error("--count must be at least 1")
    if a.rate is not None and a.rate <= 0:
        p.error("--rate must be positive")
    if a.timeout <= 0:
        p.error("--timeout must be positive")
    headers = []
    for h in a.header:
        key, sep, value = h.partition("=")
        if not sep or not key:
            p.error(f"--header takes KEY=VALUE, got {h!r}")
        headers.append((key, value))
    a.headers = headers
    if a.content_type in CONTENT_TYPES:
        a.content_code = CONTENT_TYPES[a.content_type]
    elif a.content_type.isdigit() and int(a.content_type) <= 255:
        a.content_code = int(a.content_type)
    else:
        p.error(f"unknown --content-type {a.content_type!r}")
    if a.payload_hex is not None:
        try:
            a.binary = bytes.fromhex(a.payload_hex)
        except ValueError:
            p.error("--payload-hex is not hex")
    else:
        a.binary = None
    if not a.connect and not a.bind:
        a.connect = [DEFAULT_FRONTEND]
    return a


def wait_for_subscriber(sock, name: str, timeout: float) -> bool:
    """Read subscription messages from the XPUB until one covers ``name``.

    A subscription message is 0x01 (subscribe) or 0x00 (unsubscribe) followed by
    the topic, a byte prefix of the frames it selects. NotificationBus control
    subscriptions start with 0x00 (NBP-1 section 15) and never match a name.
    """
    frame_start = name.encode("utf-8") + b"\x00"
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not sock.poll(int(left * 1000) + 1, zmq.POLLIN):
            return False
        msg = sock.recv()
        if msg[:1] == b"\x01" and frame_start.startswith(msg[1:]):
            return True


class Tracing:
    """OpenTelemetry's SDK and its W3C propagator, for --trace."""

    def __init__(self, name: str):
        try:
            from opentelemetry import propagate, trace
            from opentelemetry.sdk.trace import TracerProvider
        except ImportError:
            sys.exit("producer.py: --trace needs opentelemetry-sdk: python3 -m pip install opentelemetry-sdk")
        trace.set_tracer_provider(TracerProvider())
        self.trace = trace
        self.propagate = propagate
        self.tracer = trace.get_tracer("nbp-producer")
        self.name = name

    def span(self):
        """A producer span named and attributed by OpenTelemetry's messaging conventions."""
        return self.tracer.start_as_current_span(
            "send " + self.name, kind=self.trace.SpanKind.PRODUCER,
            attributes={"messaging.system": "notificationbus", "messaging.destination.name": self.name,
                        "messaging.operation.type": "send"})

    def headers(self, headers):
        """`headers` and what the propagator writes for the current span (traceparent, tracestate)."""
        carrier = {}
        self.propagate.inject(carrier)
        return list(headers) + [(k, v) for k, v in carrier.items() if k not in dict(headers)]


def main(argv=None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    tracing = Tracing(a.name) if a.trace else None
    ctx = zmq.Context()
    sock = ctx.socket(zmq.XPUB)
    sock.setsockopt(zmq.XPUB_NODROP, 1)          # full queue: wait, do not drop silently
    sock.setsockopt(zmq.SNDTIMEO, int(a.timeout * 1000))
    sock.setsockopt(zmq.LINGER, int(a.timeout * 1000))  # flush what is queued when closing
    # A vanished peer host is noticed by TCP keepalive, never by ZMQ_HEARTBEAT_IVL: a receiver
    # holding its input back (a full consumer) aborts in libzmq 4.3 if it answers a PING from a
    # peer that just left (NBP-1 section 11, step 8).
    for option, value in ((zmq.TCP_KEEPALIVE, 1), (zmq.TCP_KEEPALIVE_IDLE, 5),
                          (zmq.TCP_KEEPALIVE_INTVL, 5), (zmq.TCP_KEEPALIVE_CNT, 3)):
        sock.setsockopt(option, value)
    try:
        for endpoint in a.bind:
            sock.bind(endpoint)
        for endpoint in a.connect:
            sock.connect(endpoint)
    except zmq.ZMQError as e:
        print(f"producer.py: {e}", file=sys.stderr)
        sock.close(0)
        ctx.term()
        return 2

    state = nbp.PublisherState()                 # new random publisher id at every start
    status = 0
    sent = 0
    try:
        if not a.no_wait and not wait_for_subscriber(sock, a.name, a.timeout):
            print(f"producer.py: no subscriber for {a.name} reached this producer within {a.timeout} s "
                  "(is the broker or subscriber running? --no-wait sends anyway)", file=sys.stderr)
            return 2
        start = time.monotonic()
        for number in range(1, a.count + 1):
            if a.rate:
                delay = start + (number - 1) / a.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            payload = a.binary if a.binary is not None else a.payload.replace("{n}", str(number)).encode("utf-8")
            span = tracing.span() if tracing else contextlib.nullcontext()
            with span as current:
                headers = tracing.headers(a.headers) if tracing else a.headers
                try:
                    frame = state.encode(a.name, payload, headers, content_type=a.content_code)
                except (ValueError, TypeError) as e:
                    print(f"producer.py: cannot encode: {e}", file=sys.stderr)
                    return 2
                try:
                    sock.send(frame)                 # exactly one frame, no SNDMORE
                except zmq.Again:
                    print(f"producer.py: subscriber queue still full after {a.timeout} s; stopped at {number}",
                          file=sys.stderr)
                    status = 1
                    break
                if tracing:
                    context = current.get_span_context()
                    print(f"trace {context.trace_id:032x} {context.span_id:016x}", flush=True)
            sent += 1
            if a.print_frames:
                print(frame.hex(), flush=True)
    except KeyboardInterrupt:
        status = 130
    finally:
        sock.close()                             # lingers up to --timeout to deliver what is queued
        ctx.term()
    print(f"producer.py: sent {sent} notification(s) named {a.name} as publisher "
          f"{state.publisher_id:016x}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
