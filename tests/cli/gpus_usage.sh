#!/usr/bin/env bash
# `redfox run --gpus N` (docs/distributed.md): bad uses are refused with a
# usage message and exit 64, writing no output; on a machine without a GPU
# a well-formed run fails with a clear message (exit 2), every rank ended,
# no output directory left behind. (On a GPU machine the device suite runs
# it for real.) Usage: gpus_usage.sh REDFOX
set -u
redfox=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work=$(mktemp -d /tmp/rf_gpus_usage.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
expect() {   # NAME STATUS TEXT -- ARGS...
    local name=$1 want=$2 text=$3
    shift 4
    timeout 60 "$redfox" run "$root/programs/tc.lql" "$@" >"$work/out" 2>"$work/err"
    local rc=$?
    if [ "$rc" = "$want" ] && grep -qF -- "$text" "$work/err" && [ ! -s "$work/out" ]; then
        echo "ok   $name"
    else
        echo "FAIL $name: exit $rc (want $want), stderr: $(head -2 "$work/err")"
        fail=1
    fi
}
expect "--gpus x" 64 "--gpus expects a number of GPUs from 1 to 64, not 'x'" -- --gpus x
expect "--gpus 0" 64 "--gpus expects a number of GPUs from 1 to 64, not '0'" -- --gpus 0
expect "--gpus=65" 64 "not '65'" -- --gpus=65
expect "--gpus last" 64 "--gpus expects a number of GPUs" -- --count --gpus
RF_NCCL_RANK=0 expect "--gpus inside a rank" 64 "--gpus is for the launching process" -- --gpus 2
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q GPU; then
    expect "--gpus 2 without a GPU" 2 "redfox: error: --gpus run:" -- --gpus 2 --output "$work/o"
    if [ -e "$work/o" ]; then
        echo "FAIL --gpus 2 without a GPU left $work/o behind"
        fail=1
    fi
fi
exit $fail
