#!/usr/bin/env bash
# The aarch64 leg of the test command: cross build, then every test under
# qemu-aarch64 on three CPU models, each with the tier the dispatcher must pick.
#
#   tools/arm.sh [--build-dir DIR] [--jobs N] [--no-setup] [--exclude REGEX] [--timeout S]
#     --exclude: ctest -E REGEX (tests left out of the emulated runs)
#     --timeout: per-test limit in seconds under emulation (default 900)
#
#  1. set-up (only what is missing; silent when all is there; needs root then):
#     gcc/g++-aarch64-linux-gnu, qemu-user, the arm64 architecture in dpkg and
#     the target's libraries through Debian multiarch (libhwloc-dev:arm64,
#     libsleef-dev:arm64, libbenchmark-dev:arm64);
#  2. cmake -S . -B build-arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
#       -DQK_WERROR=ON -DQK_EMULATOR="qemu-aarch64;-L;/usr/aarch64-linux-gnu", and the build;
#  3. ctest in that build, once per CPU model. ctest runs every test binary through
#     CMAKE_CROSSCOMPILING_EMULATOR (qemu-aarch64 -L /usr/aarch64-linux-gnu); the model
#     comes from QEMU_CPU, and QK_EXPECT_TIER names the tier that must be the best usable:
#       cortex-a53 -> neon (Armv8.0: dotprod variants SKIP), cortex-a76 -> neondot,
#       max -> neoni8mm (or neondot if this compiler cannot build the i8mm tier);
#     QK_TEST_QUICK=1 shrinks the long shapes (every tail case stays);
#     bench_emulation is a tiny qkbench bench run under each model: every documented
#     row field, and the EMULATED label in every row, machine.json, gbench.json, the
#     printed table and summary.md (no probe: it takes minutes under qemu);
#  4. qkbench info under each model: it must report the HWCAP features (neon,
#     dotprod, i8mm: present or absent as the model has them), the tier as usable,
#     kernels of that tier among those chosen, and the EMULATED label.
# Ends with "arm.sh: N passed, N failed" and exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

build=build-arm
jobs=$(nproc 2>/dev/null || echo 2)
setup=1
# The statistical accuracy tests lean on double-precision libm, which qemu-user emulates
# about 1000x slower than native (minutes instead of 0.4 s); they run natively in the x86
# steps, and the same code is built here. --exclude '' runs them too.
exclude='^test_acc_(model|split|outliers)$'
timeout=900
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=${2:?--build-dir needs a directory}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
    --no-setup) setup=0; shift ;;
    --exclude) exclude=${2:?--exclude needs a regex}; shift 2 ;;
    --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "arm.sh: unknown option '$1' (see tools/arm.sh --help)" >&2; exit 2 ;;
  esac
done

triple=aarch64-linux-gnu
sysroot=/usr/$triple

# ---- 1. set-up ----
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "arm.sh: '$*' needs root" >&2; return 1
  fi
}
setup_packages() {
  local host_pkgs=(gcc-$triple g++-$triple qemu-user cmake ninja-build pkg-config)
  local target_pkgs=(libhwloc-dev:arm64 libsleef-dev:arm64 libbenchmark-dev:arm64)
  local missing=() p
  for p in "${host_pkgs[@]}"; do installed "$p" || missing+=("$p"); done
  local need_arch=0
  dpkg --print-foreign-architectures | grep -qx arm64 || need_arch=1
  for p in "${target_pkgs[@]}"; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && [ $need_arch -eq 0 ] && return 0
  local why=""
  [ $need_arch -eq 1 ] && why=" (after adding the arm64 architecture to dpkg)"
  echo "arm.sh: installing ${missing[*]}$why"
  if [ $need_arch -eq 1 ]; then as_root dpkg --add-architecture arm64 || return 1; fi
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq || return 1
  as_root apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null || return 1
}
if [ $setup -eq 1 ]; then
  setup_packages || { echo "arm.sh: set-up failed"; echo "arm.sh: 0 passed, 1 failed"; exit 1; }
fi

passed=0
failed=0
step() { # name, command...
  local name=$1 t0=$SECONDS
  shift
  echo "---- $name"
  if "$@"; then
    passed=$((passed + 1))
    echo "---- $name: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1))
    echo "---- $name: FAILED ($((SECONDS - t0)) s)"
  fi
}
finish() {
  echo "arm.sh: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

# ---- 2. cross build ----
configure() {
  mkdir -p "$build" || return 1
  cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake -DQK_WERROR=ON \
    "-DQK_EMULATOR=qemu-aarch64;-L;$sysroot" >"$build/arm-configure.log" 2>&1 ||
    { cat "$build/arm-configure.log"; return 1; }
}
step "aarch64: configure ($build)" configure || true
[ $failed -eq 0 ] || finish
step "aarch64: build" cmake --build "$build" -j "$jobs"
[ $failed -eq 0 ] || finish

# ---- 3. tests under qemu ----
best=neondot
grep -q '^#define QK_HAVE_NEONI8MM 1' "$build/generated/qk_build_config.h" && best=neoni8mm
for ct in cortex-a53:neon cortex-a76:neondot max:$best; do
  cpu=${ct%%:*} tier=${ct#*:}
  step "aarch64 tests: qemu -cpu $cpu (expect $tier)" \
    env QEMU_CPU=$cpu QK_EXPECT_TIER=$tier QK_TEST_QUICK=1 \
    ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout "$timeout" ${exclude:+-E "$exclude"}
done

# ---- 4. qkbench info ----
info_check() { # cpu, tier that must be chosen, then feature=yes|no for each HWCAP feature
  local cpu=$1 tier=$2 out fv
  shift 2
  out=$(QEMU_CPU=$cpu qemu-aarch64 -L "$sysroot" "$build/bench/qkbench" info 2>&1) || { echo "$out"; return 1; }
  echo "$out" | sed -n '/^features/,/^$/p;/^tiers/,/^$/p'
  for fv in "$@"; do
    echo "$out" | grep -Eq "^ +${fv%=*} +cpu:${fv#*=} +os:${fv#*=}" ||
      { echo "qkbench info under -cpu $cpu does not report ${fv%=*} as ${fv#*=}"; return 1; }
  done
  echo "$out" | grep -q "^EMULATED: timings are not this CPU's" || { echo "qkbench info under -cpu $cpu lacks the EMULATED label"; return 1; }
  echo "$out" | grep '^EMULATED'
  echo "$out" | grep -Eq "^ +$tier +usable" || { echo "qkbench info under -cpu $cpu: tier $tier not usable"; return 1; }
  echo "$out" | grep -Eq "__${tier}$" || { echo "qkbench info under -cpu $cpu chose no $tier kernel"; return 1; }
  echo "kernels chosen: $(echo "$out" | grep -Ec '__neon$') neon, $(echo "$out" | grep -Ec '__neondot$') neondot, $(echo "$out" | grep -Ec '__neoni8mm$') neoni8mm, $(echo "$out" | grep -Ec '__scalar$') scalar"
}
if [ -x "$build/bench/qkbench" ]; then
  step "qkbench info: qemu -cpu cortex-a53" info_check cortex-a53 neon neon=yes dotprod=no i8mm=no
  step "qkbench info: qemu -cpu cortex-a76" info_check cortex-a76 neondot neon=yes dotprod=yes i8mm=no
  step "qkbench info: qemu -cpu max" info_check max $best neon=yes dotprod=yes i8mm=yes
else
  echo "---- qkbench was not built (QK_BUILD_BENCH=OFF?): its info check is left out"
fi
finish
