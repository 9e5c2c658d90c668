#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine (as root): install what is
# missing, build the release preset, and run qkbench's default suite.
# Extra arguments go to qkbench (e.g. tools/run.sh info).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh run
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
exec build/release/bench/qkbench "$@"
