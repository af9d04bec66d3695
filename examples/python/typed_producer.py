#!/usr/bin/env python3
"""Post typed messages from Python: an OrderCreated as a Swift observer declares it.

    python3 examples/python/typed_producer.py --count 3            # to `nbus broker`'s frontend
    python3 examples/python/typed_producer.py --connect tcp://127.0.0.1:5550 --with-bad

The Swift side (docs/typed-messages.md):

    struct OrderCreated: BusAsyncMessage {
        static let busName: NotificationName = "orders.created"
        var id: Int
        var total: Double
    }

A typed message on the wire is an ordinary NBP/1 notification: the name is the
type's busName, the content type is json (2), the payload is the value as a
JSON object, one key per stored property. No type header: the name is the type.
Keys the Swift type does not know are ignored; a missing or mistyped field makes
the notification undecodable there (counted, never a crash nor a silent drop).
--with-bad sends one malformed and one mistyped body between the good ones, to
see them counted (`stats.undecodable`) while the good ones keep flowing.

Waits, up to --timeout seconds, for a subscription covering the name (as
producer.py does), then sends. Exit status: 0 sent, 2 no subscriber in time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "protocol", "python"))
sys.path.insert(0, HERE)

import nbp  # noqa: E402

try:
    import zmq
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("typed_producer.py: pyzmq is missing: python3 -m pip install pyzmq")

from producer import wait_for_subscriber  # noqa: E402

NAME = "orders.created"
JSON = 2


def order(number: int) -> bytes:
    """OrderCreated(id: number, total: number * 1.5) as Swift's JSONDecoder reads it."""
    return json.dumps({"id": number, "total": number * 1.5, "source": "python"}).encode("utf-8")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="typed_producer.py", description="Post OrderCreated messages as JSON.")
    p.add_argument("--connect", default="tcp://127.0.0.1:5550", help="endpoint to connect (a broker's frontend)")
    p.add_argument("--count", type=int, default=3, help="good messages to send (default 3)")
    p.add_argument("--with-bad", action="store_true", help="also send a malformed and a mistyped body")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for a subscriber (default 10)")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)

    ctx = zmq.Context()
    sock = ctx.socket(zmq.XPUB)
    sock.setsockopt(zmq.XPUB_NODROP, 1)
    sock.setsockopt(zmq.SNDTIMEO, int(a.timeout * 1000))
    sock.setsockopt(zmq.LINGER, int(a.timeout * 1000))
    sock.connect(a.connect)
    state = nbp.PublisherState()
    try:
        if not wait_for_subscriber(sock, NAME, a.timeout):
            print(f"typed_producer.py: no subscriber for {NAME} within {a.timeout} s", file=sys.stderr)
            return 2
        bodies = [order(n) for n in range(1, a.count + 1)]
        if a.with_bad:
            bodies.insert(1, b'{"id": 2, "total": ')                       # malformed JSON
            bodies.insert(2, b'{"id": "three", "total": 4.5}')             # id is not an integer
        for body in bodies:
            sock.send(state.encode(NAME, body, [], content_type=JSON))
        print(f"typed_producer.py: sent {len(bodies)} notification(s) named {NAME}", file=sys.stderr)
    finally:
        sock.close()
        ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
