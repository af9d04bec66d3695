#!/bin/sh
# Foundation's typed messages at several counts (issue 42's baseline): why `nbus bench throughput
# --typed` runs Foundation at the bus's own count. Builds main.swift with -O, then prints per count
# the median of 5 observer runs and of 3 messages(of:for:) runs (1,000,000 takes minutes and GBs).
#   sh Benchmarks/foundation-count/run.sh [COUNT...]   (default: 50000 200000)
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${TMPDIR:-/tmp}/foundation-count.$$
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
swiftc -O "$HERE/main.swift" -o "$WORK/foundation-count"
[ $# -gt 0 ] || set -- 50000 200000
"$WORK/foundation-count" "$@"
