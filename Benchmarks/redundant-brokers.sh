#!/bin/sh
# No single point of failure (issue "No single point of failure", NBP-1 §17): two `nbus broker`s,
# one publisher (`nbus publish`, COUNT notifications at RATE a second) and two subscribers (`nbus
# subscribe`, printing to files), all connected to both. Paced so that the subscribers keep up
# on average: unpaced, on a loaded machine, they fall behind past what a broker holds for a slow
# subscriber (10 s, then it sends past it, counted), which measures slow subscribers, not a
# broker's death. Each run kills one broker with SIGKILL at a random moment
# (when the first subscriber has printed a random share of the stream), the victim alternating,
# and restarts it at once on the same endpoints, so it rejoins during the stream. Then one run
# freezes a broker (SIGSTOP) for FREEZE seconds during a paced flood and resumes it. Per run:
# what each subscriber printed, how many distinct, whether 1...COUNT in order, its lost upstream
# and duplicates discarded, and the publisher's time. A run passes with 0 lost and 0 twice.
# Usage (from the repository root, after `swift build -c release --product nbus`):
#   sh Benchmarks/redundant-brokers.sh [COUNT (1000000)] [RUNS (20)] [FREEZE seconds (30)] [RATE (25000)]
set -eu
NBUS=${NBUS:-.build/release/nbus}
COUNT=${1:-1000000}
RUNS=${2:-20}
FREEZE=${3:-30}
RATE=${4:-25000}
D=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$D"' EXIT
FAILED=0

start_broker() {  # $1: a | b
  "$NBUS" broker --frontend "ipc://$D/f$1" --backend "ipc://$D/b$1" >"$D/broker-$1.out" 2>>"$D/broker-$1.err" &
  eval "broker_$1=$!"
  while ! grep -q "broker: frontend" "$D/broker-$1.out" 2>/dev/null; do sleep 0.02; done
}

random_below() { echo $(( $(od -An -N4 -tu4 /dev/urandom | tr -d ' ') % $1 )); }

lines() { wc -l <"$1" 2>/dev/null || echo 0; }

# Checks one subscriber's output: COUNT lines, sequences 1...COUNT in order; prints a summary.
check() {  # $1: label, $2: stdout file, $3: stderr file
  verdict=$(awk -v n="$COUNT" '
    { split($2, s, "="); q = s[2] + 0; if (q != NR) bad++; if (q in seen) twice++; seen[q] = 1 }
    END { printf "printed %d, distinct %d, out of place %d, twice %d", NR, length(seen), bad + 0, twice + 0
          if (NR == n && length(seen) == n && bad == 0) print " ok"; else print " FAIL" }' "$2")
  summary=$(grep -o "lost upstream [0-9]*\|duplicates discarded [0-9]*" "$3" | tr '\n' ' ')
  case "$summary" in *"lost upstream 0 "*) ;; *) verdict="$verdict (lost upstream) FAIL" ;; esac
  echo "  $1: $verdict; $summary"
  case "$verdict" in *FAIL) FAILED=$((FAILED + 1)) ;; esac
}

run() {  # $1: run number, $2: kill | freeze
  rm -f "$D"/*.out "$D"/*.err "$D"/fa "$D"/fb "$D"/ba "$D"/bb
  start_broker a
  start_broker b
  for s in 1 2; do
    "$NBUS" subscribe ha.k --connect "ipc://$D/ba" --connect "ipc://$D/bb" --count "$COUNT" --timeout 600 \
      >"$D/sub$s.out" 2>"$D/sub$s.err" &
    eval "sub$s=$!"
  done
  rate="--rate $RATE"
  started=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$NBUS" publish ha.k 'n {n}' --count "$COUNT" $rate --connect "ipc://$D/fa" --connect "ipc://$D/fb" \
    --subscribers 2 --timeout 60 --close-timeout 60 >/dev/null 2>"$D/publisher.err" &
  publisher=$!
  if [ "$1" -gt 0 ] && [ $(($1 % 2)) -eq 0 ]; then victim=b; else victim=a; fi
  if [ "$2" = kill ]; then
    moment=$(( COUNT / 100 + $(random_below $(( COUNT * 8 / 10 ))) ))
    while [ "$(lines "$D/sub1.out")" -lt "$moment" ] && kill -0 "$publisher" 2>/dev/null; do sleep 0.01; done
    eval "kill -9 \$broker_$victim"
    at=$(lines "$D/sub1.out")
    start_broker "$victim"
    what="killed broker $victim at $at printed, restarted it"
  else
    while [ "$(lines "$D/sub1.out")" -lt $((COUNT / 10)) ]; do sleep 0.05; done
    eval "kill -STOP \$broker_$victim"
    at=$(lines "$D/sub1.out")
    sleep "$FREEZE"
    eval "kill -CONT \$broker_$victim"
    what="froze broker $victim for $FREEZE s at $at printed"
  fi
  wait "$publisher" || echo "  publisher exited $?"
  ended=$(date +%s.%N)
  wait "$sub1" || true
  wait "$sub2" || true
  echo "run $1 ($what): publisher $(awk -v a="$started" -v b="$ended" 'BEGIN { printf "%.1f s", b - a }'); $(grep -o "posted [0-9]*, sent [0-9]*, unsent [0-9]*.*" "$D/publisher.err" | head -1)"
  check subscriber1 "$D/sub1.out" "$D/sub1.err"
  check subscriber2 "$D/sub2.out" "$D/sub2.err"
  kill "$broker_a" "$broker_b" 2>/dev/null || true
  wait "$broker_a" 2>/dev/null || true
  wait "$broker_b" 2>/dev/null || true
}

echo "two brokers, $COUNT notifications at $RATE/s, $RUNS kill -9 runs and one $FREEZE s freeze; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
i=1
while [ "$i" -le "$RUNS" ]; do
  run "$i" kill
  i=$((i + 1))
done
run 0 freeze
echo "failed runs: $FAILED"
[ "$FAILED" -eq 0 ]
