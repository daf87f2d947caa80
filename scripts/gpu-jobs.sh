#!/bin/bash
# gpu-jobs.sh — a session's GPU work in one device call: each named job runs on a GPU of
# its own when the machine has several (CUDA_VISIBLE_DEVICES), in waves of as many jobs
# as there are GPUs; `nccl` (every GPU) runs alone after the rest. Output: $OUT/JOB.txt.
#   OUT=dir bash scripts/gpu-jobs.sh JOB...
# Jobs: specs-a / specs-b (the #gpu specs, spec/0-5* and spec/6-9*), backend-ops
# (build/test_backend_ops), lib (bench/lib.lua and bench/lib_baseline.py), mega
# (bench/megakernel/run.sh), launch (bench/run.sh on build-before/tree, then on this
# tree: the launch ratios before and after), eqsat (bench/eqsat/math.lua cuda 12), nccl
# (bench/multigpu/run.sh on 2 GPUs, then on all). Needs the build made here (carry
# build/vyre and the bench binaries) and .luabundle where no packages can be installed.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
[ -f .luabundle/env.sh ] && . .luabundle/env.sh
. scripts/env.sh
export NCCL_NVLS_ENABLE=0 # the GPUs are shared: never NVLink multicast

run_job() {
  local job=$1 cache
  cache=$(mktemp -d)
  export VYRE_CACHE_DIR=$cache
  case $job in
    specs-a) timeout 560 busted --lua=lua5.4 -o utfTerminal --tags=gpu \
      $(ls spec/[0-5]*_spec.lua) ;;
    specs-b) timeout 560 busted --lua=lua5.4 -o utfTerminal --tags=gpu \
      $(ls spec/[6-9]*_spec.lua) ;;
    backend-ops) timeout 300 build/test_backend_ops ;;
    lib) timeout 300 lua5.4 bench/lib.lua && timeout 240 python3 bench/lib_baseline.py ;;
    mega) timeout 560 sh bench/megakernel/run.sh "$OUT/mega" ;;
    launch)
      echo "## before (build-before/tree)"
      (cd build-before/tree && timeout 250 bash bench/run.sh)
      echo "## after (this tree)"
      timeout 250 bash bench/run.sh ;;
    eqsat) timeout 300 lua5.4 bench/eqsat/math.lua cuda 12 ;;
    nccl)
      timeout 200 bash bench/multigpu/run.sh 2
      [ "$(nvidia-smi -L | wc -l)" -gt 2 ] && timeout 250 bash bench/multigpu/run.sh ;;
    *) echo "unknown job $job" ;;
  esac
  echo "exit $?"
  rm -rf "$cache"
}

{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } \
  > "$OUT/device.txt" 2>&1
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$ngpu" -ge 1 ] || ngpu=1
slot=0
last_nccl=0
for job in "$@"; do
  if [ "$job" = nccl ]; then last_nccl=1; continue; fi
  CUDA_VISIBLE_DEVICES=$slot run_job "$job" > "$OUT/$job.txt" 2>&1 &
  slot=$((slot + 1))
  if [ "$slot" -ge "$ngpu" ]; then wait; slot=0; fi
done
wait
if [ "$last_nccl" = 1 ]; then run_job nccl > "$OUT/nccl.txt" 2>&1; fi
for f in "$OUT"/*.txt; do echo "== $f"; tail -n 4 "$f"; done
