#!/bin/sh
# bench/host_launch.sh — the host cost of one launch, in ns, on the fake driver with
# launches that compute nothing (VYRE_FAKECUDA_NOEXEC=1): the plain-C loop
# (cuLaunchKernel), libvyre's C calls, and the Lua forms (by name, bound), for the
# inc and saxpy programs of bench/run.sh. Runs anywhere (no GPU). The columns say what
# each form adds over the plain-C loop on this driver: on a GPU that difference comes
# on top of the ~2-3 us launch floor, so by-name within 1.10x there means about
# 0.2-0.3 us here. Usage: sh bench/host_launch.sh [N] [REPS]   (defaults 100000, 7)
set -eu
cd "$(dirname "$0")/.."
N=${1:-100000}
REPS=${2:-7}
BUILD=${VYRE_BUILD_DIR:-build}
[ -x "$BUILD/bench/vyre_bench_host" ] && [ -f "$BUILD/fakecuda/libcuda.so.1" ] || {
  echo "missing $BUILD/bench/vyre_bench_host or the fake driver: build first"; exit 1; }
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;${LUA_PATH:-;}"
export LUA_CPATH="$PWD/$BUILD/?.so;${LUA_CPATH:-;}"
export VYRE_LIBCUDA="$PWD/$BUILD/fakecuda/libcuda.so.1" VYRE_FAKECUDA_NOEXEC=1
VYRE_CACHE_DIR=$(mktemp -d)
export VYRE_CACHE_DIR
trap 'rm -rf "$VYRE_CACHE_DIR"' EXIT
out="$VYRE_CACHE_DIR/out.txt"
# Two alternating rounds, keeping each number's best: both sides see the same machine.
for _ in 1 2; do
  lua5.4 bench/host_launch.lua "$N" "$REPS" >> "$out"
  "$BUILD/bench/vyre_bench_host" "$N" "$REPS" >> "$out"
done
awk '
  { if (!($1 in v) || $2 < v[$1]) v[$1] = $2 }
  END {
    printf "%-40s %10s %10s %12s\n", "form (ns per launch, host only)", "inc", "saxpy", "over C loop"
    row("plain-C loop: cuLaunchKernel", "c_raw")
    row("C: vyre_cuda_launch", "c_launch")
    row("C: vyre_cuda_launch_prepared", "c_prepared")
    row("C: vyre_backend_launch_prepared", "c_backend")
    row("Lua: k:launch(args, opts) by name", "lua_name")
    row("Lua: l:launch() (k:bind)", "lua_bound")
    row("Lua: l() (k:bind)", "lua_call")
  }
  function row(name, key) {
    printf "%-40s %10.1f %10.1f %5.0f / %4.0f\n", name, v[key "_inc"], v[key "_saxpy"],
      v[key "_inc"] - v["c_raw_inc"], v[key "_saxpy"] - v["c_raw_saxpy"]
  }' "$out"
echo "(fake driver, VYRE_FAKECUDA_NOEXEC=1; best of 2 x $REPS runs of $N launches; last column: ns over the C loop, inc / saxpy)"
