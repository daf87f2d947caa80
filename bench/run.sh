#!/bin/bash
# bench/run.sh — runs every CUDA benchmark (Lua side and plain-C baseline, same
# process per side, same machine, same run) and prints a table with ratios.
# Usage: bash bench/run.sh [N] [SAXPY_BYTES]     (defaults 100000, 1073741824)
# Needs a build with the module and the baseline: cmake -S . -B build && cmake --build build
set -eu
cd "$(dirname "$0")/.."
N=${1:-100000}
BYTES=${2:-1073741824}
BUILD=${VYRE_BUILD_DIR:-build}
export LUA_PATH="$PWD/lua/?.lua;$PWD/lua/?/init.lua;${LUA_PATH:-;}"
export LUA_CPATH="$PWD/$BUILD/?.so;${LUA_CPATH:-;}"
C="$BUILD/bench/vyre_bench_c"
[ -x "$C" ] || { echo "missing $C: build first (cmake --build $BUILD)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Three alternating rounds (Lua, then C), keeping each number's best: the two sides
# see the same machine state, and one-off stalls do not decide a ratio.
: > "$tmp/lua.txt"; : > "$tmp/c.txt"
for round in 1 2 3; do
  if ! lua5.4 bench/bench.lua "$tmp" "$N" "$([ "$round" = 1 ] && echo "$BYTES" || echo 0)" \
       >> "$tmp/lua.txt" 2> "$tmp/lua.err"; then
    echo "Lua benchmarks did not run: $(cat "$tmp/lua.err")"; exit 2
  fi
  "$C" launch "$tmp/inc.ptx" "$N" >> "$tmp/c.txt"
  "$C" enqueue "$tmp/inc.ptx" "$N" >> "$tmp/c.txt"
  "$C" roundtrip "$tmp/inc.ptx" $((N / 10 > 100 ? N / 10 : 100)) >> "$tmp/c.txt"
  "$C" graph "$tmp/inc.ptx" "$N" >> "$tmp/c.txt"
  if [ "$round" = 1 ]; then "$C" saxpy "$tmp/saxpy.ptx" "$BYTES" >> "$tmp/c.txt"; fi
done
cat "$tmp/lua.txt" "$tmp/c.txt" | awk '
  { if (!($1 in v)) v[$1] = $2
    else if ($1 ~ /_ns$/ && $2 < v[$1]) v[$1] = $2
    else if ($1 ~ /_gbps$/ && $2 > v[$1]) v[$1] = $2 }
  END {
    printf "%-34s %14s %14s %10s\n", "benchmark", "vyre (Lua)", "plain C", "ratio"
    row("(a) k:launch CPU ns (enqueue floor)", "lua_enqueue_ns", "c_enqueue_ns")
    row("(a2) bound l:launch() CPU ns", "lua_bound_enqueue_ns", "c_enqueue_ns")
    row("(a3) k:launch, 100k back to back", "lua_launch_ns", "c_launch_ns")
    row("(a4) l:launch(), 100k back to back", "lua_bound_launch_ns", "c_launch_ns")
    row("(b) 4 KiB up+launch+down+sync, ns", "lua_roundtrip_ns", "c_roundtrip_ns")
    row("(c) graph replay, ns per launch", "lua_graph_ns", "c_graph_ns")
    printf "%-34s %14.1f %14.1f %10.3f\n", "(d) saxpy GB/s vs C DtoD copy GB/s", \
      v["lua_saxpy_gbps"], v["c_copy_gbps"], v["lua_saxpy_gbps"] / v["c_copy_gbps"]
    printf "%-34s %14.1f %14.1f %10.3f\n", "    saxpy GB/s, Lua vs C kernel", \
      v["lua_saxpy_gbps"], v["c_saxpy_gbps"], v["lua_saxpy_gbps"] / v["c_saxpy_gbps"]
  }
  function row(name, a, b) { printf "%-34s %14.1f %14.1f %10.3f\n", name, v[a], v[b], v[a] / v[b] }'
echo "(ratios: vyre / plain C for times, fraction of copy bandwidth for (d); N=$N, bytes=$BYTES)"
