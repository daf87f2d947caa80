#!/usr/bin/env python3
"""bench/lib_baseline.py - CuPy/torch baselines for bench/lib.lua (same sizes, same units).

Usage: python3 bench/lib_baseline.py [SCALE]     (SCALE divides every size; default 1)
Prints "name value unit" lines: the best of REPS timed calls after one warm-up, timed
with CUDA events around the call. A library that cannot be imported is skipped with a
printed reason ("# skip ..."), and so is a single benchmark that fails (out of memory,
an unsupported dtype), so one run prints every row it can. The rows that issue 22's
targets compare with bench/lib.lua's: torch_scan_{i32,f32}_ms (torch.cumsum),
torch_compact_i32_ms (masked_select), cupy_sort_{u32,f32,u64}_ms (cupy.sort),
torch_sort_i32_kv_ms (stable sort with indices), cupy_copy_u32_gbps.
"""
import sys

SCALE = int(sys.argv[1]) if len(sys.argv) > 1 else 1
REPS = 5
GIB = 1 << 30


def out(name, value, unit):
    print(f"{name} {value:.3f} {unit}", flush=True)


def guarded(what, fn):
    """Runs one benchmark; a failure prints "# skip WHAT: reason" and the run goes on."""
    try:
        fn()
    except Exception as e:  # out of memory, a dtype the library lacks, ...
        print(f"# skip {what}: {e!r}", flush=True)


def bench_cupy():
    try:
        import cupy as cp
    except Exception as e:  # ImportError, or a CUDA library that does not load
        print(f"# skip cupy: {e!r}", flush=True)
        return

    def best(fn, before=None):
        if before:
            before()
        fn()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        b = float("inf")
        for _ in range(REPS):
            if before:
                before()
            cp.cuda.Device().synchronize()
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            b = min(b, cp.cuda.get_elapsed_time(start, stop) * 1e6)  # ns
        return b

    n = (GIB // 4) // SCALE
    x = cp.arange(n, dtype=cp.float32) / 1024
    ns = best(lambda: x.sum())
    out("cupy_sum_f32_ms", ns / 1e6, "ms")
    out("cupy_sum_f32_gbps", n * 4 / ns, "GB/s")
    ns = best(lambda: x.max())
    out("cupy_max_f32_gbps", n * 4 / ns, "GB/s")
    del x

    n = (256 << 20) // SCALE
    rng = cp.random.default_rng(1)
    src = rng.integers(0, 2**32, size=n, dtype=cp.uint64).astype(cp.uint32)
    dst = cp.empty_like(src)
    ns = best(lambda: cp.cumsum(src, dtype=cp.uint32, out=dst))
    out("cupy_scan_u32_ms", ns / 1e6, "ms")
    out("cupy_scan_u32_gbps", n * 8 / ns, "GB/s")
    out("cupy_scan_u32_gelems", n / ns, "Gelem/s")
    ns = best(lambda: src[(src & 1) == 0])
    out("cupy_compact_u32_ms", ns / 1e6, "ms")
    out("cupy_compact_u32_gbps", n * 4 / ns, "GB/s")
    ns = best(lambda: cp.histogram(src, bins=256, range=(0, 4294967295)))
    out("cupy_histogram256_u32_ms", ns / 1e6, "ms")
    out("cupy_histogram256_u32_gbps", n * 4 / ns, "GB/s")
    ns = best(lambda: cp.copyto(dst, src))
    out("cupy_copy_u32_gbps", n * 8 / ns, "GB/s")
    del src, dst

    n = (64 << 20) // SCALE
    state = {}

    def refill():
        state["k"] = rng.integers(0, 2**32, size=n, dtype=cp.uint64).astype(cp.uint32)

    ns = best(lambda: state["k"].sort(), refill)
    out("cupy_sort_u32_ms", ns / 1e6, "ms")
    out("cupy_sort_u32_mkeys", n / ns * 1e3, "Mkeys/s")
    ns = best(lambda: cp.argsort(state["k"]), refill)
    out("cupy_argsort_u32_ms", ns / 1e6, "ms")

    def sort_f32():
        def refill_f32():
            state["k"] = rng.integers(0, 2**32, size=n, dtype=cp.uint64).astype(
                cp.uint32).view(cp.float32)
        ns = best(lambda: state["k"].sort(), refill_f32)
        out("cupy_sort_f32_ms", ns / 1e6, "ms")
        out("cupy_sort_f32_mkeys", n / ns * 1e3, "Mkeys/s")

    def sort_u64():
        def refill_u64():
            state["k"] = rng.integers(0, 2**63, size=n, dtype=cp.uint64) * 2 + 1
        ns = best(lambda: state["k"].sort(), refill_u64)
        out("cupy_sort_u64_ms", ns / 1e6, "ms")
        out("cupy_sort_u64_mkeys", n / ns * 1e3, "Mkeys/s")

    guarded("cupy sort f32", sort_f32)
    guarded("cupy sort u64", sort_u64)
    state.clear()


def bench_torch():
    try:
        import torch
        if not torch.cuda.is_available():
            print("# skip torch: torch.cuda.is_available() is False", flush=True)
            return
    except Exception as e:
        print(f"# skip torch: {e!r}", flush=True)
        return

    def best(fn, before=None):
        if before:
            before()
        fn()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        b = float("inf")
        for _ in range(REPS):
            if before:
                before()
            torch.cuda.synchronize()
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            b = min(b, start.elapsed_time(stop) * 1e6)
        return b

    # saxpy over 1 GiB of f32 per operand (y = y + a * x, in place): reads x and y,
    # writes y, like bench/bench.lua's saxpy.
    n = (GIB // 4) // SCALE
    x = torch.rand(n, device="cuda", dtype=torch.float32)
    y = torch.rand(n, device="cuda", dtype=torch.float32)
    ns = best(lambda: torch.add(y, x, alpha=2.0, out=y))
    out("torch_saxpy_gbps", n * 12 / ns, "GB/s")
    ns = best(lambda: x.sum())
    out("torch_sum_f32_gbps", n * 4 / ns, "GB/s")
    del x, y

    n = (64 << 20) // SCALE
    state = {}

    def refill():
        state["k"] = torch.randint(0, 2**31 - 1, (n,), device="cuda", dtype=torch.int32)

    # stable key-value sort: the values are the indices
    ns = best(lambda: torch.sort(state["k"], stable=True), refill)
    out("torch_sort_i32_kv_ms", ns / 1e6, "ms")
    out("torch_sort_i32_kv_mkeys", n / ns * 1e3, "Mkeys/s")

    state.clear()
    n = (256 << 20) // SCALE
    v = torch.randint(0, 2**31 - 1, (n,), device="cuda", dtype=torch.int32)
    o = torch.empty_like(v)
    ns = best(lambda: torch.cumsum(v, 0, dtype=torch.int32, out=o))
    out("torch_scan_i32_ms", ns / 1e6, "ms")
    out("torch_scan_i32_gbps", n * 8 / ns, "GB/s")

    def scan_f32():
        f = torch.rand(n, device="cuda", dtype=torch.float32)
        fo = torch.empty_like(f)
        ns = best(lambda: torch.cumsum(f, 0, out=fo))
        out("torch_scan_f32_ms", ns / 1e6, "ms")
        out("torch_scan_f32_gbps", n * 8 / ns, "GB/s")

    guarded("torch cumsum f32", scan_f32)
    del o
    ns = best(lambda: torch.masked_select(v, (v & 1) == 0))
    out("torch_compact_i32_ms", ns / 1e6, "ms")
    out("torch_compact_i32_gbps", n * 4 / ns, "GB/s")


if __name__ == "__main__":
    guarded("cupy", bench_cupy)
    guarded("torch", bench_torch)
