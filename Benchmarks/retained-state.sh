#!/bin/bash
# Broker CPU for N retained posts over 1,000 names (JSON lines from one `nbus publish --lines`),
# without and with `--state DIR` (issue 39 item 5), alternated PAIRS times; each run ends when a
# `--retained-only` read shows the last post, then reads the broker's CPU (utime + stime) and its
# write(2) count (`syscw`: with --state, one more per retained change).
# Usage: NBUS=.build/release/nbus sh Benchmarks/retained-state.sh [N] [PAIRS]
set -eu
B=${NBUS:-.build/release/nbus}
N=${1:-400000}
PAIRS=${2:-3}
D=$(mktemp -d /tmp/retained-state-XXXX)
trap 'rm -rf "$D"' EXIT
python3 -c "
import sys
for i in range($N): sys.stdout.write('{\"name\":\"x.k%d\",\"payload\":\"value-%d-padding-padding-padding\"}\n' % (i % 1000, i))
" > "$D/lines"
run() {
  "$B" broker --frontend "ipc://$D/f" --backend "ipc://$D/b" --retain-names 1000 "$@" > "$D/out" 2> "$D/err" & P=$!
  until grep -q "broker: frontend" "$D/out" 2>/dev/null; do sleep 0.05; done
  "$B" publish x.any --lines --input json --retain --connect "ipc://$D/f" --timeout 60 < "$D/lines" 2>/dev/null
  until [ "$("$B" subscribe 'x.>' --retained-only --connect "ipc://$D/b" --format json --timeout 30 2>/dev/null | grep -c "value-$((N-1))-")" = 1 ]; do :; done
  T=$(awk '{print ($14+$15)/100}' /proc/$P/stat)
  W=$(awk '/syscw/ {print $2}' /proc/$P/io)
  kill -TERM $P; wait $P || true
  echo "${1:-memory} : broker CPU ${T} s for $N retained posts, write calls $W"
  rm -f "$D/f" "$D/b"
}
for _ in $(seq "$PAIRS"); do
  run
  run --state "$D/state"
done
