#!/bin/sh
# Post JSON lines from standard input: one object per line, one notification per object.
#
#   examples/shell/jsonl-to-bus.sh logs.app [nbus publish options...] < examples/shell/events.jsonl
#   some-json-logger | examples/shell/jsonl-to-bus.sh logs.app --connect tcp://127.0.0.1:5550
#
# is exactly `nbus publish NAME --lines --input json [options...]`. Each line is
#   {"name": "logs.app.errors", "headers": {"level": "error"}, "payload": "disk full"}
# "name" is optional (default NAME), "headers" values are turned into strings, "payload" is a
# string (sent as its UTF-8 bytes) or any JSON value (sent as its JSON text). Malformed lines are
# skipped and counted (exit status 2). NBUS selects the binary, as in log-to-bus.sh.
set -eu
if [ $# -lt 1 ]; then
    echo "usage: $0 NAME [nbus publish options...] < lines.jsonl" >&2
    exit 64
fi
name=$1
shift
here=$(dirname "$0")
NBUS=${NBUS:-$(command -v nbus || echo "$here/../../.build/debug/nbus")}
exec "$NBUS" publish "$name" --lines --input json "$@"
