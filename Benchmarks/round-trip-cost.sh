#!/bin/sh
# What one ping/pong round trip through a broker costs each process (issue 41's round trip): the
# peers kit's clients (`nbus bench peer-client --mode=ping/pong`, loops on `bus.executor` as the
# README teaches) through `nbus broker` with its defaults, tcp on loopback. Per round trip: the
# pinger's p50, and for the pinger, the ponger and the broker their CPU time and context switches
# (`perf stat -e context-switches,task-clock`), and the broker's system calls per forwarded
# message (`perf stat -e raw_syscalls:sys_enter`, two messages a round trip). With ZMQRAW set
# (the peers kit's `zmqraw`, Benchmarks/peers/build.sh), the same through its bare `zmq_proxy`.
# The counters cover the whole ping run (the pinger's start-up included), so compare builds in
# alternating runs, not against a fixed figure.
# Needs perf (Debian's linux-perf) and permission to count (root, or perf_event_paranoid <= 1).
# Usage (from the repository root, after `swift build -c release --product nbus`):
#   [NBUS=path/to/nbus] [ZMQRAW=/tmp/cost-peers/bin/zmqraw] sh Benchmarks/round-trip-cost.sh [ROUND_TRIPS (3000)]
set -eu
NBUS=${NBUS:-.build/release/nbus}
ZMQRAW=${ZMQRAW:-}
N=${1:-3000}
command -v perf >/dev/null || { echo "round-trip-cost: needs perf (apt-get install linux-perf)" >&2; exit 2; }
. "$(dirname "$0")/subscriber-runs.sh"

# The ratio of two numbers, one decimal place: "per A B".
per() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else printf "?" }'; }
# A perf stat output file's count for event $2 (commas removed), 0 when absent.
count() { awk -v e="$2" '$2 == e { gsub(",", "", $1); print $1; found = 1 } END { if (!found) print 0 }' "$1"; }
task_ms() { awk '$2 == "msec" && $3 == "task-clock" { gsub(",", "", $1); print $1; found = 1 } END { if (!found) print 0 }' "$1"; }

# Starts `perf stat` on process $1 (events $3, output $D/$2.stat) with its events off, switches
# them on and waits for perf's acknowledgement; sets `counter` to perf's PID.
count_on() {
  rm -f "$D/$2.ctl" "$D/$2.ack"
  mkfifo "$D/$2.ctl" "$D/$2.ack"
  perf stat -D -1 --control "fifo:$D/$2.ctl,$D/$2.ack" -e "$3" -p "$1" -o "$D/$2.stat" 2>/dev/null &
  counter=$!
  echo enable >"$D/$2.ctl"
  read -r reply <"$D/$2.ack"
  [ "$reply" = ack ] || { echo "perf stat did not acknowledge (said '$reply')" >&2; exit 1; }
}

run() {  # $1: nbus | zmqraw
  pick_endpoints
  if [ "$1" = zmqraw ]; then
    "$ZMQRAW" --mode=proxy --hwm=1000000 --frontend="$F" --backend="$B" >"$D/broker.err" 2>&1 &
    broker=$!; started "$broker"
    while ! grep -q "proxy: frontend" "$D/broker.err" 2>/dev/null; do
      kill -0 "$broker" 2>/dev/null || { cat "$D/broker.err" >&2; exit 1; }
      sleep 0.05
    done
    client="$ZMQRAW --nodrop=1 --frontend=$F --backend=$B"
  else
    start_broker "$F" "$B"
    client="$NBUS bench peer-client --frontend=$F --backend=$B"
  fi
  rm -f "$D/ready"
  $client --mode=pong --ready="$D/ready" >"$D/pong.out" 2>"$D/pong.err" &
  pong=$!; started "$pong"
  await_file "$D/ready" "$pong" "$D/pong.err"
  # Counting starts disabled and is switched on through perf's control fifo; its "ack" says the
  # counters are on before the pinger starts.
  count_on "$pong" pong context-switches,task-clock
  pong_stat=$counter
  count_on "$broker" broker context-switches,task-clock,raw_syscalls:sys_enter
  broker_stat=$counter
  perf stat -e context-switches,task-clock -o "$D/ping.stat" -- \
    $client --mode=ping --n="$N" --warmup=0 --size=16 >"$D/ping.out" 2>"$D/ping.err"
  kill -INT "$pong_stat" "$broker_stat"
  wait "$pong_stat" "$broker_stat" || true
  kill "$pong" "$broker" 2>/dev/null || true
  wait "$pong" "$broker" 2>/dev/null || true
  p50=$(tail -n 1 "$D/ping.out" | python3 -c 'import json, sys; print("%.1f" % json.loads(sys.stdin.read())["p50_us"])')
  line="$1 p50 $p50 us"
  for who in ping pong broker; do
    ms=$(task_ms "$D/$who.stat")
    cs=$(count "$D/$who.stat" context-switches)
    line="$line | $who $(per "$(awk -v m="$ms" 'BEGIN { print m * 1000 }')" "$N") us, $(per "$cs" "$N") cs"
  done
  calls=$(count "$D/broker.stat" raw_syscalls:sys_enter)
  echo "$line | broker system calls per message $(per "$calls" $((N * 2)))"
}

echo "round-trip-cost: $N round trips of 16 B, per round trip; $NBUS${ZMQRAW:+, $ZMQRAW}"
run nbus
[ -n "$ZMQRAW" ] && run zmqraw
exit 0
