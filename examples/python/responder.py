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
sequence numbers (1 for a new reply name). As NBP-1 section 16 asks, a reply is
posted only once the requester's subscription to the reply name has reached this
XPUB (the request, on the SUB, often comes first under load; an XPUB drops what
nobody subscribes to), waiting at most 5 s for it. Stops after --count requests,
or on SIGINT/SIGTERM. Prints "ready" on stdout once the broker holds its
subscription (it comes back to its own XPUB), then one line per reply.

Exit status: 0 done, 2 bad arguments or endpoint.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

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
REQUESTER_WAIT = 5.0  # seconds a reply waits for its requester's subscription (Bus.requesterWait)


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
    subscribed = set()   # topics this XPUB has seen subscribed (through the broker: all it holds)
    waiting = []         # replies whose reply name nobody has subscribed to here yet
    ready = False
    replied = 0
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    poller.register(pub, zmq.POLLIN)

    def covered(name: str) -> bool:
        start = name.encode("utf-8") + b"\0"
        return any(start.startswith(topic) for topic in subscribed)

    fresh = False        # a request was just queued: look at once whether its requester is here
    try:
        while a.count is None or replied < a.count:
            timeout = None
            if fresh:
                # Its requester subscribed before it posted (NBP-1 section 16): usually it is
                # already here, and nothing else would wake this poll before the deadline.
                timeout = 0
            elif waiting:
                timeout = max(0, int((min(w[0] for w in waiting) - time.monotonic()) * 1000))
            fresh = False
            events = dict(poller.poll(timeout))
            while pub.poll(0):
                message = pub.recv()      # subscription messages: 1 subscribes a topic, 0 drops it
                if message[:1] == b"\x01":
                    subscribed.add(message[1:])
                elif message[:1] == b"\x00":
                    subscribed.discard(message[1:])
            if not ready and pattern.prefix in subscribed:
                ready = True              # the broker holds our subscription: requests reach us
                print("ready", flush=True)
            still_waiting = []
            for deadline, reply_to, payload, error, name in waiting:
                if covered(reply_to):
                    pub.send(state.encode(reply_to, payload, nbp.reply_headers(error=error)))
                    replied += 1
                    print(f"replied to {name} ({'error' if error else 'ok'})", flush=True)
                elif time.monotonic() >= deadline:
                    replied += 1
                    print(f"not sent to {name}: no subscription to {reply_to} within {REQUESTER_WAIT} s",
                          file=sys.stderr, flush=True)
                else:
                    still_waiting.append((deadline, reply_to, payload, error, name))
            waiting = still_waiting
            if sub not in events:
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
            waiting.append((time.monotonic() + REQUESTER_WAIT, reply_to, payload, error, request.name))
            fresh = True
    except KeyboardInterrupt:
        pass
    finally:
        # A second signal while the last replies linger out must not end in a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sub.close()
        pub.close()
        ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
