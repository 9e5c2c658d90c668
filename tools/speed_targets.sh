#!/usr/bin/env bash
# The x86 speed targets (issue 3 / DESIGN §7) on this machine, in four qkbench
# bench runs, each writing its own results folder (summary.md has the best
# variant per op and mode with its % of roofline, and the tiers side by side):
#   decode   gemv 1x4096x14336 and 1x14336x4096, weights in DRAM (cold), 1 and all cores
#   prefill  gemm M = 64 and 512 on the same weights, 1 thread, every SIMD tier
#   convert  quantize / dequantize 1024x4096 from DRAM (cold) and 16x4096 from L2 (warm),
#            on g = 32, 128 and K (per channel); not 1024x4096 warm (16 MiB sits at the
#            L3/DRAM edge) nor 16x4096 cold (too small to stream)
#   other    the ops without targets of their own: actquant of the prefill activations
#            (64x4096, 64x14336) and the pack functions of the prefill weights, 1 thread
# Cold rows give two fractions: of the cached probe's DRAM (roofline) and of a plain
# read of their own buffers right around them (of read), which is what DRAM gave then;
# cold conversions also of a plain stream of their own reads and writes (of stream, their
# target: a dequantize's bytes are mostly writes); warm conversions from L2: of the probe's
# L2 and of a read of their cached buffers.
# Then tools/speed_targets.py reads the four folders and prints every target's cells (bold:
# missed), then every op and mode without a target (from the decode, prefill and other runs),
# also written to speed_targets.md in the prefill folder.
# A run that met a slow core (its core check before or after its cases, or the peak loop
# beside a quarter of its warm compute-bound rows' calls, or the read of their own buffers
# beside a quarter of its warm conversions from L2, under 90% of the probe's: its summary.md says
# "this run met a slow core"; the warm rows' fractions are against the probe) is run again,
# up to QK_TARGET_TRIES runs in all (default 3); the tables use the first run that is not
# slow, or else the least slow, and list the runs made again. Their folders stay.
# Build first (tools/run.sh builds the release preset); QKBENCH names another binary. Extra
# arguments go to every run (e.g. --reps 3, --results DIR). Takes about 20 minutes on 2 cores
# (19 on f2e8e8a46b), more for each run made again.
set -euo pipefail
cd "$(dirname "$0")/.."
q=${QKBENCH:-build/release/bench/qkbench}
tries=${QK_TARGET_TRIES:-3}
[[ $tries =~ ^[1-9][0-9]*$ ]] || { echo "speed_targets: QK_TARGET_TRIES must be a whole number >= 1, not '$tries'" >&2; exit 2; }
[ -x "$q" ] || { echo "speed_targets: build first (cmake --preset release && cmake --build --preset release)" >&2; exit 2; }
simd='__(avx2|avxvnni|avx512|avx512vnni)$'
# each run names its folder ("results: DIR"), shown on stderr too; the last step reads the
# three. (Not `tee /dev/stderr`: that reopens a redirected stderr's file, truncating the log.)
run() {
  local out
  out=$("$q" bench --quiet "$@") || return 1
  printf '%s\n' "$out" >&2
  printf '%s\n' "$out" | sed -n 's/^results: //p' | tail -n 1
}
replaced=()
# run_kept KIND ARGS...: run, and again while the run met a slow core; the folder kept in $kept
run_kept() {
  local kind=$1 best="" bestp=-1 d c p i rc
  shift
  kept=""
  for ((i = 1; i <= tries; i++)); do
    d=$(run "$@")
    [ -n "$d" ] || return 0
    c=$(python3 tools/speed_targets.py --check-core "$d") && rc=0 || rc=$?
    if ((rc == 0)); then
      kept=$d
      return 0
    fi
    ((rc == 1)) || exit 2 # the folder could not be read (speed_targets.py said why)
    p=${c%% *}
    echo "speed_targets: the $kind run $d met a slow core (${c#* } at $p% of the probe's)" >&2
    replaced+=("$kind: \`$(basename "$d")\`, ${c#* } at $p% of the probe's")
    if ((p > bestp)); then best=$d bestp=$p; fi
  done
  kept=$best
  replaced+=("$kind: every run met a slow core; the tables use the least slow, \`$(basename "$best")\`")
}
run_kept decode --shape 4096x14336 --shape 14336x4096 --group 32,128 --threads 1,2 --cache cold --filter '^gemv/' "$@"
dec=$kept
run_kept prefill --shape 64x4096x14336 --shape 512x4096x14336 --shape 64x14336x4096 --shape 512x14336x4096 \
    --group 32,128 --threads 1 --cache warm --filter "^gemm/.*$simd" "$@"
pre=$kept
run_kept convert --shape 1024x4096 --shape 16x4096 --group 32,128,K --threads 1 --cache both \
    --filter '^(quantize|dequantize)/.*/(1024x4096/t1/cold|16x4096/t1/warm)/' "$@"
conv=$kept
run_kept other --shape 64x4096x14336 --shape 64x14336x4096 --group 32,128 --threads 1 --cache warm \
    --filter "^(actquant|pack)/.*$simd" "$@"
oth=$kept
[ -n "$dec" ] && [ -n "$pre" ] && [ -n "$conv" ] && [ -n "$oth" ] || { echo "speed_targets: a run saved no results (--no-save?)" >&2; exit 0; }
# the targets, cell by cell, from those folders: printed and kept beside the prefill run's summary
args=(--decode "$dec" --prefill "$pre" --convert "$conv" --other "$oth")
for r in "${replaced[@]}"; do args+=(--replaced "$r"); done
python3 tools/speed_targets.py "${args[@]}" >"$pre/speed_targets.md.tmp"
mv "$pre/speed_targets.md.tmp" "$pre/speed_targets.md"
cat "$pre/speed_targets.md"
