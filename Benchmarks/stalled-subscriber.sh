#!/bin/sh
# A stalled subscriber costs only itself (issue "A stalled subscriber costs only itself"): through
# `nbus broker` with its defaults (tcp on loopback), one publisher (`nbus publish`, unpaced, 256 B
# payloads) and two subscribers of the same name. The healthy one is the peers kit's client
# (`nbus bench peer-client --mode=sub`: its rate is first -> last received); the other is
# `nbus subscribe` printing to /dev/null, SIGSTOPped before the burst begins and resumed STOP
# seconds later ("stop"), or never stopped ("none"). The two alternate in pairs, so the machine's
# noise falls on both. Per run: the healthy rate, what each received and lost, the broker's
# disconnections and slow episodes, and its peak RSS.
# Usage (from the repository root, after `swift build -c release --product nbus`):
#   sh Benchmarks/stalled-subscriber.sh [COUNT (150000)] [PAIRS (3)] [STOP seconds (5)]
# TRANSPORT=ipc runs the broker on ipc endpoints in a temporary folder instead of tcp.
set -eu
NBUS=${NBUS:-.build/release/nbus}
TRANSPORT=${TRANSPORT:-tcp}
COUNT=${1:-150000}
PAIRS=${2:-3}
STOP=${3:-5}
D=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$D"' EXIT

run() {  # $1: stop | none
  port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
  F="tcp://127.0.0.1:$port"; B="tcp://127.0.0.1:$((port + 1))"
  if [ "$TRANSPORT" = ipc ]; then F="ipc://$D/f.$port"; B="ipc://$D/b.$port"; fi
  "$NBUS" broker --frontend "$F" --backend "$B" >/dev/null 2>"$D/broker.err" &
  broker=$!
  while ! grep -q "broker: frontend" "$D/broker.err" 2>/dev/null; do
    kill -0 "$broker" 2>/dev/null || { cat "$D/broker.err"; exit 1; }
    sleep 0.05
  done
  rm -f "$D/ready"
  "$NBUS" bench peer-client --mode=sub --subject=feed.x --ready="$D/ready" --frontend="$F" --backend="$B" >"$D/healthy.out" 2>/dev/null &
  healthy=$!
  "$NBUS" subscribe feed.x --connect "$B" --count "$COUNT" --timeout 300 >/dev/null 2>"$D/other.err" &
  other=$!
  while [ ! -e "$D/ready" ]; do sleep 0.05; done
  # The publisher waits until both subscribers reach it (the stopped one's subscription is at the
  # broker already), so stopping the other now stops it from the burst's start.
  "$NBUS" publish feed.x --count "$COUNT" --size 256 --connect "$F" --subscribers 2 --timeout 120 \
    >/dev/null 2>"$D/publisher.err" &
  publisher=$!
  if [ "$1" = stop ]; then
    kill -STOP "$other"
    sleep "$STOP"
    rss=$(awk '/VmHWM/ {print $2}' /proc/$broker/status)
    kill -CONT "$other"
  fi
  wait "$publisher" || true
  wait "$healthy" || true
  # The other one ends at --count when it lost nothing; one that lost some gets 15 s more to learn
  # its tail (the broker replays end-of-stream records 1, 3 and 10 s after they pass), then SIGTERM.
  for _ in $(seq 1 150); do
    kill -0 "$other" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$other" 2>/dev/null || true
  wait "$other" 2>/dev/null || true
  [ "$1" = stop ] || rss=$(awk '/VmHWM/ {print $2}' /proc/$broker/status)
  kill -TERM "$broker"; wait "$broker" || true
  python3 - "$1" "$D/healthy.out" "$D/other.err" "$D/broker.err" "$COUNT" "$rss" <<'EOF'
import json, re, sys
mode, healthy, other, broker, count, rss = sys.argv[1:]
h = json.loads(open(healthy).read().strip().splitlines()[-1])
o = open(other).read()
m = re.search(r"printed (\d+); lost upstream (\d+)", o)
b = open(broker).read()
d = re.search(r"stalled subscribers disconnected (\d+)", b)
s = re.search(r"slow subscribers (\d+) \(sent past them (\d+)\)", b)
w = re.search(r"waits for room (\d+)", b)
print("%-4s healthy %8.0f/s received %7d lost %d | other printed %s lost %s | broker waits %s, disconnected %s, slow %s (sent past %s), peak RSS %d MB" % (
    mode, h["rate"], h["received"], h.get("lost_upstream", -1),
    m.group(1) if m else "?", m.group(2) if m else "?", w.group(1) if w else "?",
    d.group(1) if d else "?", s.group(1) if s else "?", s.group(2) if s else "?", int(rss) // 1024))
EOF
}

echo "stalled-subscriber: $COUNT x 256 B, stop $STOP s, $PAIRS pairs, $TRANSPORT, $NBUS"
for _ in $(seq 1 "$PAIRS"); do
  run none
  run stop
done
