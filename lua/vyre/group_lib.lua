-- vyre.group_lib — vyre.lib over a vyre.Group (docs/MULTIGPU.md, "Primitives over a
-- group"): lib.reduce(g, bufs [, op]) and lib.scan(g, src, dst [, op] [, {exclusive}])
-- treat the group's buffers, in rank order, as one array. Each device runs the
-- one-device primitive on its part; what crosses devices is one scalar per rank, moved
-- by an exact all_gather (one process per GPU) or read directly (one process) and
-- combined on the host in rank order with the element type's arithmetic (integers wrap,
-- f32 rounds to f32 after every step). So the result is the same on every run and every
-- rank, whatever NCCL's algorithm; for integers, min and max it equals the one-device
-- result over the concatenation, for float add it differs from it only by the order of
-- the partial sums (ranks, then chunks).
local core = require("vyre.core")
local Err = require("vyre.errors")

local M = {}

local NUM = { i32 = true, u32 = true, i64 = true, u64 = true, f32 = true, f64 = true }

local function raise(name, what, fix, code)
  Err.raise(code or "arg", ("vyre.lib.%s: %s. Fix: %s"):format(name, what, fix), 3)
end

--- true when x is a vyre.Group.
function M.is_group(x)
  local mt = getmetatable(x)
  return type(x) == "userdata" and mt ~= nil and mt.__name == "vyre.Group"
end

-- One list entry per local device: the list itself, or a lone Buffer when one.
local function parts(name, g, list, what)
  local n = #g.backends
  if type(list) ~= "table" then
    if n == 1 and list ~= nil then return { list } end
    raise(name, ("%s must be a list of Buffers, one per entry of g.backends"):format(what),
      "pass {buf_on_dev1, buf_on_dev2, ...}")
  end
  if #list ~= n then
    raise(name, ("%s has %d Buffers but the group drives %d devices here"):format(what, #list, n),
      "one Buffer per entry of g.backends, in that order")
  end
  return list
end

-- a op b in type t's arithmetic.
local function combine(t, op, a, b)
  if op == "min" then return math.min(a, b) end
  if op == "max" then return math.max(a, b) end
  local s = a + b
  if t == "u32" then return s & 0xffffffff end
  if t == "i32" then
    s = s & 0xffffffff
    return s >= 0x80000000 and s - 0x100000000 or s
  end
  if t == "f32" then return (string.unpack("<f", string.pack("<f", s))) end
  return s -- i64, u64 (Lua integers wrap), f64
end

-- Every rank's partial, in rank order: read here (one process) or gathered (several).
local function all_partials(g, t, mine)
  if g.size == #g.backends then return mine end
  local be = g.backends[1]
  local one = be:buffer(t, { mine[1] })
  local all = be:buffer(t, g.size)
  g:all_gather(one, all)
  g:synchronize()
  local out = all:download():totable()
  one:free()
  all:free()
  return out
end

-- The devices run at once and one wait covers them all, so the group's device time is
-- not told apart from the wall time: device_ns is the wall time (an upper bound), and
-- per (one-device timings, the one-process-per-GPU sort's) raises it where larger.
local function timing_of(t0, per)
  local wall = core.now_ns() - t0
  local dev = wall
  for _, t in ipairs(per or {}) do dev = math.max(dev, t.device_ns or 0) end
  return { wall_ns = wall, device_ns = dev, enqueue_ns = wall, wait_ns = 0 }
end

-- The one-device reduction's launches (the same kernels and order as lib.reduce(be, buf),
-- so each partial is bit for bit the one-device result) into a 1-element result buffer.
local function reduce_steps(be, b, op, steps)
  local R, U = require("vyre.lib.reduce"), require("vyre.lib.util")
  local res = U.scratch(be, "group_reduce_res", b.type, 1)
  R.steps(be, b.type, op, b, b.count, res, steps)
  return res
end

-- Each device's partial of op over buf (nil for an empty one), every device's launches
-- enqueued on its own stream before one wait for them all (g:sequence), so the devices
-- run at once. extra(i, steps) may append more of device i's steps after its reduction.
local function partials(g, bufs, op, extra)
  local lists, res = {}, {}
  for i, b in ipairs(bufs) do
    local steps = {}
    if b.count > 0 then res[i] = reduce_steps(g.backends[i], b, op, steps) end
    if extra then extra(i, steps) end
    lists[i] = steps
  end
  g:sequence(lists)
  local out = {}
  for i = 1, #bufs do
    if res[i] then out[i] = res[i]:download({ count = 1 }):totable()[1] end
  end
  return out
end

--- lib.reduce(g, bufs [, op]) -> Lua scalar over every element of every rank.
function M.reduce(name, timed, g, bufs, op)
  op = op or "add"
  require("vyre.lib.util").check_op(name, op, { "add", "min", "max" })
  bufs = parts(name, g, bufs, "bufs")
  local t0 = core.now_ns()
  local t = type(bufs[1]) == "userdata" and bufs[1].type or nil
  for i, b in ipairs(bufs) do
    require("vyre.lib.util").check_buffer(name, g.backends[i], b, ("bufs[%d]"):format(i))
    if b.type ~= t then
      raise(name, ("bufs[%d] is %s but bufs[1] is %s"):format(i, b.type, t),
        "every device's buffer has one type")
    end
    if op ~= "add" and b.count == 0 then
      raise(name, ("bufs[%d] is empty, and %s of nothing has no value"):format(i, op),
        "give every rank at least one element for min or max")
    end
  end
  if not NUM[t] then raise(name, "bool buffers do not reduce here", "use u32 0/1 values") end
  local mine = partials(g, bufs, op)
  for i = 1, #bufs do
    if mine[i] == nil then mine[i] = (t == "f32" or t == "f64") and 0.0 or 0 end
  end
  local all = all_partials(g, t, mine)
  local acc = all[1]
  for r = 2, #all do acc = combine(t, op, acc, all[r]) end
  -- One wait covers every device, so the wall time is the group's device time too.
  if timed then return acc, timing_of(t0) end
  return acc
end

local OFFSET = [[
(program group_offset_%s_%s (workgroup 256)
  (buffer d %s read_write)
  (param c %s)
  (let i (gid x))
  (if (lt i (len d)) (then (store d i (%s (load d i) c)))))]]

-- Cached per backend with vyre.lib's kernels (lib.release drops them too).
local function offset_kernel(be, t, op)
  return require("vyre.lib.util").kernel(be, "group_offset:" .. t .. ":" .. op, function()
    return OFFSET:format(t, op, t, t, op)
  end)
end
M.OFFSET = OFFSET

--- lib.scan(g, src, dst [, op] [, {exclusive = bool}]) -> dst: the scan of the
--- concatenation of the ranks' src (rank order) into their dst.
function M.scan(name, timed, g, src, dst, op, opts)
  local lib = require("vyre.lib")
  if type(op) == "table" and opts == nil then op, opts = nil, op end
  op = op or "add"
  src = parts(name, g, src, "src")
  dst = parts(name, g, dst, "dst")
  local t0 = core.now_ns()
  local t = src[1].type
  if not NUM[t] then raise(name, "bool buffers do not scan", "use u32 0/1 values") end
  local excl = type(opts) == "table" and opts.exclusive == true
  for i = 1, #src do
    -- the one-device checks (types, lengths, overlap, options), nothing enqueued
    lib.steps.scan(g.backends[i], src[i], dst[i], op, opts)
  end
  -- Every device's total (taken before its scan: the scan may work in place) and its
  -- local scan, enqueued on every device before one wait.
  local S = require("vyre.lib.scan")
  local totals = partials(g, src, op, function(i, steps)
    if src[i].count > 0 then
      S.steps(g.backends[i], t, op, excl, src[i], dst[i], src[i].count, steps)
    end
  end)
  -- A rank with no elements contributes nothing: its total is the op's identity.
  local have = {}
  for i = 1, #src do have[i] = totals[i] ~= nil and 1 or 0 end
  local gathered = all_partials(g, t, { totals[1] or 0 })
  local flags = all_partials(g, "u32", { have[1] })
  if g.size == #g.backends then gathered, flags = totals, have end
  local first = g.rank
  for i = 1, #src do
    local r = first + i - 1 -- this device's rank
    local off
    for q = 1, r do
      if flags[q] == 1 then off = off == nil and gathered[q] or combine(t, op, off, gathered[q]) end
    end
    if off ~= nil and dst[i].count > 0 then
      local k = offset_kernel(g.backends[i], t, op)
      if t == "f32" then off = (string.unpack("<f", string.pack("<f", off))) end
      k:launch({ d = dst[i], c = off })
    end
  end
  g:synchronize()
  if timed then return dst, timing_of(t0) end
  return dst
end

-- ---- sort: a sample sort over the devices of one process -------------------------

-- The unsigned image of a key's bits that lib.sort orders by (lib/sort.lua), as a Lua
-- integer compared with math.ult: the host picks splitters in the devices' order.
local function image(t, bits)
  if t == "i32" then return bits ~ 0x80000000 end
  if t == "i64" then return bits ~ math.mininteger end
  if t == "f32" then
    return bits & 0x80000000 ~= 0 and (~bits) & 0xffffffff or bits | 0x80000000
  end
  if t == "f64" then return bits < 0 and ~bits or bits ~ math.mininteger end
  return bits -- u32, u64
end

local WIDE = { i64 = true, u64 = true, f64 = true }

-- Splitters from every rank's samples: n - 1 evenly spaced images of the sorted samples.
local function splitters(samples, n)
  table.sort(samples, math.ult)
  local split = {}
  for j = 1, n - 1 do split[j] = samples[math.max(1, (#samples * j) // n)] end
  return split
end

-- Gathers one list of integers per rank (each `len` long) as a flat list, rank order.
local function gather_ints(g, t, mine, len)
  local be = g.backends[1]
  local one, all = be:buffer(t, mine), be:buffer(t, len * g.size)
  g:all_gather(one, all)
  g:synchronize()
  local out = all:download():totable()
  one:free()
  all:free()
  return out
end

-- The launches of lib.sort(be, keys [, values]) (its checks, its scratch: a plain call's),
-- to run with the other devices' in one g:sequence.
local function sort_steps(be, keys, values)
  local U = require("vyre.lib.util")
  return require("vyre.lib").steps.sort(be, keys, values,
    { scratch = U.default_scratch(be, "call") })
end

-- Copies len elements from a[from..] to b[to..] (1-based), nothing when len is 0.
local function move(a, from, b, to, len)
  if len > 0 then a:view(from, len):copy_to(b:view(to, len)) end
end

-- Bucket b of each key: the number of splitters (n - 1 unsigned images, ascending) below
-- its image, so bucket j holds the images in (split[j-1], split[j]] as upper_bound cuts.
local function bucket_kernel(be, t)
  local U = require("vyre.lib.util")
  return U.kernel(be, "group_bucket_" .. t, function()
    local stmt, img = require("vyre.lib.sort").key_image(t, "(load k i)", "img")
    local ut = WIDE[t] and "u64" or "u32"
    return ([[
(program group_bucket_%s (workgroup 256)
  (buffer k %s read)
  (buffer split %s read)
  (buffer bid u32 write)
  (param n u32)
  (let i (gid x))
  (if (lt i n) (then
    %s
    (let b 0u32)
    (for j 0u32 (len split) 1u32
      (if (lt (load split j) %s) (then (set b (add b 1u32)))))
    (store bid i b))))
]]):format(t, t, ut, stmt or "", img)
  end)
end

-- dst[i] = src[perm[i]]: a partition applied to keys or values.
local function gather_kernel(be, t)
  local U = require("vyre.lib.util")
  return U.kernel(be, "group_gather_" .. t, function()
    return ([[
(program group_gather_%s (workgroup 256)
  (buffer src %s read)
  (buffer perm u32 read)
  (buffer dst %s write)
  (param n u32)
  (let i (gid x))
  (if (lt i n) (then (store dst i (load src (load perm i))))))
]]):format(t, t, t)
  end)
end

-- Splitters from samples of the unsorted keys: OVERSAMPLE evenly strided elements per
-- rank and device, gathered on each device and read in one download each, sorted by
-- image, n - 1 evenly spaced.
local OVERSAMPLE = 64

-- The sort images of m evenly strided elements of the unsorted k (one download).
local function sample_images(k, m)
  local out = {}
  if m <= 0 then return out end
  local be, c = k.backend, k.count
  local pos = {}
  for s = 1, m do pos[s] = ((2 * s - 1) * c) // (2 * m) end
  local idx, got = be:buffer("u32", pos), be:buffer(k.type, m)
  gather_kernel(be, k.type):launch({ src = k, perm = idx, dst = got, n = m }, { n = m })
  local w = WIDE[k.type] and 8 or 4
  local raw = got:download():bytes()
  for s = 1, m do
    out[s] = image(k.type, (string.unpack(w == 8 and "<i8" or "<I4", raw, (s - 1) * w + 1)))
  end
  idx:free()
  got:free()
  return out
end

local function unsorted_splitters(keys, n)
  local samples = {}
  for r = 1, #keys do
    for _, x in ipairs(sample_images(keys[r], math.min(OVERSAMPLE * n, keys[r].count))) do
      samples[#samples + 1] = x
    end
  end
  return splitters(samples, n), #samples
end

-- start[j] = the first index of bucket j in the sorted bucket ids sb (c where bucket j and
-- every later one are empty; pre-filled): each index that begins a run of ids writes the
-- starts of its bucket and of the empty buckets just before it. No atomics: a histogram
-- of a few bins puts every invocation on the same counters (it made no measurable
-- difference on an H100, bench/results/2026-11-26-h100x2-nccl-2.md, but it cannot stall).
local function bounds_kernel(be)
  local U = require("vyre.lib.util")
  return U.kernel(be, "group_bounds", function()
    return [[
(program group_bounds (workgroup 256)
  (buffer sb u32 read)
  (buffer start u32 write)
  (param c u32)
  (let i (gid x))
  (if (lt i c) (then
    (let b (load sb i))
    (let q (load sb (select (eq i 0u32) 0u32 (sub i 1u32))))
    (let p (select (eq i 0u32) 0u32 (add q 1u32)))
    (for j p (add b 1u32) 1u32 (store start j i)))))
]]
  end)
end

-- A bucket's scratch size: its count and an eighth more, so the next call's bucket (the
-- same keys give a slightly different split) reuses the buffer instead of freeing and
-- allocating gigabytes.
local function headroom(total) return total + total // 8 + 1024 end

-- The bucket sizes of a partition, from its starts (one small download).
local function piece_counts(p, n, c)
  local st = p.counts:download():totable()
  local cnt = {}
  for j = 1, n do cnt[j] = (j < n and st[j + 1] or c) - st[j] end
  return cnt
end

-- Rank r's keys (and values) partitioned stably into the n buckets on device r: the
-- bucket of every key, a stable argsort of the bucket ids (one radix pass over their few
-- bits), a gather; and where each bucket starts (bounds_kernel; p.counts holds the
-- starts, piece_counts reads the sizes). Returns the steps and the buffers to read and
-- free.
local function partition_steps(be, k, v, split, n)
  local lib = require("vyre.lib")
  local U = require("vyre.lib.util")
  local c = k.count
  if c == 0 then return {}, { counts = be:buffer("u32", n):fill(0) } end
  -- The large buffers are the backend's scratch (kept between calls, as lib.sort's are):
  -- allocating and freeing gigabytes per call cost more than the partition itself.
  local S = U.default_scratch(be, "call")
  local function big(role, t) return U.scratch(S, "group_sort_" .. role, t, c):view(1, c) end
  local p = { bid = big("bid", "u32"), perm = big("perm", "u32"), pk = big("keys", k.type),
    pv = v and big("values", v.type), sbid = big("sorted_bid", "u32"),
    counts = be:buffer("u32", n),
    split = be:buffer(WIDE[k.type] and "u64" or "u32", split) }
  local bits = 1
  while (1 << bits) < n do bits = bits + 1 end
  local steps = { { bucket_kernel(be, k.type), { k = k, split = p.split, bid = p.bid, n = c },
    { n = c } } }
  local function add(list) for _, s in ipairs(list) do steps[#steps + 1] = s end end
  add(lib.steps.argsort(be, p.bid, { out = p.perm, bits = { 0, bits },
    scratch = U.default_scratch(be, "call") }))
  steps[#steps + 1] = { gather_kernel(be, k.type), { src = k, perm = p.perm, dst = p.pk, n = c },
    { n = c } }
  steps[#steps + 1] = { gather_kernel(be, "u32"),
    { src = p.bid, perm = p.perm, dst = p.sbid, n = c }, { n = c } }
  require("vyre.lib.basic").fill_steps(be, p.counts, c, n, steps)
  steps[#steps + 1] = { bounds_kernel(be), { sb = p.sbid, start = p.counts, c = c }, { n = c } }
  if v then
    steps[#steps + 1] = { gather_kernel(be, v.type),
      { src = v, perm = p.perm, dst = p.pv, n = c }, { n = c } }
  end
  return steps, p
end

-- One process per GPU: the same partition-first sample sort, the pieces moved by an
-- all_to_all (blocks padded to the largest piece, whose sizes every rank knows from the
-- gathered counts), one sort per bucket, and a second all_to_all that gives every rank
-- its count back.
local function sort_ranks(timed, g, keys, values)
  local U = require("vyre.lib.util")
  local lib = require("vyre.lib")
  local be, me, n = g.backends[1], g.rank, g.size
  local k, v = keys[1], values and values[1]
  local t, vt = k.type, v and v.type
  local t0 = core.now_ns()
  local S = OVERSAMPLE * n
  local mine = sample_images(k, math.min(S, k.count))
  local ns = #mine
  for s = ns + 1, S do mine[s] = 0 end
  local all = gather_ints(g, "i64", mine, S)
  local counts = gather_ints(g, "u32", { ns }, 1)
  local samples = {}
  for q = 0, n - 1 do for s = 1, counts[q + 1] do samples[#samples + 1] = all[q * S + s] end end
  if #samples == 0 then -- every rank empty
    if timed then return keys, timing_of(t0) end
    return keys
  end
  local split = splitters(samples, n)
  local steps, p = partition_steps(be, k, v, split, n)
  if #steps > 0 then be:sequence(steps) end
  local cnt = piece_counts(p, n, k.count)
  local cut, row = { 0 }, {}
  for j = 1, n do
    row[j] = cnt[j]
    cut[j + 1] = cut[j] + cnt[j]
  end
  local flat = gather_ints(g, "u64", row, n) -- flat[q * n + j]: rank q's piece of bucket j
  local function piece(q, j) return flat[q * n + j] end
  local m = 1
  for _, x in ipairs(flat) do m = math.max(m, x) end
  -- 1: piece j of every rank to rank j
  local sk, rk = be:buffer(t, n * m), be:buffer(t, n * m)
  local sv, rv = v and be:buffer(vt, n * m), v and be:buffer(vt, n * m)
  for j = 1, n do
    move(p.pk, cut[j] + 1, sk, (j - 1) * m + 1, row[j])
    if v then move(p.pv, cut[j] + 1, sv, (j - 1) * m + 1, row[j]) end
  end
  g:all_to_all(sk, rk)
  if v then g:all_to_all(sv, rv) end
  local tot, start = {}, {}
  for j = 1, n do
    tot[j] = 0
    for q = 0, n - 1 do tot[j] = tot[j] + piece(q, j) end
    start[j] = j == 1 and 0 or start[j - 1] + tot[j - 1]
  end
  local total = tot[me + 1]
  local Sc = U.default_scratch(be, "call")
  local bk = U.scratch(Sc, "group_sort_bucket", t, headroom(total))
  local bv = v and U.scratch(Sc, "group_sort_bucket_values", vt, headroom(total))
  local at = 0
  for q = 0, n - 1 do
    local len = piece(q, me + 1)
    move(rk, q * m + 1, bk, at + 1, len)
    if v then move(rv, q * m + 1, bv, at + 1, len) end
    at = at + len
  end
  if total > 1 then lib.sort(be, bk:view(1, total), bv and bv:view(1, total)) end
  -- 2: rank r's output is the global range [out[r], out[r] + size[r]); bucket j holds
  -- [start[j], start[j] + tot[j]).
  local size, out = {}, {}
  for r = 0, n - 1 do
    size[r + 1] = 0
    for j = 1, n do size[r + 1] = size[r + 1] + piece(r, j) end
    out[r + 1] = r == 0 and 0 or out[r] + size[r]
  end
  local function overlap(j, r) -- of bucket j and output r: first global index, length
    local a = math.max(start[j], out[r])
    local b = math.min(start[j] + tot[j], out[r] + size[r])
    return a, math.max(0, b - a)
  end
  local m2 = 1
  for j = 1, n do for r = 1, n do m2 = math.max(m2, select(2, overlap(j, r))) end end
  local sk2, rk2 = be:buffer(t, n * m2), be:buffer(t, n * m2)
  local sv2, rv2 = v and be:buffer(vt, n * m2), v and be:buffer(vt, n * m2)
  for r = 1, n do
    local a, len = overlap(me + 1, r)
    move(bk, a - start[me + 1] + 1, sk2, (r - 1) * m2 + 1, len)
    if v then move(bv, a - start[me + 1] + 1, sv2, (r - 1) * m2 + 1, len) end
  end
  g:all_to_all(sk2, rk2)
  if v then g:all_to_all(sv2, rv2) end
  for j = 1, n do
    local a, len = overlap(j, me + 1)
    move(rk2, (j - 1) * m2 + 1, k, a - out[me + 1] + 1, len)
    if v then move(rv2, (j - 1) * m2 + 1, v, a - out[me + 1] + 1, len) end
  end
  g:synchronize()
  for _, b in ipairs({ sk, rk, sv, rv, sk2, rk2, sv2, rv2, p.counts, p.split }) do
    if b then b:free() end
  end
  if timed then return keys, timing_of(t0) end
  return keys
end

--- lib.sort(g, keys [, values]) -> keys: sorts the concatenation of the ranks' keys (rank
--- order) in place, stably; every rank keeps its count, so the result stays balanced.
--- One process: partition first (splitters from samples of the unsorted keys; each
--- device splits its keys stably into n buckets in one pass), then bucket j's pieces go
--- to device j in rank order, one sort per bucket, and each rank takes its count back.
function M.sort(name, timed, g, keys, values)
  if g.size ~= #g.backends then
    keys = parts(name, g, keys, "keys")
    if values ~= nil then values = parts(name, g, values, "values") end
    return sort_ranks(timed, g, keys, values)
  end
  keys = parts(name, g, keys, "keys")
  if values ~= nil then values = parts(name, g, values, "values") end
  local U = require("vyre.lib.util")
  local n, t = #keys, keys[1].type
  local t0 = core.now_ns()
  for r = 1, n do
    if keys[r].type ~= t then
      raise(name, ("keys[%d] is %s but keys[1] is %s"):format(r, keys[r].type, t),
        "every device's keys have one type")
    end
  end
  local lists = {}
  if n == 1 then
    lists[1] = sort_steps(g.backends[1], keys[1], values and values[1])
    g:sequence(lists)
    if timed then return keys, timing_of(t0) end
    return keys
  end
  local phases = {}
  M.last_sort_phases = phases -- wall ns per phase of the last call (bench/multigpu prints them)
  local tp = core.now_ns()
  local function phase(what)
    local now = core.now_ns()
    phases[#phases + 1] = { what, now - tp }
    tp = now
  end
  local split, nsamples = unsorted_splitters(keys, n)
  phase("splitters")
  if nsamples == 0 then -- every rank empty
    if timed then return keys, timing_of(t0) end
    return keys
  end
  local part = {}
  for r = 1, n do
    lists[r], part[r] = partition_steps(g.backends[r], keys[r], values and values[r], split, n)
  end
  g:sequence(lists) -- every device partitions at once, one wait
  phase("partition")
  -- cut[r][j]: where bucket j starts in rank r's partitioned keys.
  local cut = {}
  for r = 1, n do
    local cnt = piece_counts(part[r], n, keys[r].count)
    cut[r] = { 0 }
    for j = 1, n do cut[r][j + 1] = cut[r][j] + cnt[j] end
  end
  -- Bucket j gathers its pieces from every rank, in rank order (stability), on device j.
  local bk, bv = {}, {}
  for j = 1, n do
    local total = 0
    for r = 1, n do total = total + cut[r][j + 1] - cut[r][j] end
    local S = U.default_scratch(g.backends[j], "call")
    bk[j] = U.scratch(S, "group_sort_bucket", t, headroom(total))
    bv[j] = values and U.scratch(S, "group_sort_bucket_values", values[1].type, headroom(total))
    local at = 0
    for r = 1, n do
      local len = cut[r][j + 1] - cut[r][j]
      if len > 0 then
        part[r].pk:view(cut[r][j] + 1, len):copy_to(bk[j]:view(at + 1, len))
        if values then part[r].pv:view(cut[r][j] + 1, len):copy_to(bv[j]:view(at + 1, len)) end
      end
      at = at + len
    end
    bk[j] = { buf = bk[j], count = total, vals = bv[j] }
  end
  for j = 1, n do
    lists[j] = {}
    if bk[j].count > 1 then
      local kview = bk[j].buf:view(1, bk[j].count)
      lists[j] = sort_steps(g.backends[j], kview, bk[j].vals and bk[j].vals:view(1, bk[j].count))
    end
  end
  phase("exchange")
  g:sequence(lists) -- the buckets' sorts at once (each after its copies: stream order)
  phase("bucket sort")
  -- The sorted whole is bucket 1 .. n; rank r takes its count from where it starts.
  local j, off = 1, 0 -- position in the buckets
  for r = 1, n do
    local need, at = keys[r].count, 0
    while need > 0 do
      while bk[j].count - off == 0 do j, off = j + 1, 0 end
      local len = math.min(need, bk[j].count - off)
      bk[j].buf:view(off + 1, len):copy_to(keys[r]:view(at + 1, len))
      if values then bk[j].vals:view(off + 1, len):copy_to(values[r]:view(at + 1, len)) end
      need, at, off = need - len, at + len, off + len
    end
  end
  g:synchronize()
  phase("back")
  for q = 1, n do
    part[q].counts:free()
    if part[q].split then part[q].split:free() end
  end
  if timed then return keys, timing_of(t0) end
  return keys
end

return M
