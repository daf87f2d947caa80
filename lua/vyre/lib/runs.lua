-- vyre.lib.runs — primitives over the runs of equal neighbours of sorted input
-- (docs/LIB.md, "unique, run_length, reduce_by_key"). Two neighbours are equal when
-- their bits are (floats: -0 and +0 differ, a NaN equals a NaN with the same bits).
--
-- All three mark the heads of runs (element 0 and each element whose bits differ from
-- its left neighbour's) in a u32 flags buffer, then compact with those flags (stable,
-- vyre.lib.compact): the heads' values give the runs' values, and the heads' positions
-- (an iota compacted the same way) give where each run starts. Run lengths and the
-- per-run folds of reduce_by_key read those starts and the run count on the device:
-- one invocation per run, folding its values left to right (like segmented_reduce).
-- Every step is deterministic; the count is the only value a plain call reads back.
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local basic = require("vyre.lib.basic")
local compact = require("vyre.lib.compact")

local M = {}

local HEADS = T.new("heads", [[
(program lib_heads_$T (workgroup $WG)
  (buffer src $T read)
  (buffer flags u32 write)
$NDECL
$NLETS
  (let i (gid x))
  (if (lt i n) (then
    (let a (load src i))
    (let b (load src (sub (max i 1u32) 1u32)))
    (store flags i (select (lor (eq i 0u32) (ne $A $B)) 1u32 0u32)))))
]])

-- counts[j] = (start of run j + 1, or n for the last) - start of run j, for j < count
local LENGTHS = T.new("runlengths", [[
(program lib_run_lengths (workgroup $WG)
  (buffer starts u32 read)
  (buffer total u32 read)
  (buffer counts u32 write)
$NDECL
$NLETS
  (let j (gid x))
  (let c (load total 0u32))
  (if (lt j c) (then
    (let e (select (lt (add j 1u32) c) (load starts (min (add j 1u32) (sub n 1u32))) n))
    (store counts j (sub e (load starts j))))))
]])

-- out[j] = the left fold of values over run j, for j < count
local FOLD = T.new("runfold", [[
(program lib_reduce_by_key_$T_$OP (workgroup $WG)
  (buffer starts u32 read)
  (buffer total u32 read)
  (buffer values $T read)
  (buffer out $T write)
$NDECL
$NLETS
  (let j (gid x))
  (let c (load total 0u32))
  (if (lt j c) (then
    (let b (load starts j))
    (let e (select (lt (add j 1u32) c) (load starts (min (add j 1u32) (sub n 1u32))) n))
    (let acc (load values b))
    (for i (add b 1u32) e 1u32 (set acc ($OP acc (load values i))))
    (store out j acc))))
]])

-- An element's bits for the comparison of neighbours: floats compare as integers.
local BITS = T.new("bits", "(bitcast $UT $V)")

local UINT = { f32 = "u32", f64 = "u64" }

local DEV_N = { "(let n n1)" }

local function heads_kernel(be, t, count)
  return U.kernel_n(be, "heads:" .. t, function(dev)
    local a, b = "a", "b"
    if UINT[t] then a, b = BITS({ UT = UINT[t], V = "a" }), BITS({ UT = UINT[t], V = "b" }) end
    return HEADS:render(U.with_count({ T = t, A = a, B = b }, dev))
  end, count, DEV_N)
end

-- args with n, or (count given) ncount and ncap
local function nargs(a, n, count)
  if count then a.ncount, a.ncap = count, n else a.n = n end
  return a
end

local function grid(n) return { grid = { U.cdiv(n, U.WG) } } end

local function append(steps, more)
  for _, s in ipairs(more) do steps[#steps + 1] = s end
end

--- Appends: flags = heads of src; compact src by them into dst (count -> total); with
--- starts, also the start of each run into starts. n = #src >= 1; with count (a u32
--- Buffer), the first min(count[0], n) elements only.
local function runs_steps(name, be, S, src, dst, total, steps, want_starts, count)
  local n = src.count
  local flags = U.scratch(S, "runs_flags", "u32", n):view(1, n)
  steps[#steps + 1] = { heads_kernel(be, src.type, count),
    nargs({ src = src, flags = flags }, n, count), grid(n) }
  compact.steps(name, be, S, src, flags, nil, dst, total, steps, count)
  if not want_starts then return end
  local pos = U.scratch(S, "runs_pos", "u32", n):view(1, n)
  local starts = U.scratch(S, "runs_starts", "u32", n):view(1, n)
  local total2 = U.scratch(S, "runs_total2", "u32", 1)
  append(steps, basic.steps_form("iota")(name, be, pos, { scratch = S }))
  compact.steps(name, be, S, pos, flags, nil, starts, total2, steps, count)
  return starts
end

local function check_out(name, be, opts, bufs)
  local out = opts.out
  if out == nil then
    U.raise(name, "opts.out is missing", "pass {out = be:buffer(\"u32\", 1)}: the steps "
      .. "write the count there (nothing is read back)")
  end
  U.check_buffer(name, be, out, "opts.out", { "u32" })
  if out.count < 1 then U.raise(name, "opts.out is empty", "pass a u32 buffer of 1 element") end
  for _, b in ipairs(bufs) do
    U.check_disjoint(name, out, "opts.out", b[1], b[2], "write the count into a buffer of "
      .. "its own")
  end
  return out
end

local function disjoint_outputs(name, ins, outs)
  for _, o in ipairs(outs) do
    for _, i in ipairs(ins) do
      U.check_disjoint(name, o[1], o[2], i[1], i[2], ("write %s into a buffer that shares "
        .. "no memory with the inputs or the other outputs"):format(o[2]))
    end
  end
end

-- Each primitive: check(name, be, ...) -> a (its arguments), and
-- build(name, be, S, a, total) -> steps writing the count to total[0].
local P = {}

P.unique = {
  check = function(name, be, src, dst)
    U.check_backend(name, be)
    U.check_buffer(name, be, src, "argument 2 (src)", U.NUM_TYPES)
    U.check_buffer(name, be, dst, "argument 3 (dst)", { src.type })
    disjoint_outputs(name, { { src, "src" } }, { { dst, "dst" } })
    return { src = src, dst = dst, n = src.count, ins = { { src, "src" }, { dst, "dst" } },
      outs = { { dst, "dst" } } }
  end,
  build = function(name, be, S, a, total, count)
    local steps = {}
    runs_steps(name, be, S, a.src, a.dst, total, steps, false, count)
    return steps
  end,
}

P.run_length = {
  check = function(name, be, src, vout, cout)
    U.check_backend(name, be)
    U.check_buffer(name, be, src, "argument 2 (src)", U.NUM_TYPES)
    U.check_buffer(name, be, vout, "argument 3 (values_out)", { src.type })
    U.check_buffer(name, be, cout, "argument 4 (counts_out)", { "u32" })
    disjoint_outputs(name, { { src, "src" }, { cout, "counts_out" } },
      { { vout, "values_out" } })
    disjoint_outputs(name, { { src, "src" } }, { { cout, "counts_out" } })
    return { src = src, vout = vout, cout = cout, n = src.count,
      ins = { { src, "src" }, { vout, "values_out" }, { cout, "counts_out" } },
      outs = { { vout, "values_out" }, { cout, "counts_out" } } }
  end,
  build = function(name, be, S, a, total, count)
    local steps = {}
    local starts = runs_steps(name, be, S, a.src, a.vout, total, steps, true, count)
    local k = U.kernel_n(be, "run_lengths", function(dev)
      return LENGTHS:render(U.with_count({}, dev))
    end, count, DEV_N)
    steps[#steps + 1] = { k, nargs({ starts = starts, total = total, counts = a.cout }, a.n,
      count), grid(a.n) }
    return steps
  end,
}

P.reduce_by_key = {
  check = function(name, be, keys, values, kout, vout, op)
    U.check_backend(name, be)
    U.check_buffer(name, be, keys, "argument 2 (keys)", U.NUM_TYPES)
    U.check_buffer(name, be, values, "argument 3 (values)", U.NUM_TYPES)
    U.check_buffer(name, be, kout, "argument 4 (keys_out)", { keys.type })
    U.check_buffer(name, be, vout, "argument 5 (values_out)", { values.type })
    op = op or "add"
    U.check_op(name, op, { "add", "min", "max" })
    if values.count ~= keys.count then
      U.raise(name, ("keys has %d elements but values has %d"):format(keys.count,
        values.count), "pass one value per key")
    end
    local ins = { { keys, "keys" }, { values, "values" } }
    disjoint_outputs(name, ins, { { kout, "keys_out" }, { vout, "values_out" } })
    disjoint_outputs(name, { { kout, "keys_out" } }, { { vout, "values_out" } })
    return { keys = keys, values = values, kout = kout, vout = vout, op = op, n = keys.count,
      ins = { ins[1], ins[2], { kout, "keys_out" }, { vout, "values_out" } },
      outs = { { kout, "keys_out" }, { vout, "values_out" } } }
  end,
  build = function(name, be, S, a, total, count)
    local steps = {}
    local starts = runs_steps(name, be, S, a.keys, a.kout, total, steps, true, count)
    local t = a.values.type
    local k = U.kernel_n(be, "reduce_by_key:" .. t .. ":" .. a.op, function(dev)
      return FOLD:render(U.with_count({ T = t, OP = a.op }, dev))
    end, count, DEV_N)
    steps[#steps + 1] = { k, nargs({ starts = starts, total = total, values = a.values,
      out = a.vout }, a.n, count), grid(a.n) }
    return steps
  end,
}

--- The plain call of primitive p: (name, timed, be, ...) -> count, timing.
function M.plain(p)
  local o = P[p]
  return function(name, timed, be, ...)
    local a = o.check(name, be, ...)
    if a.n == 0 then return 0, U.no_time() end
    local total = U.scratch(be, "runs_total", "u32", 1)
    local out, timing = U.run(name, be, o.build(name, be, U.default_scratch(be, "call"), a,
      total), { { total, 1, 1 } }, timed)
    return out[1][1], timing
  end
end

--- The steps form of p: (name, be, ..., {out = u32 Buffer [, count, scratch]}) -> steps.
function M.steps_form(p)
  local o = P[p]
  return function(name, be, ...)
    local args = table.pack(...)
    local opts = args[args.n]
    if type(opts) == "table" and not U.mt_name(opts) then
      args.n = args.n - 1
    else
      opts = nil
    end
    local a = o.check(name, be, table.unpack(args, 1, args.n))
    opts = U.check_opts(name, opts, { "out", "count", "scratch" }, args.n + 2)
    local total = check_out(name, be, opts, a.ins)
    local outs = { { total, "opts.out" }, table.unpack(a.outs) }
    local count = U.check_count(name, be, opts.count, outs)
    local S = U.scratch_of(name, be, opts.scratch)
    if a.n == 0 then
      local steps = {}
      basic.fill_steps(be, total, 0, 1, steps)
      return steps
    end
    return o.build(name, be, S, a, total, count)
  end
end

return M
