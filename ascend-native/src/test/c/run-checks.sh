#!/usr/bin/env bash
# Builds libmoemesh_kernels (src/main/c) and contract_check.c into ascend-native/target/c-checks/<arch>/ and runs the
# check: natively, or with --cross aarch64 as an aarch64 binary under qemu-user (Java does not run there, so this is
# what keeps the portable C honest on ARM). Exits with the check's status: 0 all passed, 1 a check failed, 2 missing
# tools or a failed build.
#
#   src/test/c/run-checks.sh                   # native (x86-64 or aarch64), portable path (MK_ISA_PORTABLE)
#   src/test/c/run-checks.sh --cross aarch64   # aarch64-linux-gnu-gcc, run under qemu-aarch64
#   MK_CHECK_ISA=0,3 src/test/c/run-checks.sh  # the same checks on these paths (MK_ISA_*; a path the CPU lacks is skipped)
#
# Environment: CC (default cc, or aarch64-linux-gnu-gcc with --cross), QEMU (default qemu-aarch64), SYSROOT (default
# /usr/aarch64-linux-gnu), TIMEOUT (seconds for the run, default 900).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
native=$(cd "$here/../../.." && pwd) # ascend-native
csrc=$native/src/main/c
runner=()
case "${1:-}" in
  --cross)
    [[ ${2:-} == aarch64 ]] || { echo "run-checks: only --cross aarch64 is supported" >&2; exit 2; }
    arch=aarch64 cc=${CC:-aarch64-linux-gnu-gcc} qemu=${QEMU:-qemu-aarch64} sysroot=${SYSROOT:-/usr/aarch64-linux-gnu}
    missing=()
    command -v "$cc" >/dev/null || missing+=("$cc (Debian package gcc-aarch64-linux-gnu)")
    [[ -e $sysroot/include/stdio.h ]] || missing+=("aarch64 libc headers in $sysroot (package libc6-dev-arm64-cross)")
    command -v "$qemu" >/dev/null || missing+=("$qemu (package qemu-user)")
    if ((${#missing[@]})); then
      printf 'run-checks: cannot build and run for aarch64; missing:\n' >&2
      printf '  - %s\n' "${missing[@]}" >&2
      exit 2
    fi
    runner=("$qemu" -L "$sysroot")
    ;;
  '') arch=$(uname -m | sed -e 's/amd64/x86_64/' -e 's/arm64/aarch64/') cc=${CC:-cc} ;;
  *) echo "run-checks: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
esac

scratch=$native/target/c-checks/$arch
rm -rf "$scratch" # a fresh build: objects of an earlier one must not hide a broken rule
mkdir -p "$scratch/obj"
# ARCH on make's command line overrides the Makefile's `uname -m`, so a cross build leaves out the x86-only sources.
if ! timeout 900 make -C "$csrc" -j2 CC="$cc" ARCH="$arch" OUT="$scratch/lib" OBJ="$scratch/obj" >"$scratch/make.log" 2>&1; then
  tail -n 20 "$scratch/make.log" >&2
  echo "run-checks: building the library failed (log: $scratch/make.log)" >&2
  exit 2
fi
# The check links the objects (not the .so), so it runs under qemu without a library path; it also dlopen()s the .so
# as its first check, the way the JVM loads it.
timeout 300 "$cc" -std=c11 -O2 -ffp-contract=off -Wall -Wextra -Werror=implicit-function-declaration -I"$csrc/include" \
  -I"$here" -o "$scratch/contract_check" "$here"/*.c "$scratch"/obj/*.o -lm -ldl -pthread
IFS=, read -r -a paths <<<"${MK_CHECK_ISA:-0}"
for isa in "${paths[@]}"; do
  echo "run-checks: $arch${runner:+ under ${runner[0]}}: running contract_check on path $isa"
  MK_CHECK_ISA=$isa timeout "${TIMEOUT:-900}" "${runner[@]}" "$scratch/contract_check" "$scratch/lib/linux-$arch/libmoemesh_kernels.so"
done
