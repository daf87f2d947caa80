-- 75: vyre.lib compares buffers by memory, not by object (issue 26). Two views of one
-- buffer are different objects over the same bytes: lib.copy has memmove semantics on
-- overlap, scan runs in place only from the same start, and the primitives that cannot
-- run in place refuse overlapping views with a Fix. On the reference backend (always),
-- the fake CUDA driver (#fakecuda) and a GPU (#gpu). Also the e-graph's bulk input.
local vyre = require("vyre")
local core = require("vyre.core")
local lib = require("vyre.lib")
local H = require("spec.helpers")

local function seq(a, b)
  local t = {}
  for i = a, b do t[#t + 1] = i end
  return t
end

local function values(buf) return buf:download():totable() end

-- memmove of n elements from index s to index d (0-based) of list t, as the reference.
local function memmove(t, s, d, n)
  local r, tmp = {}, {}
  for i = 1, #t do r[i] = t[i] end
  for i = 0, n - 1 do tmp[i] = t[s + i + 1] end
  for i = 0, n - 1 do r[d + i + 1] = tmp[i] end
  return r
end

local function refused(pattern, fn, ...)
  local msg = H.error_of(fn, ...)
  assert.matches(pattern, msg, 1, true)
  assert.matches("Fix: ", msg, 1, true)
  assert.is_nil(msg:find("traceback", 1, true))
  return msg
end

local function copies(be)
  local s = be:buffer("u32", seq(0, 7))
  lib.copy(be, s:view(1, 7), s:view(2, 7)) -- forward overlap (the issue's case)
  assert.are.same({ 0, 0, 1, 2, 3, 4, 5, 6 }, values(s))
  s:upload(seq(0, 7))
  lib.copy(be, s:view(2, 7), s:view(1, 7)) -- backward overlap
  assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 7 }, values(s))
  s:upload(seq(0, 7))
  lib.copy(be, s:view(1, 4), s:view(5, 4)) -- disjoint views of one buffer
  assert.are.same({ 0, 1, 2, 3, 0, 1, 2, 3 }, values(s))
  s:upload(seq(0, 7))
  lib.copy(be, s:view(3, 4), s:view(2):view(2, 4)) -- same start through a nested view
  assert.are.same(seq(0, 7), values(s))
  lib.copy(be, s:view(1, 6), s) -- same start, dst longer than src
  assert.are.same(seq(0, 7), values(s))
  -- Many workgroups, both directions, against memmove.
  local n = 5000
  local big = be:buffer("i64", seq(1, n))
  lib.copy(be, big:view(1, n - 300), big:view(301))
  assert.are.same(memmove(seq(1, n), 0, 300, n - 300), values(big))
  big:upload(seq(1, n))
  lib.copy(be, big:view(17), big:view(1, n - 16))
  assert.are.same(memmove(seq(1, n), 16, 0, n - 16), values(big))
end

local function refusals(be)
  local u = be:buffer("u32", seq(0, 15))
  -- compact cannot run in place: dst overlapping src or the flags.
  refused("dst and src share memory", lib.compact, be, u:view(1, 8), "(gt x 0u32)", u:view(5, 8))
  refused("dst and the flags buffer share memory", lib.compact, be, u:view(1, 4),
    u:view(5, 4), u:view(7, 4))
  -- sort: values over keys; scratch over keys, values or each other.
  refused("values and keys share memory", lib.sort, be, u:view(1, 8), u:view(8, 8))
  refused("opts.scratch.keys and keys share memory", lib.sort, be, u:view(1, 4),
    { scratch = { keys = u:view(2, 4) } })
  refused("opts.scratch.values and opts.scratch.keys share memory", lib.sort, be,
    u:view(1, 4), u:view(5, 4), { scratch = { keys = u:view(9, 4), values = u:view(12, 4) } })
  -- histogram counting into its own input.
  refused("opts.out and src share memory", lib.histogram, be, u:view(1, 8), 4, 0, 16,
    { out = u:view(3, 4) })
  -- scan: a shifted overlap races; the same start is in place.
  refused("dst and src share memory", lib.scan, be, u:view(1, 8), u:view(2, 8))
  -- segmented: reduce into its values or offsets; scan over its offsets.
  local off = u:view(1, 3) -- 0, 1, 2: two segments
  refused("out and values share memory", lib.segmented_reduce, be, u:view(4, 8), off,
    u:view(6, 2))
  refused("out and offsets share memory", lib.segmented_reduce, be, u:view(4, 8), off,
    u:view(2, 2))
  refused("dst and offsets share memory", lib.segmented_scan, be, u:view(10, 4), off,
    u:view(2, 4))
  assert.are.same(seq(0, 15), values(u)) -- nothing ran
end

local function in_place(be)
  local u = be:buffer("u32", { 5, 3, 9, 1, 40, 30, 20, 10 })
  -- Disjoint views of one buffer pass every check.
  lib.sort(be, u:view(1, 4), u:view(5, 4))
  assert.are.same({ 1, 3, 5, 9, 10, 30, 40, 20 }, values(u))
  lib.scan(be, u:view(1, 4), u:view(1):view(1, 4)) -- same start: in place
  assert.are.same({ 1, 4, 9, 18, 10, 30, 40, 20 }, values(u))
  local n = lib.compact(be, u:view(1, 4), "(gt x 5u32)", u:view(5, 4))
  assert.are.equal(2, n)
  assert.are.same({ 1, 4, 9, 18, 9, 18, 40, 20 }, values(u))
end

local function extents(be)
  local b = be:buffer("f64", 10)
  local r, first, stop = core.buffer_extent(b)
  assert.are.same({ 0, 80 }, { first, stop })
  local r2, f2, s2 = core.buffer_extent(b:view(3, 4))
  assert.are.equal(r, r2)
  assert.are.same({ 16, 48 }, { f2, s2 })
  local r3, f3, s3 = core.buffer_extent(b:view(3):view(2, 2)) -- views of views name the owner
  assert.are.equal(r, r3)
  assert.are.same({ 24, 40 }, { f3, s3 })
  assert.are_not.equal(r, (core.buffer_extent(be:buffer("f64", 10))))
  b:free()
  assert.matches("was freed", H.error_of(core.buffer_extent, b), 1, true)
  assert.matches("vyre.Buffer expected", H.error_of(core.buffer_extent, {}), 1, true)
end

describe("vyre.lib aliasing on the reference backend", function()
  local be
  setup(function() be = vyre.backend() end)
  it("core.buffer_extent names the allocation and the byte range", function() extents(be) end)
  it("lib.copy has memmove semantics on overlapping views", function() copies(be) end)
  it("primitives that cannot run in place refuse overlapping views", function()
    refusals(be)
  end)
  it("disjoint views of one buffer and same-start in-place calls work", function()
    in_place(be)
  end)
end)

describe("vyre.egraph bulk input aliasing the e-graph's own columns", function()
  it("is refused by memory (a view of a column too), with a Fix", function()
    local eg = vyre.egraph(vyre.backend())
    eg:op("f", 2)
    eg:op("x", 0)
    local a, b = eg:leaf("x", 1), eg:leaf("x", 2)
    eg:add("f", a, b)
    local cols = eg:buffers()
    refused("argument 1 (pairs) shares memory with the e-graph's own parent column",
      eg.union_many, eg, cols.parent:view(1, 2))
    refused("argument 2 (children) shares memory with the e-graph's own children column",
      eg.add_many, eg, "f", cols.children)
    refused("argument 2 (payloads) shares memory with the e-graph's own children column",
      eg.add_many, eg, "x", cols.children:view(1, 2))
    assert.are.same({ 3, 3 }, { eg:size() }) -- nothing was added or united
    local mine = eg.be:buffer("u32", 2)
    lib.copy(eg.be, cols.parent:view(1, 2), mine) -- a copy of one's own is fine
    assert.are.equal(1, eg:union_many(mine))
  end)
end)

describe("vyre.lib aliasing on the fake CUDA driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end
  local be
  setup(function()
    be = F.device()
    for _, t in ipairs({ "u32", "i64" }) do F.register(require("vyre.lib.basic").copy_text(t)) end
  end)
  it("core.buffer_extent names the allocation and the byte range", function() extents(be) end)
  it("lib.copy has memmove semantics on overlapping views", function() copies(be) end)
  it("primitives that cannot run in place refuse overlapping views", function()
    refusals(be)
  end)
end)

describe("vyre.lib aliasing on CUDA #gpu", function()
  local be
  setup(function() be = assert(vyre.backend("cuda")) end)
  it("core.buffer_extent names the allocation and the byte range", function() extents(be) end)
  it("lib.copy has memmove semantics on overlapping views", function() copies(be) end)
  it("primitives that cannot run in place refuse overlapping views", function()
    refusals(be)
  end)
  it("disjoint views of one buffer and same-start in-place calls work", function()
    in_place(be)
  end)
end)
