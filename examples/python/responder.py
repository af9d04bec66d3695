#!/usr/bin/env python3
"""Answer NotificationBus requests from Python (pyzmq + protocol/python/nbp.py).

    python3 examples/python/responder.py 'math.>'            # through `nbus broker`'s default ports
    nbus request math.upper hello                             # prints HELLO

A request is a notification with a ``reply-to`` header (NBP-1 section 16). For each
one matching PATTERN this posts one reply to the reply-to name: the request's payload
upper-cased (ASCII), or as it came with --echo, with header ``status: ok``. A request
whose payload is not UTF-8 is answered with ``status: error`` and the reason. Requests
without a valid reply-to get no reply.

It subscribes with a SUB on the broker's backend and posts with an XPUB on its
frontend, each reply with this process's publisher id and the reply name's own
sequence numbers (1 for a new reply name). Stops after --count requests, or on
SIGINT/SIGTERM. Prints "ready" on stdout once subscribed, then one line per reply.

Exit status: 0 done, 2 bad arguments or endpoint.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "protocol", "python"))

import nbp  # noqa: E402

try:
    import zmq
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("responder.py: pyzmq is missing: python3 -m pip install pyzmq "
             "(or on Debian: apt-get install python3-zmq, then use /usr/bin/python3)")

DEFAULT_FRONTEND = "tcp://127.0.0.1:5550"  # `nbus broker`'s defaults
DEFAULT_BACKEND = "tcp://127.0.0.1:5551"


def answer(request: nbp.Notification, echo: bool):
    """The reply's payload and whether it is an error."""
    if echo:
        return request.payload, False
    try:
        return request.payload.decode("utf-8").upper().encode("utf-8"), False
    except UnicodeDecodeError:
        return b"the payload is not UTF-8 text", True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="responder.py", description="Answer NBP/1 requests (NBP-1 section 16).")
    p.add_argument("pattern", help="the requests to answer, e.g. math.> or math.upper")
    p.add_argument("--echo", action="store_true", help="reply with the payload as it came (default: upper-cased)")
    p.add_argument("--count", type=int, help="stop after this many replies")
    p.add_argument("--frontend", default=DEFAULT_FRONTEND, help=f"broker frontend (default {DEFAULT_FRONTEND})")
    p.add_argument("--backend", default=DEFAULT_BACKEND, help=f"broker backend (default {DEFAULT_BACKEND})")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        pattern = nbp.Pattern.compile(a.pattern)
    except ValueError as e:
        p.error(str(e))
    if a.count is not None and a.count < 1:
        p.error("--count must be at least 1")

    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    pub = ctx.socket(zmq.XPUB)
    for sock in (sub, pub):
        sock.setsockopt(zmq.LINGER, 2000)        # let the last reply go out when stopping
    try:
        sub.setsockopt(zmq.SUBSCRIBE, pattern.prefix)
        sub.connect(a.backend)
        pub.connect(a.frontend)
    except zmq.ZMQError as e:
        print(f"responder.py: {e}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    state = nbp.PublisherState()
    print("ready", flush=True)
    replied = 0
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    poller.register(pub, zmq.POLLIN)
    try:
        while a.count is None or replied < a.count:
            ready = dict(poller.poll())
            if pub in ready:
                pub.recv()                        # subscription messages: nothing to do with them here
            if sub not in ready:
                continue
            frames = sub.recv_multipart()
            try:
                request = nbp.decode(frames)
            except nbp.Rejected as e:
                print(f"rejected: {e.reason}", file=sys.stderr)
                continue
            if not pattern.matches(request.name):
                continue
            reply_to = nbp.reply_to(request)
            if reply_to is None:
                continue
            payload, error = answer(request, a.echo)
            pub.send(state.encode(reply_to, payload, nbp.reply_headers(error=error)))
            replied += 1
            print(f"replied to {request.name} ({'error' if error else 'ok'})", flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        sub.close()
        pub.close()
        ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
