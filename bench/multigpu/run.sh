#!/bin/sh
# run.sh — docs/MULTIGPU.md section 7 on this machine, vyre and its baselines in one
# session: vyre (bench.lua), torch.distributed (torch_allreduce.py, when torch imports)
# and cuMemcpyPeerAsync in C (build/bench/vyre_bench_peer, when built). Prints markdown.
#   sh bench/multigpu/run.sh [N_GPUS]
set -eu
cd "$(dirname "$0")/../.."
. scripts/env.sh
n=${1:-$(lua5.4 -e 'print(require("vyre.cuda").count() or 0)')}
lua5.4 bench/multigpu/bench.lua --gpus "$n"
if python3 -c 'import torch' 2>/dev/null; then
  echo; echo "## baseline: torch.distributed (NCCL)"
  python3 -m torch.distributed.run --nproc-per-node "$n" bench/multigpu/torch_allreduce.py
else
  echo; echo "baseline torch.distributed: not run (python3 cannot import torch)"
fi
if [ -x build/bench/vyre_bench_peer ]; then
  echo; echo "## baseline: cuMemcpyPeerAsync (C)"
  build/bench/vyre_bench_peer $((1 << 30)) 20
else
  echo; echo "baseline cuMemcpyPeerAsync: not run (build/bench/vyre_bench_peer not built: no cuda.h)"
fi
