#!/bin/sh
# What batched frames could bring through a broker, before building them (issue "Through the
# broker, ahead of NATS", item 3): bare libzmq through zmq_proxy (nbus-baseline proxy, ipc) moving
# 256 B frames, and frames of 8, 16 and 32 notifications of 256 B (2,048, 4,096 and 8,192 B, the
# payload a batch of them would carry), then the peers comparison's NATS and bare-libzmq throughput in the
# same invocation. The notification rate of a batch size is frames/s x notifications per frame: the
# transport's ceiling, before any per-notification work of the bus.
# Usage (from the repository root, after `make bench-peers-clients` and a release build):
#   sh Benchmarks/peers/batching-ceiling.sh [label]
set -eu
B=${BASELINE:-.build-bench/release/nbus-baseline}
LABEL=${1:-ceiling}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
for run in 1 2 3; do
  for per in 1 8 16 32; do
    size=$((per * 256)); count=$((1000000 / per))
    "$B" proxy --endpoint "ipc://$D/f" --backend "ipc://$D/b" --hwm 1000000 --timeout 100 >/dev/null 2>&1 &
    proxy=$!
    "$B" sub --endpoint "ipc://$D/b" --count "$count" --size "$size" --timeout 100 >"$D/sub.out" 2>/dev/null &
    sub=$!
    # The subscriber subscribes as it starts; the publisher waits for it (XPUB, --connect).
    "$B" pub --endpoint "ipc://$D/f" --connect --count "$count" --size "$size" --timeout 100 >/dev/null 2>&1
    wait "$sub" || true
    kill "$proxy" 2>/dev/null || true
    wait "$proxy" 2>/dev/null || true
    python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('run %s: %2d per frame: %8.0f frames/s = %9.0f notifications/s' % (sys.argv[2], int(sys.argv[3]), r['rate'], r['rate']*int(sys.argv[3])))" "$D/sub.out" "$run" "$per"
  done
done
python3 Benchmarks/peers/run.py --systems nats,zmqraw --tests throughput --runs 3 --label "$LABEL"
