#!/bin/sh
# Follow a log file and post every new line as one notification (payload = the line).
#
#   examples/shell/log-to-bus.sh /var/log/app.log logs.app [nbus publish options...]
#
# is exactly `tail -F /var/log/app.log | nbus publish logs.app --lines [options...]`. Options go to
# `nbus publish` (default: connect to `nbus broker`'s frontend, tcp://127.0.0.1:5550; wait up to
# --timeout seconds for a subscriber before reading; --no-wait to start at once).
# NBUS selects the binary (default: `nbus` on PATH, else this repository's .build/debug/nbus).
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 LOGFILE NAME [nbus publish options...]" >&2
    exit 64
fi
file=$1
name=$2
shift 2
here=$(dirname "$0")
NBUS=${NBUS:-$(command -v nbus || echo "$here/../../.build/debug/nbus")}
tail -F "$file" | "$NBUS" publish "$name" --lines "$@"
