#!/bin/bash
# gpu-run.sh — everything a GPU session runs, in one call on the device machine:
# device facts, bin/vyre info, every busted spec (gpu-tagged ones included), the
# examples, and the benchmarks. The specs alone take about 7 minutes on an H100 (the
# vyre.lib parity cases compare with the CPU interpreter at 10^6 elements), so run
# them with RUN_BENCH=0 and the benchmarks in a call of their own: one call may run
# 10 minutes. Logs go to $OUT (or ./gpu-out). Expects a build in
# ./build made on this same x86-64 architecture and, where no packages can be
# installed, the offline Lua bundle (.luabundle, see shared/tools/lua-offline-bundle.sh).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
[ -f .luabundle/env.sh ] && . .luabundle/env.sh
. scripts/env.sh
export VYRE_CACHE_DIR=${VYRE_CACHE_DIR:-/tmp/vyre-cache}
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  lua5.4 bin/vyre info
} 2>&1 | tee "$OUT/device.txt"
echo "== specs"
timeout ${SPEC_TIMEOUT:-560} busted --lua=lua5.4 -o utfTerminal ${BUSTED_ARGS:-} spec > "$OUT/specs.txt" 2>&1
echo "busted exit $?"; tail -n 60 "$OUT/specs.txt"
echo "== examples"
for ex in examples/*.lua; do timeout 60 lua5.4 "$ex" 2>&1 | tail -n 2; done | tee "$OUT/examples.txt"
if [ "${RUN_BENCH:-1}" = 1 ]; then
  echo "== bench"
  timeout ${BENCH_TIMEOUT:-180} bash bench/run.sh ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.txt"
fi
