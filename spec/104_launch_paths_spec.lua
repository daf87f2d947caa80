-- 103: the two launch paths after the host-overhead work (issue 21, bench/host_launch.sh).
-- k:launch(args, opts) reads opts in one pass (keys compared with the layout's interned
-- "n" and "grid"), so its words and results must stay those of the full reader: unknown
-- options, bad values, opts whose values come from a metatable. The Kernel's __index
-- looks methods up before fields. A bound launch on a device is a prepared launch of
-- the backend (vyre_backend_prepare), which the Launch keeps the backend's core open
-- for: freeing the backend, the kernel and the buffers first must not free it under
-- the Launch (#fakecuda part).
local vyre = require("vyre")
local F = require("tests.fakecuda.harness")

local INC = [[
(program inc (workgroup 1)
  (buffer v u32 read_write)
  (param by u32)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) by)))))]]

local function values(buf)
  local out = {}
  local a = buf:download() -- waits for the launches
  for i = 1, #a do out[i] = a[i] end
  return out
end

local function opts_cases(be)
  local k = be:compile(vyre.parse(INC))
  local v = be:buffer("u32", 8)
  local args = { v = v, by = 1 }
  -- n, grid, both absent, n = 0: the same effects as before
  k:launch(args, { n = 3 })
  assert.are.same({ 1, 1, 1, 0, 0, 0, 0, 0 }, values(v))
  k:launch(args, { grid = { 2, 1, 1 } })
  assert.are.same({ 2, 2, 1, 0, 0, 0, 0, 0 }, values(v))
  k:launch(args)
  k:launch(args, {})
  k:launch(args, { n = 0 })
  assert.are.same({ 4, 4, 3, 2, 2, 2, 2, 2 }, values(v))
  -- values a metatable supplies are read, as lua_getfield reads them
  k:launch(args, setmetatable({}, { __index = { n = 1 } }))
  assert.are.same({ 5, 4, 3, 2, 2, 2, 2, 2 }, values(v))
  -- mistakes: the unknown option is named with the list, before any value is read
  local ok, err = pcall(k.launch, k, args, { n = 2, N = 4 })
  assert.is_false(ok)
  assert.matches("vyre.Kernel:launch: unknown option 'N'. Fix: use n, grid", err, 1, true)
  ok, err = pcall(k.launch, k, args, { n = -1, bogus = true })
  assert.is_false(ok)
  assert.matches("unknown option 'bogus'", err, 1, true)
  ok, err = pcall(k.launch, k, args, { [1] = 4 })
  assert.is_false(ok)
  assert.matches("unknown option '1'", err, 1, true)
  ok, err = pcall(k.launch, k, args, { n = "x" })
  assert.is_false(ok)
  assert.matches("opts.n must be a non-negative integer", err, 1, true)
  ok, err = pcall(k.launch, k, args, { grid = 4 })
  assert.is_false(ok)
  assert.matches("opts.grid must be a table {x, y, z} (got number)", err, 1, true)
  ok, err = pcall(k.launch, k, args, 7)
  assert.is_false(ok)
  assert.matches("opts must be a table (got number)", err, 1, true)
  -- a bound launch reads the same opts
  local l = k:bind(args, { n = 2 })
  l()
  assert.are.same({ 6, 5, 3, 2, 2, 2, 2, 2 }, values(v))
  -- __index: methods first, then the fields, then nil
  assert.are.equal("function", type(k.launch))
  assert.are.equal("inc", k.name)
  assert.are.equal("inc", k.program.name)
  assert.is_nil(k.no_such_thing)
  l:free()
  k:free()
  v:free()
end

describe("launch paths: by name and bound", function()
  it("reads opts the same on the reference", function() opts_cases(vyre.backend("reference")) end)
end)

describe("launch paths on a device #fakecuda", function()
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  it("reads opts the same on CUDA", function() opts_cases(F.device()) end)

  it("a bound launch outlives the backend, kernel and buffers being freed", function()
    local be = F.device()
    local k = be:compile(vyre.parse(INC))
    local v = be:buffer("u32", 8)
    local l = k:bind({ v = v, by = 2 }, { n = 4 })
    l:launch()
    assert.are.same({ 2, 2, 2, 2, 0, 0, 0, 0 }, values(v))
    be:free()
    l:launch() -- the backend object is freed, its core stays open for its children
    assert.are.same({ 4, 4, 4, 4, 0, 0, 0, 0 }, values(v))
    k:free()
    local ok, err = pcall(l.launch, l)
    assert.is_false(ok)
    assert.matches("vyre.Launch:launch: the kernel was freed", err, 1, true)
    v:free()
    l = nil -- luacheck: ignore 311
    collectgarbage()
    collectgarbage()
    assert.are.equal(0, F.live().mem)
    assert.are.equal(0, (F.misuse()))
  end)

  it("a bound launch still checks its buffers and itself", function()
    local be = F.device()
    local k = be:compile(vyre.parse(INC))
    local v = be:buffer("u32", 8)
    local l = k:bind({ v = v, by = 1 })
    l()
    l()
    assert.are.same({ 2, 2, 2, 2, 2, 2, 2, 2 }, values(v))
    v:free()
    local ok, err = pcall(l.launch, l)
    assert.is_false(ok)
    assert.matches("bound buffer 1 was freed", err, 1, true)
    l:free()
    l:free() -- idempotent
    ok, err = pcall(l.launch, l)
    assert.is_false(ok)
    assert.matches("the bound launch was freed", err, 1, true)
    k:free()
  end)
end)
