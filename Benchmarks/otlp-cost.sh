#!/bin/bash
# What --otlp-endpoint costs (issue 40): nbus publish -> nbus broker -> nbus subscribe, N x 256 B
# over ipc, both ends traced or neither, alternating plain, traced, traced, plain, plain, traced.
# RECEIVER=python (default): examples/python/otlp_receiver.py on this machine takes the spans;
# RECEIVER=none: --otlp-endpoint http://127.0.0.1:1 (refused: the spans are made, the exports fail).
# Prints the wall time of each run (publisher start to subscriber exit, the exit flush included).
#   swift build -c release --product nbus --scratch-path .build-rel
#   NBUS=.build-rel/release/nbus sh Benchmarks/otlp-cost.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-200000}
NBUS=${NBUS:-$ROOT/.build-rel/release/nbus}
RECEIVER=${RECEIVER:-python}
D=$(mktemp -d /tmp/otlp-cost.XXXX)
python3 "$ROOT/examples/python/otlp_receiver.py" --port 0 > "$D/recv.out" 2>&1 &
RECV=$!
"$NBUS" broker --frontend "ipc://$D/f" --backend "ipc://$D/b" > "$D/broker.out" 2>&1 &
BROKER=$!
trap 'kill $BROKER $RECV 2>/dev/null; rm -rf "$D"' EXIT
until grep -q listening "$D/recv.out" 2>/dev/null; do sleep 0.1; done
until grep -q "broker: frontend" "$D/broker.out" 2>/dev/null; do sleep 0.1; done
PORT=$(head -1 "$D/recv.out" | cut -d' ' -f2)
URL="http://127.0.0.1:$PORT"
[ "$RECEIVER" = none ] && URL="http://127.0.0.1:1"
for mode in plain traced traced plain plain traced; do
  extra=""
  [ "$mode" = traced ] && extra="--otlp-endpoint $URL"
  "$NBUS" subscribe bench.x --count "$N" --timeout 120 --connect "ipc://$D/b" $extra > /dev/null 2> "$D/sub.err" &
  SUB=$!
  start=$(date +%s.%N)
  "$NBUS" publish bench.x x --size 256 --count "$N" --timeout 30 --connect "ipc://$D/f" $extra 2> "$D/pub.err"
  wait $SUB
  rc=$?
  end=$(date +%s.%N)
  echo "$mode: $(echo "$end - $start" | bc) s, $(echo "$N / ($end - $start)" | bc)/s, subscriber exit $rc; $(grep -h "OTLP:" "$D/pub.err" "$D/sub.err" | sed -E 's/.*OTLP: //' | tr '\n' ' ')"
done
