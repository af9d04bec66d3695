#!/bin/sh
# What a second broker costs with both healthy (issue "No single point of failure"): the peers
# kit's nbus workload (../shared/peers/run.py: 1 -> 1 throughput of 1,000,000 x 256 B, and the
# ping/pong round trip) through one broker ("one", the kit's own set-up) and through two
# ("two": a second `nbus broker` on 15570/15571, the kit's client given both brokers), in
# alternating pairs so the machine's noise falls on both. Targets: subscriber rate two/one
# >= 0.8, round trip p50 two <= one.
# Usage (from the repository root, after `swift build -c release --product nbus` and the kit's
# setup.sh):   sh Benchmarks/redundant-cost.sh [PAIRS (3)] [PEERS (../shared/peers)]
set -eu
NBUS=${NBUS:-.build/release/nbus}
PAIRS=${1:-3}
PEERS=${2:-../shared/peers}
WORK=${PEERS_WORK:-/tmp/nbus-peers-redundant}
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
SECOND_F=tcp://127.0.0.1:15570
SECOND_B=tcp://127.0.0.1:15571
CLIENT_TWO="$NBUS bench peer-client --frontend=tcp://127.0.0.1:15550,$SECOND_F --backend=tcp://127.0.0.1:15551,$SECOND_B"
i=1
while [ "$i" -le "$PAIRS" ]; do
  python3 "$PEERS/run.py" --nbus "$NBUS" --systems nbus --tests throughput,latency --runs 1 --label one --work "$WORK" >/dev/null
  "$NBUS" broker --frontend "$SECOND_F" --backend "$SECOND_B" >"$WORK/second-broker.log" 2>&1 &
  second=$!
  while ! grep -q "broker: frontend" "$WORK/second-broker.log" 2>/dev/null; do sleep 0.02; done
  python3 "$PEERS/run.py" --nbus "$NBUS" --nbus-client "$CLIENT_TWO" --systems nbus --tests throughput,latency --runs 1 \
    --label two --work "$WORK" >/dev/null
  kill "$second"
  wait "$second" || true
  i=$((i + 1))
done
python3 - "$WORK/results/raw.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
def values(label, test, get):
    return [get(r) for r in rows if r.get("label") == label and r.get("test") == test and "error" not in r]
for label in ("one", "two"):
    rate = values(label, "throughput", lambda r: r["sub"]["rate"])
    lost = values(label, "throughput", lambda r: r["n"] - r["sub"]["received"])
    p50 = values(label, "latency", lambda r: r["ping"]["p50_us"])
    print(f"{label}: sub rate {[round(x) for x in rate]} (median {statistics.median(rate):,.0f}), "
          f"lost {lost}, rtt p50 us {[round(x) for x in p50]} (median {statistics.median(p50):.0f})")
one_rate = statistics.median(values("one", "throughput", lambda r: r["sub"]["rate"]))
two_rate = statistics.median(values("two", "throughput", lambda r: r["sub"]["rate"]))
one_p50 = statistics.median(values("one", "latency", lambda r: r["ping"]["p50_us"]))
two_p50 = statistics.median(values("two", "latency", lambda r: r["ping"]["p50_us"]))
print(f"two/one: sub rate {two_rate / one_rate:.2f}x (target >= 0.8), rtt p50 {two_p50 / one_p50:.2f}x (target <= 1.0)")
EOF
