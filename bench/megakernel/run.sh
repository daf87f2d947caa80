#!/bin/sh
# bench/megakernel/run.sh OUT_DIR [run.lua arguments...] — the megakernel benchmark on a
# GPU machine, from the repository root after `. scripts/env.sh`:
#   1. builds bench/megakernel/cg_barrier.cu with nvcc (the cooperative-groups barrier
#      baseline) and runs it into OUT_DIR/cg_barrier.txt; says so when nvcc is absent;
#   2. runs bench/megakernel/run.lua --out OUT_DIR (the workloads in every mode), which
#      writes OUT_DIR/megakernel.md and, with megakernel samples, OUT_DIR/speedup_gate.csv;
#   3. appends the cooperative-groups numbers to OUT_DIR/megakernel.md.
# Exit status: run.lua's (0 = every check passed and the modes agree).
set -u
out=${1:?usage: bench/megakernel/run.sh OUT_DIR [run.lua arguments]}
shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

nvcc_bin=$(command -v nvcc || true)
if [ -z "$nvcc_bin" ] && [ -x /usr/local/cuda/bin/nvcc ]; then nvcc_bin=/usr/local/cuda/bin/nvcc; fi
if [ -n "$nvcc_bin" ]; then
  echo "nvcc: $nvcc_bin ($("$nvcc_bin" --version | tail -1))" > "$out/cg_barrier.txt"
  if "$nvcc_bin" -O3 -arch=native -o "$out/cg_barrier" "$here/cg_barrier.cu" 2>> "$out/cg_barrier.txt"; then
    "$out/cg_barrier" >> "$out/cg_barrier.txt" 2>&1 || echo "cg_barrier: exit $?" >> "$out/cg_barrier.txt"
    rm -f "$out/cg_barrier"
  else
    echo "cg_barrier: nvcc failed" >> "$out/cg_barrier.txt"
  fi
else
  echo "nvcc: not found (no cooperative-groups baseline)" > "$out/cg_barrier.txt"
fi
cat "$out/cg_barrier.txt"

lua5.4 "$here/run.lua" --out "$out" "$@"
rc=$?
if [ -f "$out/megakernel.md" ]; then
  {
    echo
    echo "CUDA C cooperative groups, cg::this_grid().sync() (bench/megakernel/cg_barrier.cu):"
    echo
    sed 's/^/    /' "$out/cg_barrier.txt"
  } >> "$out/megakernel.md"
fi
exit $rc
