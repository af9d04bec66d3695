#!/bin/sh
# Retained values through `nbus broker --retain-names` (issue 39's targets), in one run so the
# ratios share the machine's noise:
#   join:   a subscriber joining NAMES retained names (`subscribe 'r.>' --retained-only`, from its
#           start to its exit) against the same NAMES notifications live (a subscriber already
#           on, from the publisher's start to the subscriber's exit). Each round: a fresh broker,
#           the live run (which also stores the values), then the join. Target join/live <= 1.5.
#   cost:   N posts of 256 B to one name, plain and --retain in alternating pairs (plain, retain,
#           retain, plain, ...), a subscriber on, the broker keeping retained values: the
#           publisher's wall time and the subscriber's (from the publisher's start to the
#           subscriber's exit: the broker's forwarding rate), and the broker's CPU. Target
#           retain/plain <= 1.10.
#   memory: a fresh broker per run; NAMES distinct names of 256 B posted with or without --retain
#           (alternating); the broker's RssAnon after, against its `retained_bytes` (the encoded
#           frames it keeps): (RssAnon retain - RssAnon plain) / NAMES is the memory per value.
#
# Each process start (publisher or subscriber) is inside the times compared; both sides of each
# ratio include one.
#
# Usage (from the repository root, after `swift build -c release --product nbus`):
#   [NBUS=.build/release/nbus] sh Benchmarks/retained.sh [NAMES (10000)] [N (200000)] [ROUNDS (3)]
set -eu
NBUS=${NBUS:-.build/release/nbus}
NAMES=${1:-10000}
N=${2:-200000}
ROUNDS=${3:-3}
WORK=${RETAINED_WORK:-/tmp/nbus-retained-bench}
F=tcp://127.0.0.1:16560
B=tcp://127.0.0.1:16561
HTTP=16562
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT

now() { date +%s.%N; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss_anon() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"; }
metric() { curl -s "http://127.0.0.1:$HTTP/metrics" | awk -v m="nbus_broker_$1" '$1 == m { printf "%d\n", $2 }'; }

python3 - "$NAMES" >"$WORK/names.json" <<'EOF'
import sys
pad = "x" * 256
for i in range(int(sys.argv[1])):
    print('{"name":"r.n%06d","payload":"%s"}' % (i, pad))
EOF

start_broker() {
  "$NBUS" broker --frontend "$F" --backend "$B" --retain-names 1000000 --retain-bytes 4096 --http "$HTTP" \
    >"$WORK/broker.log" 2>&1 &
  broker=$!
  while ! grep -q "monitoring on" "$WORK/broker.log" 2>/dev/null; do sleep 0.02; done
}
stop_broker() { kill "$broker"; wait "$broker" || true; }
# Waits until the broker has a subscription to pattern $1 (its /subsz), so a publisher's start
# is the start of what is timed.
await_pattern() {
  while ! curl -s "http://127.0.0.1:$HTTP/subsz" | grep -qF "\"pattern\" : \"$1\""; do sleep 0.02; done
}

echo "round,live_s,join_s" >"$WORK/join.csv"
echo "kind,pub_s,sub_s,broker_cpu_s" >"$WORK/cost.csv"
echo "kind,rss_anon_kb_before,rss_anon_kb_after,retained_names,retained_bytes" >"$WORK/memory.csv"
TICKS=$(getconf CLK_TCK)

r=1
while [ "$r" -le "$ROUNDS" ]; do
  # join
  start_broker
  "$NBUS" subscribe 'r.>' --count "$NAMES" --connect "$B" >/dev/null 2>"$WORK/live.err" &
  sub=$!
  await_pattern 'r.>'
  t0=$(now)
  "$NBUS" publish r.n000000 --lines --input json --retain --connect "$F" <"$WORK/names.json" 2>"$WORK/pub.err"
  wait "$sub"
  t1=$(now)
  "$NBUS" subscribe 'r.>' --retained-only --connect "$B" >"$WORK/join.out" 2>"$WORK/join.err"
  t2=$(now)
  got=$(wc -l <"$WORK/join.out")
  [ "$got" -eq "$NAMES" ] || { echo "join: $got of $NAMES" >&2; exit 1; }
  echo "$r,$(echo "$t1 - $t0" | bc),$(echo "$t2 - $t1" | bc)" >>"$WORK/join.csv"

  # cost: plain, retain, retain, plain
  # (a name of its own each, so a subscription the broker has not yet dropped is not mistaken
  # for the new one)
  i=0
  for kind in plain retain retain plain; do
    flag=""; [ "$kind" = retain ] && flag=--retain
    i=$((i + 1))
    "$NBUS" subscribe "bench.x$i" --count "$N" --connect "$B" >/dev/null 2>"$WORK/cost-sub.err" &
    sub=$!
    await_pattern "bench.x$i"
    c0=$(cpu_ticks "$broker")
    t0=$(now)
    "$NBUS" publish "bench.x$i" --count "$N" --size 256 $flag --connect "$F" 2>"$WORK/cost-pub.err"
    t1=$(now)
    wait "$sub"
    t2=$(now)
    c1=$(cpu_ticks "$broker")
    grep -q "printed $N;" "$WORK/cost-sub.err" || { echo "cost: $(cat "$WORK/cost-sub.err")" >&2; exit 1; }
    echo "$kind,$(echo "$t1 - $t0" | bc),$(echo "$t2 - $t0" | bc),$(echo "scale=3; ($c1 - $c0) / $TICKS" | bc)" >>"$WORK/cost.csv"
  done
  stop_broker

  # memory: a fresh broker each, plain then retain (odd rounds) or retain then plain
  if [ $((r % 2)) -eq 1 ]; then kinds="plain retain"; else kinds="retain plain"; fi
  for kind in $kinds; do
    flag=""; [ "$kind" = retain ] && flag=--retain
    start_broker
    # The broker subscribes to every name at its publishers when it keeps values, so the
    # publisher's wait for a subscriber is met by the broker; without retention a subscriber is
    # needed (it takes the notifications as they come).
    "$NBUS" subscribe 'r.>' --count "$NAMES" --connect "$B" >/dev/null 2>/dev/null &
    sub=$!
    await_pattern 'r.>'
    before=$(rss_anon "$broker")
    "$NBUS" publish r.n000000 --lines --input json $flag --connect "$F" <"$WORK/names.json" 2>"$WORK/mem-pub.err"
    wait "$sub"
    echo "$kind,$before,$(rss_anon "$broker"),$(metric retained_names),$(metric retained_bytes)" >>"$WORK/memory.csv"
    stop_broker
  done
  r=$((r + 1))
done

python3 - "$WORK" "$NAMES" "$N" <<'EOF'
import csv, os, statistics as st, sys
work, names, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = lambda f: list(csv.DictReader(open(os.path.join(work, f))))
join = rows("join.csv")
live = [float(r["live_s"]) for r in join]; joined = [float(r["join_s"]) for r in join]
ratios = [j / l for l, j in zip(live, joined)]
print(f"join {names} retained names: live s {live} (median {st.median(live):.3f}), join s {joined} "
      f"(median {st.median(joined):.3f}); join/live per round {[round(x, 2) for x in ratios]}, median {st.median(ratios):.2f} (target <= 1.5)")
cost = rows("cost.csv")
for col, what in (("pub_s", "publisher time"), ("sub_s", "subscriber time (forwarding)"), ("broker_cpu_s", "broker CPU")):
    plain = [float(r[col]) for r in cost if r["kind"] == "plain"]
    ret = [float(r[col]) for r in cost if r["kind"] == "retain"]
    pairs = [b / a for a, b in zip(plain, ret)]
    print(f"cost, {n} x 256 B, {what}: plain {plain} (median {st.median(plain):.3f}), retain {ret} (median {st.median(ret):.3f}); "
          f"retain/plain {st.median(ret) / st.median(plain):.2f}, per pair {[round(x, 2) for x in pairs]} (target <= 1.10)")
mem = rows("memory.csv")
plain = [int(r["rss_anon_kb_after"]) for r in mem if r["kind"] == "plain"]
ret = [int(r["rss_anon_kb_after"]) for r in mem if r["kind"] == "retain"]
stored = [int(r["retained_bytes"]) for r in mem if r["kind"] == "retain"]
before = [int(r["rss_anon_kb_before"]) for r in mem]
per_value = (st.median(ret) - st.median(plain)) * 1024 / names
print(f"memory, {names} values of 256 B: broker RssAnon kB at start {before}, after plain {plain}, after retain {ret}; "
      f"retained_bytes {stored} ({st.median(stored) / names:.0f} B a value); RssAnon retain - plain: "
      f"{per_value:.0f} B a value, {per_value / (st.median(stored) / names):.2f}x its stored size")
EOF
