-- bench/lib.lua — GPU benchmarks of vyre.lib (docs/LIB.md), to compare with
-- bench/lib_baseline.py (CuPy/torch) on the same machine.
-- Usage: lua5.4 bench/lib.lua [SCALE]   (SCALE divides every size; default 1)
-- Prints "name value unit" lines. Each number is the best of REPS timed calls after one
-- warm-up call, timed by the library's _timed variant (device time of its one
-- be:sequence, wall time where the backend reports no device time).
-- Sizes: sum of 1 GiB of f32; exclusive scan of 256 Mi u32 and f32 (single pass, and the
-- reduce-then-scan path for comparison: *_2pass); radix sort of 64 Mi u32, f32 and u64
-- keys and of 64 Mi u32 keys with u32 values; compaction and a 256-bin histogram of 256
-- Mi u32; fill and copy of 1 GiB; segmented reduce of one segment of 10^7 and 10^5
-- segments of 10 against an unsegmented reduce of the same elements. GB/s counts the
-- bytes each primitive must move at least (sum, compaction, histogram: the input once;
-- scan and copy: read + write). The rows of issue 22's targets are compared with
-- bench/lib_baseline.py's: lib_scan_{u32,f32}_ms / torch_scan_{i32,f32}_ms,
-- lib_compact_u32_ms / torch_compact_i32_ms, lib_sort_{u32,f32,u64}_ms /
-- cupy_sort_{u32,f32,u64}_ms, lib_sort_u32_kv_ms / torch_sort_i32_kv_ms,
-- lib_copy_u32_gbps / cupy_copy_u32_gbps; lib_segreduce_mix_ratio is the segmented time
-- over the unsegmented one (target <= 1.5); lib_segscan_mix_ratio the same for the
-- segmented scan, and lib_segscan_mix_vs_scan its time over an unsegmented scan.
local vyre = require("vyre")
local lib = require("vyre.lib")
local onepass = require("vyre.lib.scan_onepass")

local SCALE = tonumber(arg and arg[1] or "") or 1
local REPS = 5

local common = require("bench.common")
local be = common.cuda()
local out = common.out

local function ns_of(t)
  if t.device_ns and t.device_ns > 0 then return t.device_ns end
  return t.wall_ns
end

-- Best time (ns) of REPS calls of fn (returning its value and a timing), after a warm-up;
-- `before` (optional) runs untimed before each call (e.g. to restore unsorted input).
local function best(fn, before)
  if before then before() end
  fn()
  local b = math.huge
  for _ = 1, REPS do
    if before then before() end
    local _, t = fn()
    b = math.min(b, ns_of(t))
  end
  return b
end

-- Pseudo-random u32 values (a hash of the index), generated on the GPU.
local HASH = vyre.parse([[
(program bench_hash (workgroup 256)
  (buffer v u32 write)
  (param seed u32)
  (let i (gid x))
  (let h0 (mul (xor i seed) 2654435761u32))
  (let h1 (xor h0 (shr h0 15u32)))
  (let h2 (mul h1 2246822519u32))
  (let h3 (xor h2 (shr h2 13u32)))
  (let h4 (mul h3 3266489917u32))
  (if (lt i (len v)) (then (store v i (xor h4 (shr h4 16u32))))))
]])
local hash = be:compile(HASH)
local function random_fill(buf, seed)
  hash:launch({ v = buf, seed = seed }, { n = #buf })
  be:synchronize()
end

local GiB = 1 << 30

-- sum of 1 GiB of f32
do
  local n = (GiB // 4) // SCALE
  local x = be:buffer("f32", n)
  lib.iota(be, x, 0.0, 1.0 / 1024)
  local ns = best(function() return lib.reduce_timed(be, x, "add") end)
  out("lib_sum_f32_ms", ns / 1e6, "ms")
  out("lib_sum_f32_gbps", n * 4 / ns, "GB/s")
  ns = best(function() return lib.reduce_timed(be, x, "max") end)
  out("lib_max_f32_gbps", n * 4 / ns, "GB/s")
  x:free()
end

-- exclusive scan of 256 Mi u32
do
  local n = (256 << 20) // SCALE
  local src, dst = be:buffer("u32", n), be:buffer("u32", n)
  random_fill(src, 1)
  local ns = best(function() return lib.scan_timed(be, src, dst, "add", { exclusive = true }) end)
  out("lib_scan_u32_ms", ns / 1e6, "ms")
  out("lib_scan_u32_gbps", n * 8 / ns, "GB/s")
  out("lib_scan_u32_gelems", n / ns, "Gelem/s")
  ns = best(function() return lib.scan_timed(be, src, src, "add") end)
  out("lib_scan_inplace_u32_gbps", n * 8 / ns, "GB/s")
  -- f32 (float add: the serial look-back fold), then both on the reduce-then-scan path
  local fsrc, fdst = be:buffer("f32", n), be:buffer("f32", n)
  lib.iota(be, fsrc, 0.0, 1.0 / 1024)
  ns = best(function() return lib.scan_timed(be, fsrc, fdst, "add", { exclusive = true }) end)
  out("lib_scan_f32_ms", ns / 1e6, "ms")
  out("lib_scan_f32_gbps", n * 8 / ns, "GB/s")
  onepass.config.enabled = false
  ns = best(function() return lib.scan_timed(be, src, dst, "add", { exclusive = true }) end)
  out("lib_scan_u32_2pass_ms", ns / 1e6, "ms")
  ns = best(function() return lib.scan_timed(be, fsrc, fdst, "add", { exclusive = true }) end)
  out("lib_scan_f32_2pass_ms", ns / 1e6, "ms")
  ns = best(function() return lib.compact_timed(be, src, "(eq (and x 1u32) 0u32)", dst) end)
  out("lib_compact_u32_2pass_ms", ns / 1e6, "ms")
  onepass.config.enabled = true
  fsrc:free()
  fdst:free()

  -- compaction of 256 Mi u32 (half kept) and a 256-bin histogram
  ns = best(function() return lib.compact_timed(be, src, "(eq (and x 1u32) 0u32)", dst) end)
  out("lib_compact_u32_ms", ns / 1e6, "ms")
  out("lib_compact_u32_gbps", n * 4 / ns, "GB/s")
  local flags = be:buffer("u32", n)
  random_fill(flags, 7)
  ns = best(function() return lib.compact_timed(be, src, flags, dst) end)
  out("lib_compact_flags_u32_gbps", n * 8 / ns, "GB/s")
  flags:free()
  local bins = be:buffer("u32", 256)
  ns = best(function()
    return lib.histogram_timed(be, src, 256, 0, 4294967295, { out = bins })
  end)
  out("lib_histogram256_u32_ms", ns / 1e6, "ms")
  out("lib_histogram256_u32_gbps", n * 4 / ns, "GB/s")

  -- fill and copy of 1 GiB
  ns = best(function() return lib.fill_timed(be, dst, 3) end)
  out("lib_fill_u32_gbps", n * 4 / ns, "GB/s")
  ns = best(function() return lib.copy_timed(be, src, dst) end)
  out("lib_copy_u32_gbps", n * 8 / ns, "GB/s")
  src:free()
  dst:free()
end

-- radix sort of 64 Mi u32 keys, then keys with u32 values
do
  local n = (64 << 20) // SCALE
  local keys, vals = be:buffer("u32", n), be:buffer("u32", n)
  local sk, sv = be:buffer("u32", n), be:buffer("u32", n)
  local scratch = { scratch = { keys = sk, values = sv } }
  local ns = best(function() return lib.sort_timed(be, keys, scratch) end,
    function() random_fill(keys, 3) end)
  out("lib_sort_u32_ms", ns / 1e6, "ms")
  out("lib_sort_u32_mkeys", n / ns * 1e3, "Mkeys/s")
  ns = best(function() return lib.sort_timed(be, keys, vals, scratch) end,
    function()
      random_fill(keys, 5)
      lib.iota(be, vals)
    end)
  out("lib_sort_u32_kv_ms", ns / 1e6, "ms")
  out("lib_sort_u32_kv_mkeys", n / ns * 1e3, "Mkeys/s")
  -- check the last sort on the way (cheap: a sample of adjacent pairs)
  local k = keys:download({ count = math.min(n, 1 << 20) })
  for i = 2, #k do
    if k[i - 1] > k[i] then
      io.stderr:write(("lib_sort: keys %d and %d are out of order\n"):format(i - 1, i))
      os.exit(1)
    end
  end
  -- f32 keys (the hash's bits as floats, NaNs included) and u64 keys (two hashes)
  local fk = be:buffer("f32", n)
  local fsk = be:buffer("f32", n)
  local bits = be:compile(vyre.parse([[
(program bench_bits (workgroup 256)
  (buffer a u32 read)
  (buffer b u32 read)
  (buffer f f32 write)
  (buffer w u64 write)
  (let i (gid x))
  (if (lt i (len a))
    (then
      (store f i (bitcast f32 (load a i)))
      (store w i (or (shl (cast u64 (load a i)) 32u64) (cast u64 (load b i)))))))
]]))
  local u64k = be:buffer("u64", n)
  local u64s = be:buffer("u64", n)
  local function refill_wide(seed)
    random_fill(keys, seed)
    random_fill(vals, seed + 1)
    bits:launch({ a = keys, b = vals, f = fk, w = u64k }, { n = n })
    be:synchronize()
  end
  ns = best(function() return lib.sort_timed(be, fk, { scratch = { keys = fsk } }) end,
    function() refill_wide(11) end)
  out("lib_sort_f32_ms", ns / 1e6, "ms")
  out("lib_sort_f32_mkeys", n / ns * 1e3, "Mkeys/s")
  ns = best(function() return lib.sort_timed(be, u64k, { scratch = { keys = u64s } }) end,
    function() refill_wide(13) end)
  out("lib_sort_u64_ms", ns / 1e6, "ms")
  out("lib_sort_u64_mkeys", n / ns * 1e3, "Mkeys/s")
  fk:free()
  fsk:free()
  u64k:free()
  u64s:free()
end

-- segmented reduce, load balance: one segment of 10^7 and 10^5 segments of 10, against an
-- unsegmented reduce of the same 1.1 * 10^7 elements (issue 22 §4: ratio <= 1.5)
do
  local long, short, nshort = 10000000 // SCALE, 10, 100000 // SCALE
  local n = long + short * nshort
  local values = be:buffer("f32", n)
  lib.iota(be, values, 0.0, 1.0 / 1024)
  local offs = { 0, long }
  for s = 1, nshort do offs[#offs + 1] = long + s * short end
  local offsets = be:buffer("u32", offs)
  local outb = be:buffer("f32", #offs - 1)
  local seg = best(function() return lib.segmented_reduce_timed(be, values, offsets, outb) end)
  local flat = best(function() return lib.reduce_timed(be, values, "add") end)
  out("lib_segreduce_mix_ms", seg / 1e6, "ms")
  out("lib_reduce_mix_ms", flat / 1e6, "ms")
  out("lib_segreduce_mix_ratio", seg / flat, "x")
  local dst = be:buffer("f32", n)
  seg = best(function() return lib.segmented_scan_timed(be, values, offsets, dst) end)
  out("lib_segscan_mix_ms", seg / 1e6, "ms")
  out("lib_segscan_mix_ratio", seg / flat, "x")
  -- the load-balanced segmented scan (segmented_scan_lb.lua) against an unsegmented scan
  -- of the same elements, which moves as many bytes (read n, write n)
  local sflat = best(function() return lib.scan_timed(be, values, dst, "add") end)
  out("lib_scan_mix_ms", sflat / 1e6, "ms")
  out("lib_segscan_mix_vs_scan", seg / sflat, "x")
end
