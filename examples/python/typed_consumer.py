#!/usr/bin/env python3
"""Read typed messages a Swift program posts: OrderCreated as JSON, one line each.

    python3 examples/python/typed_consumer.py --count 3      # from `nbus broker`'s backend

Subscribes `orders.created` exactly (the ZeroMQ prefix "orders.created\\0", NBP-1
section 5.1), decodes each frame (a batch frame yields several notifications),
and prints "order ID TOTAL" for each body that is an OrderCreated: a JSON object
with an integer "id" (64 bits) and a finite number "total", content type json (2)
or unspecified (0), RFC 8259 JSON (no NaN or Infinity), as the Swift decoder has it. Anything else is counted and printed as "undecodable REASON", never fatal.
Prints "ready" once subscribed, and ends after --count orders (exit 0), or after
--timeout seconds without one (exit 1).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "protocol", "python"))

import nbp  # noqa: E402

try:
    import zmq
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("typed_consumer.py: pyzmq is missing: python3 -m pip install pyzmq")

NAME = "orders.created"


def _not_json(constant):
    # Python's json reads NaN, Infinity and -Infinity; RFC 8259 (and the Swift side) does not.
    raise ValueError(f"{constant} is not JSON")


def as_order(notification):
    """(id, total) of an OrderCreated body, or raises ValueError saying why not: what the Swift
    side's decoder refuses is refused here too (not RFC 8259 JSON, an id outside Int's 64 bits,
    a total that is not a finite Double)."""
    if notification.content_type not in (0, 2):
        raise ValueError(f"content type {notification.content_type}, not json")
    value = json.loads(bytes(notification.payload).decode("utf-8"), parse_constant=_not_json)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    number, total = value.get("id"), value.get("total")
    if not isinstance(number, int) or isinstance(number, bool):
        raise ValueError("id is not an integer")
    if not -(1 << 63) <= number < (1 << 63):
        raise ValueError("id does not fit a 64-bit Int")
    if not isinstance(total, (int, float)) or isinstance(total, bool):
        raise ValueError("total is not a number")
    if not math.isfinite(float(total)):
        raise ValueError("total does not fit a Double")
    return number, total


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="typed_consumer.py", description="Print OrderCreated messages.")
    p.add_argument("--connect", default="tcp://127.0.0.1:5551", help="endpoint to connect (a broker's backend)")
    p.add_argument("--count", type=int, default=1, help="orders to read before exiting (default 1)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each (default 30)")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)

    ctx = zmq.Context()
    sock = ctx.socket(zmq.SUB)
    sock.setsockopt(zmq.SUBSCRIBE, NAME.encode("utf-8") + b"\x00")
    sock.setsockopt(zmq.RCVTIMEO, int(a.timeout * 1000))
    sock.connect(a.connect)
    print("ready", flush=True)
    read = 0
    try:
        while read < a.count:
            try:
                frames = sock.recv_multipart()
            except zmq.Again:
                print(f"typed_consumer.py: no order within {a.timeout} s", file=sys.stderr)
                return 1
            try:
                notifications = nbp.decode_all(frames)
            except nbp.Rejected as e:
                print(f"undecodable frame: {e}", flush=True)
                continue
            for notification in notifications:
                try:
                    number, total = as_order(notification)
                except (ValueError, UnicodeDecodeError) as e:
                    print(f"undecodable {e}", flush=True)
                    continue
                print(f"order {number} {total}", flush=True)
                read += 1
    finally:
        sock.close(0)
        ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
