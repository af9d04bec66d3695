#!/usr/bin/env bash
# How long `nbus subscribe` with N patterns takes to start and receive, through `nbus broker` on
# 127.0.0.1 (defaults): for each N, the subscriber's wall time from its start to its exit after the
# one notification a publisher posts to its last pattern (the publisher waits for that
# subscription). Linear start means the time per pattern stays flat as N grows; the smallest N is
# the baseline in the same run. Usage: Benchmarks/many-patterns.sh [NBUS] [N...]
set -euo pipefail
nbus=${1:-.build/release/nbus}
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1000 2500 5000 10000)
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
"$nbus" broker --frontend tcp://127.0.0.1:* --backend tcp://127.0.0.1:* >"$work/broker.out" 2>"$work/broker.err" &
for _ in $(seq 1 100); do grep -q "^broker:" "$work/broker.out" 2>/dev/null && break; sleep 0.1; done
read -r _ _ frontend _ backend _ < "$work/broker.out"
printf '%8s %10s %14s\n' patterns seconds "us per pattern"
for n in "${counts[@]}"; do
  python3 -c "import sys; [print(f'p{i}.x.>') for i in range(int(sys.argv[1]) - 1)]; print('last.x')" "$n" > "$work/patterns"
  start=$(date +%s.%N)
  # shellcheck disable=SC2046
  "$nbus" subscribe $(cat "$work/patterns") --connect "$backend" --count 1 --timeout 300 >/dev/null 2>"$work/sub.err" &
  sub=$!
  "$nbus" publish last.x x --connect "$frontend" --timeout 300 >/dev/null 2>"$work/pub.err"
  wait "$sub"
  end=$(date +%s.%N)
  python3 -c "import sys; n=int(sys.argv[1]); s=float(sys.argv[3])-float(sys.argv[2]); print(f'{n:8d} {s:10.2f} {s/n*1e6:14.1f}')" "$n" "$start" "$end"
done
