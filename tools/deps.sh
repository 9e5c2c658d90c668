#!/usr/bin/env bash
# Install the Debian 12 packages a profile needs, only those missing.
#   tools/deps.sh run    build qkbench and run its default suite
#   tools/deps.sh test   everything the test command needs (adds qemu, clang, cross gcc, and Slurm
#                        with munge for the fleet test's single-node cluster; their daemons are not
#                        started here: the test runs its own in a temporary directory)
# Quiet when everything is there; needs root (apt-get) otherwise.
set -euo pipefail
profile=${1:-run}

run_pkgs=(cmake ninja-build gcc g++ make pkg-config git
          libhwloc-dev hwloc libbenchmark-dev libbenchmark-tools libsleef-dev
          python3 python3-matplotlib)
test_pkgs=("${run_pkgs[@]}" qemu-user clang libclang-rt-14-dev llvm
           gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
           slurm-wlm munge)

case "$profile" in
  run) want=("${run_pkgs[@]}") ;;
  test) want=("${test_pkgs[@]}") ;;
  *) echo "deps.sh: unknown profile '$profile' (run or test)" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "deps: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
