"""bench/fuse/fuse_baseline.py - torch eager for bench/fuse/fuse.lua's chain:
t1 = a*x, t2 = t1 + y, t3 = max(t2, 0), out = t3*t3 over N f32 (default 256 Mi).
Best of 5 after a warm-up, CUDA events. Prints "name value unit" lines."""
import sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256 * 1024 * 1024
    try:
        import torch
        if not torch.cuda.is_available():
            print("# skip torch: torch.cuda.is_available() is False", flush=True)
            return
    except Exception as e:  # noqa: BLE001 - report any import failure as a skip
        print(f"# skip torch: {e!r}", flush=True)
        return
    i = torch.arange(n, device="cuda", dtype=torch.int64)
    x = (i % 1000).to(torch.float32)
    y = 500.0 - (i % 777).to(torch.float32)
    del i

    def chain():
        t1 = 1.5 * x
        t2 = t1 + y
        t3 = torch.clamp_min(t2, 0.0)
        return t3 * t3

    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    chain()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start.record()
        chain()
        stop.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(stop) * 1e6)
    print(f"torch_chain4_ms {best / 1e6:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
