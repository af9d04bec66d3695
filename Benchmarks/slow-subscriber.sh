#!/bin/sh
# A subscriber persistently slower than the publisher loses nothing (issue "A stalled subscriber
# costs only itself"): through `nbus broker` with its defaults (tcp on loopback), `nbus publish`
# posts COUNT x 256 B unpaced to one subscriber, the peers kit's client (`nbus bench peer-client
# --mode=sub`) whose handler busy-works WORK seconds per notification ("slow"), alternating with
# the same client doing no work ("fast", the baseline of the same run). Per run: what the
# subscriber received and lost and its rate (first -> last), the publisher's time, the broker's
# waits for room (it held the publisher: flow control), its slow episodes and disconnections, and
# its peak RSS.
# Usage (from the repository root, after `swift build -c release --product nbus`):
#   sh Benchmarks/slow-subscriber.sh [COUNT (1000000)] [PAIRS (2)] [WORK seconds (0.000005)]
set -eu
NBUS=${NBUS:-.build/release/nbus}
COUNT=${1:-1000000}
PAIRS=${2:-2}
WORK=${3:-0.000005}
. "$(dirname "$0")/subscriber-runs.sh"

run() {  # $1: slow | fast
  pick_endpoints
  start_broker "$F" "$B"
  rm -f "$D/ready"
  work=0
  [ "$1" = slow ] && work=$WORK
  "$NBUS" bench peer-client --mode=sub --subject=feed.x --ready="$D/ready" --frontend="$F" --backend="$B" \
    --work="$work" >"$D/sub.out" 2>"$D/sub.err" &
  sub=$!; started "$sub"
  await_file "$D/ready" "$sub" "$D/sub.err"
  start=$(date +%s.%N)
  # Its close waits for the end-of-stream acknowledgement: the slow subscriber is seconds behind.
  "$NBUS" publish feed.x --count "$COUNT" --size 256 --connect "$F" --timeout 60 --close-timeout 300 \
    >/dev/null 2>"$D/publisher.err" || true
  end=$(date +%s.%N)
  wait "$sub" || true
  rss=$(awk '/VmHWM/ {print $2}' /proc/$broker/status)
  kill -TERM "$broker"; wait "$broker" || true
  python3 - "$1" "$D/sub.out" "$D/publisher.err" "$D/broker.err" "$rss" "$start" "$end" <<'EOF'
import json, re, sys
mode, sub, publisher, broker, rss, start, end = sys.argv[1:]
h = json.loads(open(sub).read().strip().splitlines()[-1])
p = open(publisher).read()
u = re.search(r"unsent (\d+)", p)
b = open(broker).read()
w = re.search(r"waits for room (\d+)", b)
s = re.search(r"slow subscribers (\d+) \(sent past them (\d+)\)", b)
st = re.search(r"stalled subscribers disconnected (\d+)", b)
sl = re.search(r"slow subscribers disconnected (\d+)", b)
print("%-4s subscriber %8.0f/s received %7d lost %d dropped %d | publisher %.1f s, unsent %s | broker waits %s, slow %s (sent past %s), disconnected %s + %s, peak RSS %d MB" % (
    mode, h["rate"], h["received"], h.get("lost_upstream", -1), h.get("dropped_local_buffer", -1),
    float(end) - float(start), u.group(1) if u else "?", w.group(1) if w else "?",
    s.group(1) if s else "?", s.group(2) if s else "?", st.group(1) if st else "?", sl.group(1) if sl else "?",
    int(rss) // 1024))
EOF
}

echo "slow-subscriber: $COUNT x 256 B, work $WORK s per notification, $PAIRS pairs, $NBUS"
for _ in $(seq 1 "$PAIRS"); do
  run fast
  run slow
done
