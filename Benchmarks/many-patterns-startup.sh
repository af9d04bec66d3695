#!/usr/bin/env bash
# Benchmarks/many-patterns-startup.sh NBUS N...: `nbus subscribe` with N patterns through `nbus
# broker` on 127.0.0.1 (a fresh broker per N). Prints, from the subscriber's start: when the
# publisher of its last pattern exited (it waited for that subscription, posted one notification
# and closed: its close reads the subscriber leaving), when the subscriber exited (it got the
# notification and closed), and the subscriber's CPU (user + sys) per pattern, which a linear
# start keeps flat as N grows. Alternate two builds to compare them (issue 38, item 10).
set -u
NBUS=$1; shift
for n in "$@"; do
  W=$(mktemp -d)
  $NBUS broker --frontend tcp://127.0.0.1:* --backend tcp://127.0.0.1:* > $W/b.out 2>$W/b.err &
  BP=$!
  for _ in $(seq 1 100); do grep -q "^broker:" $W/b.out 2>/dev/null && break; sleep 0.1; done
  read -r _ _ F _ B _ < $W/b.out
  python3 -c "import sys; [print(f'p{i}.x.>') for i in range(int(sys.argv[1]) - 1)]; print('last.x')" "$n" > $W/patterns
  s=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o $W/sub.time $NBUS subscribe $(cat $W/patterns) --connect $B --count 1 --timeout 300 >/dev/null 2>$W/sub.err &
  SP=$!
  $NBUS publish last.x x --connect $F --timeout 300 >/dev/null 2>$W/pub.err
  p=$(date +%s.%N)
  wait $SP
  e=$(date +%s.%N)
  kill -TERM $BP; wait $BP 2>/dev/null
  python3 -c "
import sys
n=int(sys.argv[1]); s,p,e=map(float,sys.argv[2:5]); u,k=map(float,open(sys.argv[5]).read().split()[-2:])
print(f'{sys.argv[6]:>10} n={n:6d} subscribed {p-s:6.2f} s  exit {e-s:6.2f} s  sub cpu {u+k:5.2f} s ({(u+k)/n*1e6:6.1f} us/pattern)')
" $n $s $p $e $W/sub.time $(basename $NBUS)
  rm -rf $W
done
