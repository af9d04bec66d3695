#!/bin/sh
# What a second broker costs with both healthy (issue "No single point of failure"): the peers
# comparison's nbus workload (Benchmarks/peers/run.py: 1 -> 1 throughput of 1,000,000 x 256 B, and
# the ping/pong round trip) through one broker ("one", run.py's own set-up) and through two
# ("two": a second `nbus broker` on 15570/15571, the peer client given both brokers), in
# alternating pairs so the machine's noise falls on both. Targets: subscriber rate two/one
# >= 0.8, round trip p50 two <= one.
#
# With NBUS_BEFORE set to another build (e.g. the tree before a change), each round measures
# that build's pair, then NBUS's (before, after, before, after, ...): both in the same run, each
# against its own one-broker figures.
#
# Usage (from the repository root, after `swift build -c release --product nbus`):
#   [NBUS_BEFORE=path/to/old/nbus] sh Benchmarks/redundant-cost.sh [PAIRS (3)] [PEERS (Benchmarks/peers)]
set -eu
NBUS=${NBUS:-.build/release/nbus}
NBUS_BEFORE=${NBUS_BEFORE:-}
PAIRS=${1:-3}
PEERS=${2:-Benchmarks/peers}
N=${PEERS_N:-1000000}          # notifications a throughput test (PEERS_N=20000: a quick check)
LAT_N=${PEERS_LAT_N:-20000}    # measured round trips
WORK=${PEERS_WORK:-/tmp/nbus-peers-redundant}
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
SECOND_F=tcp://127.0.0.1:15570
SECOND_B=tcp://127.0.0.1:15571

TICKS=$(getconf CLK_TCK)
# User and system CPU of process $1 so far, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# One pair with build $1, labelled $2one.p$3 and $2two.p$3 (run.py writes one file per label).
pair() {
  python3 "$PEERS/run.py" --nbus "$1" --systems nbus --tests throughput,latency --runs 1 --n "$N" --lat-n "$LAT_N" --label "${2}one.p$3" --work "$WORK" >/dev/null
  "$1" broker --frontend "$SECOND_F" --backend "$SECOND_B" >"$WORK/second-broker.log" 2>&1 &
  second=$!
  while ! grep -q "broker: frontend" "$WORK/second-broker.log" 2>/dev/null; do sleep 0.02; done
  client="$1 bench peer-client --frontend=tcp://127.0.0.1:15550,$SECOND_F --backend=tcp://127.0.0.1:15551,$SECOND_B"
  before=$(cpu_ticks "$second")
  python3 "$PEERS/run.py" --nbus "$1" --nbus-client "$client" --systems nbus --tests throughput --runs 1 --n "$N" --label "${2}two.p$3" \
    --work "$WORK" >/dev/null
  # The second broker's CPU during the throughput test (run.py records its own broker's, and the clients').
  echo "{\"label\": \"${2}two\", \"test\": \"second-broker\", \"throughput_cpu_s\": $(( $(cpu_ticks "$second") - before )).0, \"ticks_per_s\": $TICKS, \"loadavg_before\": [0]}" \
    >"$WORK/results/${2}two-second-broker.p$3.jsonl"
  python3 "$PEERS/run.py" --nbus "$1" --nbus-client "$client" --systems nbus --tests latency --runs 1 --lat-n "$LAT_N" --label "${2}two-latency.p$3" \
    --work "$WORK" >/dev/null
  kill "$second"
  wait "$second" || true
}

i=1
while [ "$i" -le "$PAIRS" ]; do
  if [ -n "$NBUS_BEFORE" ]; then pair "$NBUS_BEFORE" before- "$i"; fi
  pair "$NBUS" "" "$i"
  i=$((i + 1))
done
python3 - "$WORK/results" "$NBUS_BEFORE" <<'EOF'
import glob, json, os, statistics, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
    # LABEL.pN.jsonl: the label without its pair number (two-latency is two's round trip).
    label = os.path.basename(path)[:-len(".jsonl")].rsplit(".p", 1)[0].replace("two-latency", "two")
    for line in open(path):
        row = json.loads(line)
        if not row.get("meta"):
            row.setdefault("label", label)
            rows.append(row)
def values(label, test, get):
    return [get(r) for r in rows if r.get("label") == label and r.get("test") == test and "error" not in r]
def rate(r): return r["sub"]["rate"]
def p50(r): return r["ping"]["p50_us"]
loads = [float(r["loadavg_before"][0]) for r in rows if r.get("test") != "second-broker" and "loadavg_before" in r]
print(f"load average (1 min) before each test: min {min(loads):.1f}, median {statistics.median(loads):.1f}, max {max(loads):.1f}")
for prefix in (["before-"] if sys.argv[2] else []) + [""]:
    name = "before" if prefix else "this build"
    for label in ("one", "two"):
        rates = values(prefix + label, "throughput", rate)
        lost = values(prefix + label, "throughput", lambda r: r["n"] - r["sub"]["received"])
        p50s = values(prefix + label, "latency", p50)
        print(f"{name} {label}: sub rate {[round(x) for x in rates]} (median {statistics.median(rates):,.0f}), "
              f"lost {lost}, rtt p50 us {[round(x) for x in p50s]} (median {statistics.median(p50s):.0f})")
    one_rates, two_rates = values(prefix + "one", "throughput", rate), values(prefix + "two", "throughput", rate)
    one_p50s, two_p50s = values(prefix + "one", "latency", p50), values(prefix + "two", "latency", p50)
    # Each pair's own ratio too: one and two of a pair ran back to back, under about the same load.
    rate_ratios = [two / one for one, two in zip(one_rates, two_rates)]
    p50_ratios = [two / one for one, two in zip(one_p50s, two_p50s)]
    print(f"{name} two/one: sub rate {statistics.median(two_rates) / statistics.median(one_rates):.2f}x (target >= 0.8), "
          f"rtt p50 {statistics.median(two_p50s) / statistics.median(one_p50s):.2f}x (target <= 1.0); "
          f"per pair: rate {[round(x, 2) for x in rate_ratios]} (median {statistics.median(rate_ratios):.2f}), "
          f"rtt p50 {[round(x, 2) for x in p50_ratios]} (median {statistics.median(p50_ratios):.2f})")
# Where the CPU goes in the throughput test, per notification (median over the pairs).
for prefix in (["before-"] if sys.argv[2] else []) + [""]:
    name = "before" if prefix else "this build"
    for label in ("one", "two"):
        parts = {
            "publisher": values(prefix + label, "throughput", lambda r: r["pub_cpu_s"]),
            "subscriber": values(prefix + label, "throughput", lambda r: r["sub_cpu_s"]),
            "broker": values(prefix + label, "throughput", lambda r: r["server_cpu_s"]),
        }
        if label == "two":
            parts["second broker"] = values(prefix + label, "second-broker", lambda r: r["throughput_cpu_s"] / r["ticks_per_s"])
        n = statistics.median(values(prefix + label, "throughput", lambda r: r["n"]))
        cpu = ", ".join(f"{part} {statistics.median(v) / n * 1e6:.2f}" for part, v in parts.items() if v)
        print(f"{name} {label}: CPU per notification, us: {cpu}")
    # The targets judge each process on its own (brokers run on their own hosts): publisher and
    # subscriber two/one <= 1.25, each broker <= one broker's, round trip p50 <= 1.10.
    def per_n(label, test, get):
        return [get(r) / r["n"] for r in rows if r.get("label") == label and r.get("test") == test and "error" not in r]
    one, two = prefix + "one", prefix + "two"
    ratios = {
        "publisher": (per_n(two, "throughput", lambda r: r["pub_cpu_s"]), per_n(one, "throughput", lambda r: r["pub_cpu_s"]), 1.25),
        "subscriber": (per_n(two, "throughput", lambda r: r["sub_cpu_s"]), per_n(one, "throughput", lambda r: r["sub_cpu_s"]), 1.25),
        "first broker": (per_n(two, "throughput", lambda r: r["server_cpu_s"]), per_n(one, "throughput", lambda r: r["server_cpu_s"]), 1.0),
    }
    second = [r["throughput_cpu_s"] / r["ticks_per_s"] for r in rows if r.get("label") == two and r.get("test") == "second-broker"]
    twos = [r["n"] for r in rows if r.get("label") == two and r.get("test") == "throughput" and "error" not in r]
    if second and len(second) == len(twos):
        ratios["second broker"] = ([c / n for c, n in zip(second, twos)], ratios["first broker"][1], 1.0)
    said = []
    for part, (t, o, target) in ratios.items():
        if t and o:
            ratio = statistics.median(t) / statistics.median(o)
            said.append(f"{part} {ratio:.2f}x ({'met' if ratio <= target else 'not met'}, target <= {target})")
    one_p50s, two_p50s = values(one, "latency", p50), values(two, "latency", p50)
    if one_p50s and two_p50s:
        ratio = statistics.median(two_p50s) / statistics.median(one_p50s)
        said.append(f"rtt p50 {ratio:.2f}x ({'met' if ratio <= 1.10 else 'not met'}, target <= 1.10)")
    print(f"{name} two/one per process, CPU per notification: " + "; ".join(said))
if sys.argv[2]:
    for label in ("one", "two"):
        after = statistics.median(values(label, "throughput", rate)) / statistics.median(values("before-" + label, "throughput", rate))
        p50_after = statistics.median(values(label, "latency", p50)) / statistics.median(values("before-" + label, "latency", p50))
        print(f"this build against before, {label}: sub rate {after:.2f}x, rtt p50 {p50_after:.2f}x")
EOF
