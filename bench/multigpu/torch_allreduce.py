"""torch_allreduce.py — the baseline of vyre's all_reduce (docs/MULTIGPU.md section 7):
torch.distributed with the NCCL backend, one process per GPU, f32 in place, 1 MiB to
--max bytes, the same bus-bandwidth arithmetic as bench/multigpu/bench.lua.

    torchrun --nproc-per-node N bench/multigpu/torch_allreduce.py [--max BYTES] [--iters K]

NVLink multicast stays off (NCCL_NVLS_ENABLE=0 unless set), as in vyre."""
import argparse
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=1 << 30)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    n = dist.get_world_size()
    if rank == 0:
        print(f"# torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
              f"{n} x {torch.cuda.get_device_name(local)}")
        print("\n| all_reduce bytes | time (us) | algbw (GB/s) | busbw (GB/s) |")
        print("|---|---|---|---|")
    size = 1 << 20
    while size <= a.max:
        x = torch.empty(size // 4, dtype=torch.float32, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        t = (time.perf_counter() - t0) / a.iters
        alg = size / t / 1e9
        if rank == 0:
            print(f"| {size} | {t * 1e6:.1f} | {alg:.2f} | {alg * 2 * (n - 1) / n:.2f} |")
        del x
        size *= 4
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
