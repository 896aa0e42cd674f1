#!/bin/sh
# End-to-end checks of front-end features: runs redfox on each e2e/*.lql
# and compares stdout with the .out next to it.
# Usage: run.sh REDFOX
redfox=$1
dir=$(dirname "$0")
status=0
for prog in "$dir"/*.lql; do
    want=${prog%.lql}.out
    if ! got=$("$redfox" run "$prog"); then
        echo "FAIL $prog: redfox exited with an error"
        status=1
    elif [ "$got" != "$(cat "$want")" ]; then
        echo "FAIL $prog: output differs from $want:"
        printf '%s\n' "$got" | diff "$want" - || true
        status=1
    else
        echo "ok   $prog"
    fi
done
exit $status
