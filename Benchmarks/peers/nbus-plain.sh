#!/bin/sh
# The peers comparison's nbus (`run.py --nbus Benchmarks/peers/nbus-plain.sh`) with the clients'
# `for await` loops in plain tasks on the global pool (`peer-client --loop plain`) instead of on
# the bus's own thread (`bus.executor`, the README's way for a short loop body): what a loop
# written without the executor costs.
# NBUS: the release nbus to run (default .build/release/nbus, from the repository root).
NBUS=${NBUS:-.build/release/nbus}
case "$1" in
  bench)
    if [ "$2" = peer-client ]; then
      shift 2
      case " $* " in
        *" --mode=pub "*) exec "$NBUS" bench peer-client "$@" ;;
        *) exec "$NBUS" bench peer-client --loop plain "$@" ;;
      esac
    fi
    exec "$NBUS" "$@" ;;
  *) exec "$NBUS" "$@" ;;
esac
