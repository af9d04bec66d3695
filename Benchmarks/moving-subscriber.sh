#!/bin/sh
# A slow but moving subscriber's backlog is kept within its budget in bytes (issue "A stalled
# subscriber costs only itself"): through `nbus broker` with its defaults (64 MiB per subscriber),
# one unpaced `nbus publish` of 4,000-byte notifications, one subscriber that keeps taking them
# but slower than they come: a plain pyzmq SUB socket (16-frame mark, 256 KiB kernel buffer)
# spending 50 us on each. The broker's queue mark counts messages (174,762 of them for 64 MiB,
# sized for 256-byte frames), so without a byte bound the backlog of 4 KB frames grows with the
# burst. Per run: what the subscriber received, the broker's peak RSS (VmHWM), its waits for room
# and disconnections, and the elapsed time.
# Usage (from the repository root, after `swift build -c release --product nbus`; python3 with
# pyzmq):
#   sh Benchmarks/moving-subscriber.sh [COUNT (100000)] [RUNS (2)]
# NBUS_BEFORE=path/to/another/nbus alternates that build with this one (before, after, after,
# before, ...). TRANSPORT=ipc puts the broker on ipc endpoints in a temporary folder.
set -eu
NBUS=${NBUS:-.build/release/nbus}
TRANSPORT=${TRANSPORT:-tcp}
COUNT=${1:-100000}
RUNS=${2:-2}
D=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$D"' EXIT

cat >"$D/consumer.py" <<'EOF'
import sys, time, zmq
endpoint, count, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
name = b"feed.big"
context = zmq.Context()
socket = context.socket(zmq.SUB)
socket.setsockopt(zmq.RCVHWM, 16)
socket.setsockopt(zmq.RCVBUF, 256 * 1024)
socket.setsockopt(zmq.RCVTIMEO, 30000)
socket.setsockopt(zmq.SUBSCRIBE, name)
socket.connect(endpoint)
open(ready, "w").close()
received = 0
while received < count:
    try:
        frame = socket.recv()
    except zmq.Again:
        break
    if not frame.startswith(name + b"\0"):
        continue
    # A batch frame (NBP-1 2.3: version byte 2 after the name's NUL) carries its record count.
    at = len(name) + 1
    records = int.from_bytes(frame[at + 4:at + 6], "big") if frame[at] == 2 else 1
    until = time.perf_counter() + 50e-6 * records
    while time.perf_counter() < until:
        pass
    received += records
print(received)
EOF

run() {  # $1: the nbus binary
  bin=$1
  port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
  F="tcp://127.0.0.1:$port"; B="tcp://127.0.0.1:$((port + 1))"
  if [ "$TRANSPORT" = ipc ]; then F="ipc://$D/f.$port"; B="ipc://$D/b.$port"; fi
  "$bin" broker --frontend "$F" --backend "$B" >/dev/null 2>"$D/broker.err" &
  broker=$!
  while ! grep -q "broker: frontend" "$D/broker.err" 2>/dev/null; do
    kill -0 "$broker" 2>/dev/null || { cat "$D/broker.err"; exit 1; }
    sleep 0.05
  done
  rm -f "$D/ready"
  python3 "$D/consumer.py" "$B" "$COUNT" "$D/ready" >"$D/consumer.out" &
  consumer=$!
  while [ ! -e "$D/ready" ]; do sleep 0.05; done
  start=$(date +%s.%N)
  "$bin" publish feed.big --count "$COUNT" --size 4000 --connect "$F" --subscribers 1 --timeout 300 \
    >/dev/null 2>"$D/publisher.err" || true
  wait "$consumer" || true
  end=$(date +%s.%N)
  rss=$(awk '/VmHWM/ {print $2}' /proc/$broker/status)
  kill -TERM "$broker"; wait "$broker" || true
  python3 - "$bin" "$D/consumer.out" "$D/broker.err" "$COUNT" "$rss" "$start" "$end" <<'EOF'
import re, sys
binary, consumer, broker, count, rss, start, end = sys.argv[1:]
received = open(consumer).read().strip() or "?"
b = open(broker).read()
w = re.search(r"waits for room (\d+)", b)
d = re.search(r"stalled subscribers disconnected (\d+)", b)
s = re.search(r"slow subscribers disconnected (\d+)", b)
p = re.search(r"slow subscribers (\d+) \(sent past them (\d+)\)", b)
print("%-40s received %s of %s | broker peak RSS %d MB, waits %s, disconnected stalled %s slow %s, sent past %s | %.1f s" % (
    binary[-40:], received, count, int(rss) // 1024, w.group(1) if w else "?", d.group(1) if d else "?",
    s.group(1) if s else "-", p.group(2) if p else "?", float(end) - float(start)))
EOF
}

echo "moving-subscriber: $COUNT x 4,000 B, a SUB socket taking 50 us each, $RUNS runs, $TRANSPORT"
for _ in $(seq 1 "$RUNS"); do
  if [ -n "${NBUS_BEFORE:-}" ]; then run "$NBUS_BEFORE"; fi
  run "$NBUS"
  run "$NBUS"
  if [ -n "${NBUS_BEFORE:-}" ]; then run "$NBUS_BEFORE"; fi
done
