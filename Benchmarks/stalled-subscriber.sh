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
# TOPOLOGY=direct runs no broker: the publisher binds (`nbus publish --bind`, its default
# per-subscriber budget) and both subscribers connect to it. There the other one is stopped as
# soon as its connection's handshake passed (its debug log says "bus connected"), which can be a
# little after the burst began; the publisher's --close-timeout is STOP + 30 s (it holds the
# stopped one's backlog only while it runs); the peak RSS is the publisher's, and its summary
# says what it disconnected.
set -eu
NBUS=${NBUS:-.build/release/nbus}
TRANSPORT=${TRANSPORT:-tcp}
TOPOLOGY=${TOPOLOGY:-broker}
COUNT=${1:-150000}
PAIRS=${2:-3}
STOP=${3:-5}
. "$(dirname "$0")/subscriber-runs.sh"

run_direct() {  # $1: stop | none; F as run set it
  rm -f "$D/ready"
  "$NBUS" bench peer-client --mode=sub --subject=feed.x --ready="$D/ready" --backend="$F" >"$D/healthy.out" 2>/dev/null &
  healthy=$!; started "$healthy"
  "$NBUS" subscribe feed.x --connect "$F" --count "$COUNT" --timeout 300 --log-level debug >/dev/null 2>"$D/other.err" &
  other=$!; started "$other"
  await_file "$D/ready" "$healthy" /dev/null
  # --close-timeout: a binding publisher holds the stopped one's backlog only while it runs; with
  # the default 2 s it would exit before the resume and the stopped one would report its tail
  # unknown (both sides say so). The healthy one's rate does not depend on it.
  "$NBUS" publish feed.x --count "$COUNT" --size 256 --bind "$F" --subscribers 2 --timeout 120 \
    --close-timeout $((STOP + 30)) >/dev/null 2>"$D/publisher.err" &
  publisher=$!; started "$publisher"
  if [ "$1" = stop ]; then
    while ! grep -q "bus connected" "$D/other.err" 2>/dev/null; do
      kill -0 "$publisher" 2>/dev/null && kill -0 "$other" 2>/dev/null || { cat "$D/publisher.err" "$D/other.err" >&2; exit 1; }
      sleep 0.005
    done
    kill -STOP "$other"
    sleep "$STOP"
    rss=$(awk '/VmHWM/ {print $2}' /proc/$publisher/status 2>/dev/null || echo 0)
    kill -CONT "$other"
  fi
  wait "$publisher" || true
  wait "$healthy" || true
  finish_subscriber "$other"
  python3 - "$1" "$D/healthy.out" "$D/other.err" "$D/publisher.err" "${rss:-0}" <<'EOF'
import json, re, sys
mode, healthy, other, publisher, rss = sys.argv[1:]
h = json.loads(open(healthy).read().strip().splitlines()[-1])
o = open(other).read()
m = re.search(r"printed (\d+); lost upstream (\d+)", o)
p = open(publisher).read()
st = re.search(r"disconnected (\d+) stalled", p)
sl = re.search(r"disconnected (\d+) slow", p)
print("%-4s healthy %8.0f/s received %7d lost %d | other printed %s lost %s | publisher disconnected stalled %s, slow %s%s" % (
    mode, h["rate"], h["received"], h.get("lost_upstream", -1),
    m.group(1) if m else "?", m.group(2) if m else "?",
    st.group(1) if st else 0, sl.group(1) if sl else 0,
    ", publisher peak RSS %d MB at the resume" % (int(rss) // 1024) if mode == "stop" else ""))
EOF
}

run() {  # $1: stop | none
  pick_endpoints
  if [ "$TRANSPORT" = ipc ]; then F="ipc://$D/f.$port"; B="ipc://$D/b.$port"; fi
  if [ "$TOPOLOGY" = direct ]; then
    run_direct "$1"
    return
  fi
  start_broker "$F" "$B"
  rm -f "$D/ready"
  "$NBUS" bench peer-client --mode=sub --subject=feed.x --ready="$D/ready" --frontend="$F" --backend="$B" >"$D/healthy.out" 2>/dev/null &
  healthy=$!; started "$healthy"
  "$NBUS" subscribe feed.x --connect "$B" --count "$COUNT" --timeout 300 >/dev/null 2>"$D/other.err" &
  other=$!; started "$other"
  await_file "$D/ready" "$healthy" /dev/null
  # The publisher waits until both subscribers reach it (the stopped one's subscription is at the
  # broker already), so stopping the other now stops it from the burst's start.
  "$NBUS" publish feed.x --count "$COUNT" --size 256 --connect "$F" --subscribers 2 --timeout 120 \
    >/dev/null 2>"$D/publisher.err" &
  publisher=$!; started "$publisher"
  if [ "$1" = stop ]; then
    kill -STOP "$other"
    sleep "$STOP"
    rss=$(awk '/VmHWM/ {print $2}' /proc/$broker/status)
    kill -CONT "$other"
  fi
  wait "$publisher" || true
  wait "$healthy" || true
  finish_subscriber "$other"
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

echo "stalled-subscriber: $COUNT x 256 B, stop $STOP s, $PAIRS pairs, $TRANSPORT, $TOPOLOGY, $NBUS"
for _ in $(seq 1 "$PAIRS"); do
  run none
  run stop
done
