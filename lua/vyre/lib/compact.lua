-- vyre.lib.compact — stable stream compaction (docs/LIB.md, "compact").
--
-- Built on the scan's structure, with the predicate fused into each pass:
--   1. each workgroup counts the kept elements of its chunk -> part[g];
--   2. one workgroup scans part exclusively in place and writes the total count;
--   3. each workgroup walks its chunk tile by tile: the keep flags are scanned in shared
--      memory (block_scan), kept elements are gathered in order into a shared tile and
--      written out contiguously at part[g] + the count of the chunk's earlier tiles.
-- The kept elements keep their order (stable). Only the count is read back. The keep
-- condition is a flags buffer, a predicate written as text over `x`, or a Lua function
-- that builds the predicate with the DSL (called once per function and element type).
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local F = require("vyre.lib.fragments")
local GEO = require("vyre.lib.geometry")
local Err = require("vyre.errors")
local callback = require("vyre.callback")
local reduce = require("vyre.lib.reduce")
local scan = require("vyre.lib.scan")
local onepass = require("vyre.lib.scan_onepass")

local M = {}

local COUNT = T.new("compactcount", [[
(program lib_compact_count_$T (workgroup $WG)
$INPUT
  (buffer part u32 write)
  (shared red u32 $WG)
$NDECL
$NLETS
$CHUNK
  (let acc 0u32)
  (for gi (add cbeg l) cend ${WG}u32
$LOADX
    (set acc (add acc (select $KEEP 1u32 0u32))))
  (store red l acc)
  (barrier)
$TREE
  (if (eq l 0u32) (then (store part g (load red 0u32)))))
]])

local SCATTER = T.new("compact", [[
(program lib_compact_$T (workgroup $WG)
  (buffer src $T read)
$FLAGS
  (buffer dst $T write)
  (buffer part u32 read)
  (shared tile $T $TILEP)
  (shared fl u32 $TILEP)
  (shared ot $T $TILE)
  (shared sa u32 $WG)
  (shared sb u32 $WG)
$NDECL
$NLETS
$CHUNK
$TILES
  (let obase (load part g))
  (for t 0u32 ntiles 1u32
    (let base (add cbeg (mul t ${TILE}u32)))
    (for j 0u32 ${ITEMS}u32 1u32
      (let k (add (mul j ${WG}u32) l))
      (let gi (add base k))
      (let x (load src gi))
      (let pk $PK)
      (store tile pk x)
      (store fl pk (select (land (lt gi cend) $KEEP) 1u32 0u32)))
    (barrier)
$SCAN
    (for j2 0u32 ${ITEMS}u32 1u32
      (let k2 (add (mul j2 ${WG}u32) l))
      (if (lt k2 ftot) (then (store dst (add obase k2) (load ot k2)))))
    (set obase (add obase ftot))
    (barrier)))
]])

-- Step 2: one workgroup scans the G <= 1024 counts exclusively in place (4 per
-- invocation) and writes the total. Its own small kernel rather than the scan's tile
-- kernel: a third of the shared memory, so that a compaction and a scan fit together in
-- one be:megakernel (whose program declares the shared arrays of all its steps).
local PARTS = T.new("compactparts", [[
(program lib_compact_parts (workgroup $WG)
  (buffer part u32 read_write)
  (buffer total u32 write)
  (shared tile u32 ${PARTS_TILEP})
  (shared sa u32 $WG)
  (shared sb u32 $WG)
$NDECL
$NLETS
  (let l (lid x))
  (for j 0u32 ${PARTS_ITEMS}u32 1u32
    (let k (add (mul j ${WG}u32) l))
    (store tile $PK (select (lt k n) (load part k) 0u32)))
  (barrier)
$SCAN
  (for j2 0u32 ${PARTS_ITEMS}u32 1u32
    (let k2 (add (mul j2 ${WG}u32) l))
    (if (lt k2 n) (then (store part k2 (load tile $PK2)))))
  (if (eq l 0u32) (then (store total 0u32 ptot))))
]])

local function parts_kernel(be, count)
  return U.kernel_n(be, "compact_parts", function(dev)
    local bs = scan.block_scan({ arr = "tile", m = GEO.PARTS_ITEMS, t = "u32", op = "add",
      carry = "0u32", exclusive = true, store = true, pad = true, sa = "sa", sb = "sb",
      tot = "ptot", i = "pi", x = "px", r = "pr" })
    return PARTS:render(U.with_count({ SCAN = bs, PK = U.pad("k"), PK2 = U.pad("k2") }, dev))
  end, count, { "(let c1 " .. U.chunk_expr("n1") .. ")",
    "(let n (div (add n1 (sub c1 1u32)) c1))" })
end

local FLAG_TYPES = { "u32", "i32", "bool" }

-- Function predicates ---------------------------------------------------------------------

local dsl -- vyre.dsl, loaded by the first function predicate

-- function -> { element type -> predicate text }; weak keys, so a dropped function goes.
-- A function is called once per element type: its result must not depend on anything
-- that changes between calls (make a new function, or use text, for that).
local fn_preds = setmetatable({}, { __mode = "k" })

-- The DSL's "vyre.program: [where: ]what. Fix: how" as (what, how), without the position
-- and without the k:when this file adds.
local function dsl_message(err)
  if Err.is(err) and err.reason then
    local op = err.op
    if op == "k:when" then return err.reason, err.fix end
    return (op:find("^vyre%.") and "" or op .. ": ") .. err.reason, err.fix
  end
  local what, fix = Err.parts(err)
  if fix then what = what:gsub("%.$", "") end
  return what, fix
end

--- The predicate text that fn builds for an element of type t: fn gets the element as a
--- DSL variable named x and returns a bool expression, which goes through the DSL's own
--- checks (a plain Lua boolean or a non-bool expression is refused with its words) inside
--- a small program that is validated and dropped.
local function function_predicate(name, t, fn)
  local per = fn_preds[fn]
  if per and per[t] then return per[t] end
  dsl = dsl or require("vyre.dsl")
  local stage, result, text, yielded = "call", nil, nil, nil
  local ok, err = pcall(dsl.program, "lib_compact_predicate",
    { workgroup = 1, dsl.buffer("src", t, "read") }, function(k)
      local x = k:let("x", k.src[0])
      -- in a coroutine of its own (vyre.callback): a yield is refused, not passed on
      result = table.pack(callback.call("the predicate function", fn, x))
      if not result[1] then
        if result[3] == "yielded" then yielded = result[2] end
        error(result[4] or result[2], 0) -- the original error, worded below
      end
      result = table.pack(table.unpack(result, 2, result.n))
      stage = "result"
      local r = result[1]
      if dsl.is_expr(r) or type(r) == "boolean" then
        k:when(r, function() end)
        text = r.text
      end
    end)
  if yielded then
    U.raise(name, yielded, "return a bool expression from the predicate function without "
      .. "yielding (vyre calls it while it builds the kernel)")
  end
  if not ok then
    local what, fix = dsl_message(err)
    if stage == "call" then
      U.raise(name, "the predicate function failed: " .. what, fix or "build a bool "
        .. "expression of its argument with the DSL, e.g. function(x) return x:gt(0) end")
    end
    U.raise(name, "the predicate function's result: " .. what, fix or "return a bool "
      .. "expression, e.g. x:gt(0)")
  end
  if not text then
    local r = result[1]
    local got = result.n == 0 and "nothing" or r == nil and "nil"
      or ("a %s (%s)"):format(type(r), tostring(r))
    U.raise(name, "the predicate function returned " .. got .. ", not a bool expression",
      "return a comparison of its argument, e.g. function(x) return x:gt(0) end")
  end
  per = per or {}
  per[t] = text
  fn_preds[fn] = per
  return text
end

local KEEP_BOOL = T.new("keepbool", "(load flags gi)")
local KEEP_INT = T.new("keepint", "(ne (load flags gi) 0$FT)")
local FLAGS_DECL = T.new("flagsdecl", "  (buffer flags $FT read)")
local SRC_DECL = T.new("srcdecl", "  (buffer src $T read)")
local LOADX = T.new("loadx", "    (let x (load src gi))")
-- with the scan's ftot, fi, fx, fr: a kept element goes to its rank in the tile
local GATHER = T.new("gather", "(if (ne fx 0u32) (then (store ot fr (load tile fi))))")

--- The keep condition of a flags buffer of type ft: text (an instance rendered).
local function keep_of_flags(ft)
  if ft == "bool" then return T.text(KEEP_BOOL()) end
  return T.text(KEEP_INT({ FT = ft }))
end
M.keep_of_flags = keep_of_flags

-- The two kernels for element type t and a flags buffer type or a predicate.
local function kernels(name, be, t, flags_type, pred, count)
  local keep, key, flagdecl
  if pred then
    keep, key, flagdecl = pred, "pred:" .. pred, ""
  else
    keep, key = keep_of_flags(flags_type), "flags:" .. flags_type
    flagdecl = FLAGS_DECL({ FT = flags_type })
  end
  -- with count, the device-count variants (U.with_count)
  local dev = count and U.N_ELEMS or nil
  local count_text = COUNT:render(U.with_count({ CHUNK = F.CHUNK(),
    T = t, KEEP = keep, TREE = reduce.tree("add"),
    INPUT = pred and SRC_DECL({ T = t }) or flagdecl,
    LOADX = pred and LOADX() or "",
  }, dev, { chunk = true }))
  local bs = scan.block_scan({ arr = "fl", m = GEO.ITEMS, t = "u32", op = "add",
    carry = "0u32", exclusive = true, store = false, pad = true, sa = "sa", sb = "sb",
    tot = "ftot", i = "fi", x = "fx", r = "fr", hook = GATHER() })
  local scatter_text = SCATTER:render(U.with_count({ CHUNK = F.CHUNK(),
    T = t, KEEP = keep, FLAGS = flagdecl, SCAN = bs, PK = U.pad("k"),
  }, dev, { chunk = true, tiles = true }))
  local fix = "write a bool expression over the element x, e.g. \"(gt x 0i32)\" for an i32 "
    .. "buffer (literals carry their type)"
  local tag = count and "#dev" or ""
  return U.user_kernel(name, be, "compact_count:" .. t .. ":" .. key .. tag, count_text, fix),
    U.user_kernel(name, be, "compact:" .. t .. ":" .. key .. tag, scatter_text, fix)
end

--- Checks the arguments of compact and its steps form; returns pred, flags.
local function check(name, be, src, keep, dst)
  U.check_backend(name, be)
  U.check_buffer(name, be, src, "argument 2 (src)", U.ALL_TYPES)
  local pred, flags
  if type(keep) == "string" then
    if not keep:find("%S") then
      U.raise(name, "the predicate is empty",
        "pass a bool expression over x such as \"(gt x 0i32)\", or a flags buffer")
    end
    pred = keep
  elseif type(keep) == "function" then
    pred = function_predicate(name, src.type, keep)
  elseif U.is_buffer(keep) then
    U.check_buffer(name, be, keep, "argument 3 (flags)", FLAG_TYPES)
    if keep.count ~= src.count then
      U.raise(name, ("flags has %d elements but src has %d"):format(keep.count, src.count),
        "pass one flag per element of src")
    end
    flags = keep
  else
    U.raise(name, "argument 3 must be a flags buffer, a predicate string or a predicate "
      .. "function, got " .. type(keep), "pass a u32/i32/bool buffer (nonzero keeps), text "
      .. "such as \"(gt x 0i32)\", or function(x) return x:gt(0) end")
  end
  U.check_buffer(name, be, dst, "argument 4 (dst)", U.ALL_TYPES)
  if dst.type ~= src.type then
    U.raise(name, ("src is %s but dst is %s"):format(src.type, dst.type),
      "compact into a buffer of the same type")
  end
  -- By memory, not object: a view of src is src too (compaction cannot run in place).
  U.check_disjoint(name, dst, "dst", src, "src",
    "compact into a buffer that shares no memory with src (then lib.copy back if needed)",
    false, "compaction cannot run in place")
  if flags then
    U.check_disjoint(name, dst, "dst", flags, "the flags buffer",
      "compact into a buffer that shares no memory with the flags")
  end
  return pred, flags
end

--- Appends the launches compacting src (n >= 1 elements; with count, the first
--- min(count[0], n)) by flags or pred into dst, writing the kept count to total[0].
function M.steps(name, be, S, src, flags, pred, dst, total, steps, count)
  -- single pass (scan_onepass.lua) when the count is known on the host; with a device
  -- count, the three launches below
  if onepass.config.enabled and not count then
    local ks = { onepass.compact_kernels(name, be, src.type, flags and flags.type, pred) }
    return onepass.compact_steps(ks, be, src.type, src, flags, dst, total, src.count, steps)
  end
  local t, n = src.type, src.count
  local kcount, kscatter = kernels(name, be, t, flags and flags.type, pred, count)
  local chunk, G = U.chunks(n)
  local part = U.scratch(S or be, "compact_part", "u32", U.MAXG)
  local a1 = { part = part, n = n, chunk = chunk }
  local a2 = { part = part, total = total, n = G }
  local a3 = { src = src, dst = dst, part = part, n = n, chunk = chunk }
  if flags then
    a1.flags, a3.flags = flags, flags
  else
    a1.src = src
  end
  if count then
    for _, a in ipairs({ a1, a2, a3 }) do a.n, a.chunk, a.ncount, a.ncap = nil, nil, count, n end
  end
  steps[#steps + 1] = { kcount, a1, { grid = { G } } }
  steps[#steps + 1] = { parts_kernel(be, count), a2, { grid = { 1 } } }
  steps[#steps + 1] = { kscatter, a3, { grid = { G } } }
end

--- lib.steps.compact(be, src, keep, dst, {out = u32 Buffer [, count] [, scratch]})
function M.steps_form(name, be, src, keep, dst, opts)
  local pred, flags = check(name, be, src, keep, dst)
  opts = U.check_opts(name, opts, { "out", "count", "scratch" }, 5)
  local out = opts.out
  if out == nil then
    U.raise(name, "opts.out is missing", "pass {out = be:buffer(\"u32\", 1)}: the steps "
      .. "write the kept count there (nothing is read back)")
  end
  U.check_buffer(name, be, out, "opts.out", { "u32" })
  if out.count < 1 then U.raise(name, "opts.out is empty", "pass a u32 buffer of 1 element") end
  for _, b in ipairs({ { src, "src" }, { dst, "dst" }, { flags, "the flags buffer" } }) do
    if b[1] then
      U.check_disjoint(name, out, "opts.out", b[1], b[2],
        "write the count into a buffer of its own")
    end
  end
  local count = U.check_count(name, be, opts.count, { { dst, "dst" }, { out, "opts.out" } })
  local S = U.scratch_of(name, be, opts.scratch)
  local steps = {}
  if src.count == 0 then
    kernels(name, be, src.type, flags and flags.type, pred) -- a bad predicate still raises
    require("vyre.lib.basic").fill_steps(be, out, 0, 1, steps)
    return steps
  end
  M.steps(name, be, S, src, flags, pred, dst, out, steps, count)
  return steps
end

function M.compact(name, timed, be, src, keep, dst)
  local pred, flags = check(name, be, src, keep, dst)
  local n = src.count
  if n == 0 then
    kernels(name, be, src.type, flags and flags.type, pred) -- a bad predicate still raises
    return 0, U.no_time()
  end
  local total = U.scratch(be, "compact_total", "u32", 1)
  local steps = {}
  M.steps(name, be, nil, src, flags, pred, dst, total, steps)
  local out, timing = U.run(name, be, steps, { { total, 1, 1 } }, timed)
  return out[1][1], timing
end

return M
