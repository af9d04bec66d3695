#!/bin/sh
# Where each process of a 1 -> 1 run through `nbus broker` spends its CPU (issue 41's profile per
# process): the peers kit's workload (`nbus bench peer-client`, N x 256 B, tcp on loopback, the
# README's for-await loops), `perf record -e cpu-clock -g` on the publisher, the broker and the
# subscriber at once. Per process: CPU per delivered notification (samples / rate / N), its split
# by thread and by library (the kernel, libzmq, libc, the Swift runtimes, nbus itself), and its
# top symbols. cpu-clock samples, not instruction counts: compare builds in alternating runs.
# (`valgrind --tool=callgrind` gives up on the release binary: docs/benchmarks/send-side.md.)
# Needs perf (Debian's linux-perf) and permission to record (root, or perf_event_paranoid <= 1).
# Usage (from the repository root, after `swift build -c release --product nbus`):
#   [NBUS=path/to/nbus] sh Benchmarks/process-profiles.sh [N (1000000)] [TOP (8)]
set -eu
NBUS=${NBUS:-.build/release/nbus}
N=${1:-1000000}
TOP=${2:-8}
FREQUENCY=4000
command -v perf >/dev/null || { echo "process-profiles: needs perf (apt-get install linux-perf)" >&2; exit 2; }
. "$(dirname "$0")/subscriber-runs.sh"

# Starts `perf record` on process $1 into $D/$2.data; sets `recorder`.
record() {
  perf record -q -e cpu-clock -F "$FREQUENCY" -g -p "$1" -o "$D/$2.data" >/dev/null 2>"$D/$2.perf.err" &
  recorder=$!
}

# The report of one process: $1 its name, $2 the notifications delivered.
report() {
  data="$D/$1.data"
  # perf's header rounds ("1K samples"): the rows' own counts, summed.
  total=$(perf report -i "$data" --stdio -n --no-children --sort comm -g none 2>/dev/null | awk '/%/ && !/^#/ { s += $2 } END { print s + 0 }')
  echo "## $1: $(awk -v s="$total" -v f="$FREQUENCY" -v n="$2" 'BEGIN { printf "%.3f us of CPU per notification (%s samples at %s Hz)", s / f * 1e6 / n, s, f }')"
  echo "by thread:"
  perf report -i "$data" --stdio --no-children --sort comm -g none 2>/dev/null | awk '/%/ && !/^#/ { printf "  %s\n", $0 }'
  echo "by library:"
  perf report -i "$data" --stdio --no-children --sort dso -g none 2>/dev/null | awk '/%/ && !/^#/ { printf "  %s\n", $0 }' | head -8
  echo "top symbols:"
  perf report -i "$data" --stdio --no-children --sort comm,sym -g none 2>/dev/null | awk '/%/ && !/^#/ { printf "  %s\n", substr($0, 1, 150) }' | head -"$TOP"
  echo
}

pick_endpoints
start_broker "$F" "$B"
$NBUS bench peer-client --mode=sub --frontend="$F" --backend="$B" --ready="$D/ready" >"$D/sub.out" 2>"$D/sub.err" &
sub=$!; started "$sub"
await_file "$D/ready" "$sub" "$D/sub.err"
record "$broker" broker; broker_recorder=$recorder
record "$sub" subscriber; sub_recorder=$recorder
# The publisher is recorded from its start (perf starts it): its set-up is a few ms of N's seconds.
perf record -q -e cpu-clock -F "$FREQUENCY" -g -o "$D/publisher.data" -- \
  $NBUS bench peer-client --mode=pub --n="$N" --frontend="$F" --backend="$B" >"$D/pub.out" 2>"$D/pub.err"
wait "$sub" || { echo "the subscriber failed:" >&2; cat "$D/sub.err" >&2; exit 1; }
kill -INT "$broker_recorder" "$sub_recorder" 2>/dev/null || true
wait "$broker_recorder" "$sub_recorder" 2>/dev/null || true
received=$(sed -n 's/.*"received":\([0-9]*\).*/\1/p' "$D/sub.out" | tail -1)
lost=$(sed -n 's/.*"lost_upstream":\([0-9]*\).*/\1/p' "$D/sub.out" | tail -1)
echo "# $NBUS: 1 -> 1 through nbus broker, $N x 256 B, tcp 127.0.0.1; received $received, lost upstream $lost"
echo
for process in publisher broker subscriber; do report "$process" "$received"; done
