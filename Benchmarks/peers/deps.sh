#!/bin/sh
# The Debian packages the peers comparison needs: the servers (nats-server, redis-server), what
# builds the clients (Go and nats.go, hiredis, libzmq, a C compiler). As root, installs the missing
# ones with apt-get; otherwise prints the apt-get line to run and exits 1.
set -eu
pkgs="nats-server redis-server golang-go golang-github-nats-io-go-nats-dev libhiredis-dev libzmq3-dev gcc libc6-dev pkg-config"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "error: missing Debian packages:$missing" >&2
  echo "       install them as root: sudo apt-get update && sudo apt-get install -y --no-install-recommends$missing" >&2
  exit 1
fi
echo "installing$missing (apt-get)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
