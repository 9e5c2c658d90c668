#!/bin/sh
# qkbench accuracy, sweep and depth end to end: on generated data, on the
# safetensors and .npy files write_fixture wrote, and on bad input (exit 2
# with a message that names the problem).
# usage: cli_test.sh QKBENCH FIXTURE_DIR OUT_DIR
set -u
Q=$1 D=$2 O=$3
mkdir -p "$O"
fail=0 LAST=""
run() { # EXPECTED_EXIT DESCRIPTION COMMAND...
    want=$1 what=$2
    shift 2
    LAST=$("$@" 2>&1)
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL: $what: exit $rc, expected $want: $*"
        echo "$LAST" | tail -15
        fail=1
    else
        echo "ok:   $what"
    fi
}
expect() { # SUBSTRING: in the output of the last run
    case "$LAST" in
    *"$1"*) ;;
    *) echo "FAIL: the output lacks '$1'"; echo "$LAST" | tail -15; fail=1 ;;
    esac
}
exists() { [ -s "$1" ] || { echo "FAIL: $1 missing or empty"; fail=1; }; }

for c in accuracy sweep depth; do run 0 "$c --help" "$Q" "$c" --help; done

run 0 "accuracy, generated data" "$Q" accuracy --shape 2x96x256 --group 32,K --csv "$O/acc.csv"
expect "quantization error"; expect "decomposition"; expect "seed 42"
exists "$O/acc.csv"
rows=$(($(wc -l < "$O/acc.csv") - 1))
[ "$rows" -ge 20 ] || { echo "FAIL: acc.csv has $rows rows"; fail=1; }

run 0 "accuracy, safetensors weights and activations" "$Q" accuracy --weights "$D/model.safetensors:blocks.0.w1" \
    --acts "$D/model.safetensors:acts" --format w4s,q4_0 --group 32 --json "$O/acc_st.json"
expect "blocks.0.w1"; expect "BF16"
exists "$O/acc_st.json"
run 0 "accuracy, every 2-D tensor of a file" "$Q" accuracy --weights "$D/model.safetensors" --format w8s --group 32 --mode W8A8
expect "blocks.1.w2"
run 0 "accuracy, .npy activations" "$Q" accuracy --weights "$D/model.safetensors:blocks.1.w1" --acts "$D/acts.npy" --format w4a --group K
run 0 "accuracy, output head" "$Q" accuracy --head --shape 4x512x256 --format w4s --group 32 --mode W4A8,W4A4
expect "top1flip"
run 0 "accuracy, outlier activations" "$Q" accuracy --shape 2x64x256 --act-dist outlier --outlier-alpha 30 --format w8s --group 32
run 0 "accuracy, generation rate" "$Q" accuracy --gen-rate --gen-mb 2
expect "MB/s"

run 0 "sweep" "$Q" sweep --shape 1x128x256 --min-time 0 --reps 1 --format w4s,q8_0 --group 32,K --out "$O/sweep"
expect "GB/s"
exists "$O/sweep/sweep.csv"; exists "$O/sweep/sweep.json"; exists "$O/sweep/sweep.svg"
run 0 "accuracy --outliers" "$Q" accuracy --outliers --shape 4x64x512 --calib-rows 32 --no-timing --out "$O/outl"
expect "exact match"; expect "recovery"
exists "$O/outl/outliers.csv"; exists "$O/outl/outliers.json"; exists "$O/outl/outliers.svg"
run 0 "sweep --outliers (every tier)" "$Q" sweep --outliers --shape 4x64x512 --calib-rows 32 --min-time 0 --out "$O/sweepo"
expect "tiers:"; expect "rotate"
exists "$O/sweepo/sweep_outliers.csv"; exists "$O/sweepo/sweep_outliers.json"; exists "$O/sweepo/sweep_outliers.svg"
# every tier times every strategy on every data set: the same number of rows per tier, scalar among them
awk -F, 'NR > 1 { n[$2]++ } END { for (t in n) { if (c && n[t] != c) bad = 1; c = n[t] }; exit !(!bad && ("scalar" in n) && c % 7 == 0) }' \
    "$O/sweepo/sweep_outliers.csv" || { echo "FAIL: sweep_outliers.csv: tiers with different row counts, or no scalar rows"; fail=1; }
run 2 "sweep --outliers, bad --min-time" "$Q" sweep --outliers --min-time -1
expect "--min-time"
run 0 "sweep, safetensors weights" "$Q" sweep --weights "$D/model.safetensors:blocks.0.w2" --min-time 0 --reps 1 --format q4_0

run 0 "depth, generated" "$Q" depth --layers 3 --dim 128 --ffn 256 --tokens 4 --config w4s:32:W4A8,w8s:K:W8A32 --csv "$O/depth.csv"
expect "after 3 layers"
exists "$O/depth.csv"
run 0 "depth, safetensors weights" "$Q" depth --weights "$D/model.safetensors" --tokens 4 --config w4s:32:W4A8
expect "2 blocks"

run 2 "group that does not divide K" "$Q" accuracy --shape 1x64x100 --group 64
expect "K=100 is not a multiple of group size 64"
run 2 "unknown option" "$Q" accuracy --bogus
expect "unknown option '--bogus'"
run 2 "bad shape" "$Q" sweep --shape 4x0x8
expect "--shape"
run 2 "overlapping tensors" "$Q" accuracy --weights "$D/bad.safetensors"
expect "overlap"
run 2 "no such tensor" "$Q" accuracy --weights "$D/model.safetensors:nope"
expect "no tensor named 'nope'"
run 2 "missing file" "$Q" accuracy --weights "$D/missing.safetensors"
expect "cannot open"
run 2 "K mismatch" "$Q" accuracy --weights "$D/model.safetensors:blocks.0.w2" --acts "$D/acts.npy"
expect "K=128"
run 2 "bad nu" "$Q" accuracy --dist t --nu 0.5
expect "nu"
run 2 "mode that does not take the format" "$Q" depth --config w8s:32:W4A8
run 2 "bad repetitions" "$Q" sweep --reps 0
run 2 "depth names not in the file" "$Q" depth --weights "$D/model.safetensors" --w1 "x.{}.y"
expect "no tensor 'x.0.y'"

[ $fail -eq 0 ] && echo "accuracy CLI: all checks passed"
exit $fail
