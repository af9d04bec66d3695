#!/bin/sh
# BusJSON's encode and decode of BenchOrder alone, per call, in thread CPU time (so a loaded
# machine skews it less than wall time): the BusJSON sources of each tree given are built with
# -O -wmo as a static library (module BJ) and linked to main.swift; the trees alternate.
#   sh Benchmarks/busjson-coder/run.sh OLD_TREE NEW_TREE [PAIRS]
# Prints "encode N ns  decode N ns  hand-built N ns" (best of 5 runs of 200,000) per tree and pair;
# a tree with the Codable-free field API (BusJSONFields.swift) also prints "fields: encode N ns
# decode N ns", the same BenchOrder written and read with BusJSON.writeObject / readObject.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${TMPDIR:-/tmp}/busjson-coder.$$
build() {  # TREE OUT
    mkdir -p "$2/lib"
    cp "$1"/Sources/NotificationBus/Messages/BusJSON*.swift "$2/lib/"
    cp "$1/Sources/NBP1/UTF8Validation.swift" "$2/lib/"
    (cd "$2" && swiftc -O -wmo -parse-as-library -module-name BJ -package-name nb -emit-module \
        -emit-library -static lib/*.swift -o libBJ.a -emit-module-path BJ.swiftmodule)
    FIELDS=""
    if [ -f "$1/Sources/NotificationBus/Messages/BusJSONFields.swift" ]; then FIELDS="-D BUSJSON_FIELDS"; fi
    swiftc -O -package-name nb $FIELDS -I "$2" -L "$2" -lBJ "$HERE/main.swift" -o "$2/bench"
}
build "$1" "$WORK/old"
build "$2" "$WORK/new"
for pair in $(seq "${3:-3}"); do
    echo "old $("$WORK/old/bench")"
    echo "new $("$WORK/new/bench")"
done
rm -rf "$WORK"
