#!/bin/sh
# How many swift_task_switch calls a `for await` loop makes per element, by where the loop is
# written (docs/benchmarks/process-profiles.md): a uprobe on libswift_Concurrency's
# swift_task_switch, counted by `perf stat` over 100 loops of 1,000 elements (so 100,000 is one
# per element). Needs perf (linux-perf) and root for the probe.
#   sh Benchmarks/for-await-switches/run.sh
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${TMPDIR:-/tmp}/for-await-switches.$$
mkdir -p "$WORK"
trap 'rm -rf "$WORK"; perf probe -q -d probe_libswift_Concurrency:swift_task_switch 2>/dev/null || true' EXIT
swiftc -O -swift-version 6 "$HERE/main.swift" -o "$WORK/switches"
LIBRARY=$(ldd "$WORK/switches" | sed -n 's/.*=> \(.*libswift_Concurrency.so[^ ]*\).*/\1/p')
perf probe -q -x "$LIBRARY" swift_task_switch
for place in task by-hand named; do
  count=$(perf stat -x, -e probe_libswift_Concurrency:swift_task_switch "$WORK/switches" "$place" 2>&1 >/dev/null | cut -d, -f1)
  echo "$place: $count swift_task_switch for 100,000 elements"
done
