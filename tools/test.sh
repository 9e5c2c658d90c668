#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine (as root):
#   1. installs the packages it needs (only those missing),
#   2. the -Werror release build: native tests on every tier this CPU has, and the
#      same binaries under qemu-x86_64 -cpu max (AVX2, no AVX-512) and -cpu Nehalem (scalar),
#   3. the AddressSanitizer + UndefinedBehaviorSanitizer build, native tests,
#   4. the aarch64 cross build, tests under qemu-aarch64 on three CPU models.
# Ends with one line "test.sh: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh test || exit 1
jobs=$(nproc 2>/dev/null || echo 2)
passed=0
failed=0
step() { # name, command...
  local name=$1
  shift
  echo "==== $name"
  local t0=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "==== $name: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    echo "==== $name: FAILED ($((SECONDS - t0)) s)"
  fi
}

build() { cmake --preset "$1" >/dev/null && cmake --build --preset "$1" -j "$jobs"; }

step "build (ci: release, -Werror)" build ci
step "tests: native and emulated x86 (ci)" ctest --preset ci -j "$jobs"
step "build (asan: debug, ASan+UBSan)" build asan
step "tests: sanitizers (asan)" ctest --preset asan -j "$jobs"
if [ -x tools/arm.sh ]; then
  step "aarch64: cross build and tests under qemu-aarch64" tools/arm.sh
fi
echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
