#!/bin/sh
# Builds the peers' clients into DIR (default .build/peers/bin): natsbench (Go, nats.go from
# Debian's GOPATH tree, nothing fetched), redisbench (C, hiredis), zmqraw (C, libzmq)
# and tcprelay (C, the bare TCP relay that is the broker's floor).
# Usage: sh Benchmarks/peers/build.sh [DIR]   (after Benchmarks/peers/deps.sh)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-.build/peers/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cc=${CC:-cc}
# Debian's Go library packages put their sources under /usr/share/gocode (a GOPATH): build in
# GOPATH mode against it, with the cache beside the binaries.
(cd "$here/src/nats" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$out/../gocache" GOFLAGS= GOPROXY=off \
  go build -o "$out/natsbench" natsbench.go)
$cc -O2 -Wall -Wextra -o "$out/redisbench" "$here/src/redis/redisbench.c" -lhiredis
$cc -O2 -Wall -Wextra -o "$out/zmqraw" "$here/src/zmqraw/zmqraw.c" $(pkg-config --cflags --libs libzmq)
$cc -O2 -Wall -Wextra -o "$out/tcprelay" "$here/src/relay/tcprelay.c"
echo "peers' clients built in $out: natsbench redisbench zmqraw tcprelay"
