# Shared by stalled-subscriber.sh and slow-subscriber.sh (sourced, not run): a temporary folder
# D, the cleanup of every process a run starts, and the waits they share.

D=$(mktemp -d)
# The processes started (`started PID`), for the exit trap: dash's `jobs -p` is empty inside a
# trap; one kill each under set +e, so that one already gone stops nothing; SIGCONT first, as a
# subscriber left stopped would not act on SIGTERM until continued.
PIDS=""
trap 'set +e; for p in $PIDS; do kill -CONT "$p"; kill "$p"; done 2>/dev/null; rm -rf "$D"' EXIT
started() { PIDS="$PIDS $1"; }

# Waits for file $1 to exist while process $2 lives (its stderr, $3, shown if it died).
await_file() {
  while [ ! -e "$1" ]; do
    kill -0 "$2" 2>/dev/null || { echo "process $2 ended before $1 appeared" >&2; cat "$3" >&2 2>/dev/null; exit 1; }
    sleep 0.05
  done
}

# Starts `nbus broker` on frontend $1 and backend $2 with its defaults (stderr in $D/broker.err)
# and waits until it listens; sets `broker`.
start_broker() {
  "$NBUS" broker --frontend "$1" --backend "$2" >/dev/null 2>"$D/broker.err" &
  broker=$!; started "$broker"
  while ! grep -q "broker: frontend" "$D/broker.err" 2>/dev/null; do
    kill -0 "$broker" 2>/dev/null || { cat "$D/broker.err" >&2; exit 1; }
    sleep 0.05
  done
}

# A free-looking pair of loopback tcp endpoints: sets F (frontend) and B (backend), and `port`.
pick_endpoints() {
  port=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 20000))
  F="tcp://127.0.0.1:$port"; B="tcp://127.0.0.1:$((port + 1))"
}

# Process $1 ends at its --count when it lost nothing; one that lost some gets 15 s more to learn
# its tail (a broker replays end-of-stream records 1, 3 and 10 s after they pass), then SIGTERM.
finish_subscriber() {
  for _ in $(seq 1 150); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
