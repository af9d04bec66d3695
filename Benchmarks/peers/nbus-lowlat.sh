#!/bin/sh
# The peers comparison's nbus (`run.py --nbus Benchmarks/peers/nbus-lowlat.sh`) with the documented
# low-latency setting on the broker (--idle-spin 0.0002) and on both clients (--spin 0.0002).
# NBUS: the release nbus to run (default .build/release/nbus, from the repository root).
NBUS=${NBUS:-.build/release/nbus}
case "$1" in
  broker) shift; exec "$NBUS" broker --idle-spin 0.0002 "$@" ;;
  bench)
    if [ "$2" = peer-client ]; then shift 2; exec "$NBUS" bench peer-client --spin 0.0002 "$@"; fi
    exec "$NBUS" "$@" ;;
  *) exec "$NBUS" "$@" ;;
esac
