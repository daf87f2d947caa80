-- 71: buffer views and buffer fills (issue 13 §1). buf:view(first [, count]) aliases part
-- of a buffer's storage (element units, 1-based) and binds everywhere a buffer does as
-- its own length; buf:fill / buf:iota / buf:random give exactly what the same
-- vyre.Array methods give. The same checks run on the reference backend, on the fake
-- CUDA driver (#fakecuda: device pointer arithmetic, launches on views) and on a GPU
-- (#gpu: also misaligned f32 views through the vectorized entry).
local vyre = require("vyre")
local H = require("spec.helpers")

local TYPES = { "bool", "i32", "u32", "i64", "u64", "f32", "f64" }

local SCALE = [[
(program scale (workgroup 64)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y)) (then (store y i (add (mul a (load x i)) (load y i))))))]]

local function err(fn, ...) return H.error_of(fn, ...) end

local function seq(a, b, step)
  local t = {}
  for i = a, b, step or 1 do t[#t + 1] = i end
  return t
end

-- Views: aliasing, nesting, ranges, tostring, lifetime.
local function views(be)
  local b = be:buffer("i32", 10):iota(1)
  local v = b:view(3, 4)
  assert.are.equal(4, #v)
  assert.are.equal(4, v.count)
  assert.are.equal("i32", v.type)
  assert.are.equal(16, v.bytes)
  assert.is_false(v.freed)
  assert.are.same({ 3, 4, 5, 6 }, v:download():totable())
  assert.matches("vyre.Buffer%(%a+, i32, 4, view of 10 from 3%)", tostring(v))
  -- writes through either are seen by both
  v:fill(-1)
  assert.are.same({ 1, 2, -1, -1, -1, -1, 7, 8, 9, 10 }, b:download():totable())
  b:upload({ 40 }, { first = 4 })
  assert.are.same({ -1, 40, -1, -1 }, v:download():totable())
  v:upload({ 7, 8 }, { first = 3 })
  assert.are.same({ 7, 8 }, b:download({ first = 5, count = 2 }):totable())
  assert.are.same({ 40, 7 }, v:download({ first = 2, count = 2 }):totable())
  -- ranges are checked against the view, not the parent
  assert.matches("outside the 4 held", err(v.download, v, { first = 3, count = 3 }), 1, true)
  -- default count: to the end; a view of a view names the same storage
  local tail = b:view(8)
  assert.are.same({ 8, 9, 10 }, tail:download():totable())
  local vv = v:view(2, 2)
  assert.are.same({ 40, 7 }, vv:download():totable())
  assert.matches("view of 10 from 4", tostring(vv), 1, true)
  vv:iota(100)
  assert.are.same({ 1, 2, -1, 100, 101, 8, 7, 8 }, b:download({ count = 8 }):totable())
  -- empty views at the end are allowed
  assert.are.equal(0, #b:view(11))
  assert.are.equal(0, #b:view(11, 0):download())
  assert.are.equal(0, #b:view(4, 0))
  -- buf:zero on a view clears only the view
  b:view(1, 2):zero()
  assert.are.same({ 0, 0, -1 }, b:download({ count = 3 }):totable())
  -- freeing a view leaves the parent alone
  vv:free()
  assert.is_true(vv.freed)
  assert.are.equal(10, #b:download())
  -- a view keeps its parent alive
  local kept = be:buffer("u32", 5):iota(10):view(2, 3)
  collectgarbage()
  collectgarbage()
  assert.are.same({ 11, 12, 13 }, kept:download():totable())
  -- freeing the parent ends every view, with a clear error
  b:free()
  assert.is_true(v.freed)
  assert.are.equal(0, #v)
  assert.matches("vyre.Buffer:download: this view's parent buffer was freed. Fix:",
    err(v.download, v), 1, true)
  assert.matches("parent buffer was freed", err(tail.fill, tail, 1), 1, true)
  assert.matches("parent buffer was freed", err(v.view, v, 1), 1, true)
  assert.are.equal("vyre.Buffer(" .. be.name .. ", i32, freed)", tostring(v))
end

-- Kernels, sequences and graphs bind a view as its own length.
local function launches(be)
  local p, sp = vyre.parse(H.INC), vyre.parse(SCALE)
  local b = be:buffer("u32", 12)
  local v = b:view(4, 5)
  be:run(p, { v = v })
  assert.are.same({ 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0 }, b:download():totable())
  local k = be:compile(p)
  k:launch({ v = b:view(1, 2) })
  k:bind({ v = b:view(12) }):launch()
  be:sequence({ { k, { v = v } }, { k, { v = b:view(8, 2) } } })
  local g = be:graph({ { k, { v = b:view(11, 1) } } })
  g:launch(3)
  be:synchronize()
  assert.are.same({ 1, 1, 0, 2, 2, 2, 2, 3, 1, 0, 3, 1 }, b:download():totable())
  -- views of f32 at every alignment (the vector entry checks alignment at run time)
  local n = 37
  local xs, ys = be:buffer("f32", n + 3):iota(1), be:buffer("f32", n + 3)
  for off = 1, 4 do
    ys:fill(0.5)
    local x, y = xs:view(off, n), ys:view(5 - off, n)
    be:run(sp, { x = x, y = y, a = 2.0 })
    local want = vyre.array("f32", n):iota(2 * off + 0.5, 2)
    assert.are.same(want:totable(), y:download():totable())
    if off < 4 then -- the element before the view is untouched
      assert.are.same({ 0.5 }, ys:download({ first = 4 - off, count = 1 }):totable())
    end
  end
  -- a freed parent: launches refuse the view
  local c = be:buffer("u32", 4)
  local cv = c:view(1, 2)
  local l = k:bind({ v = cv })
  c:free()
  assert.matches("was freed", err(be.run, be, p, { v = cv }), 1, true)
  assert.matches("was freed", err(k.launch, k, { v = cv }), 1, true)
  assert.matches("was freed", err(l.launch, l), 1, true)
end

-- buf:fill / iota / random: exactly the Array methods' elements, on a view too.
local function fills(be)
  for _, t in ipairs(TYPES) do
    local n = 37
    local function same(method, ...)
      local want = vyre.array(t, n)[method](vyre.array(t, n), ...)
      local got = be:buffer(t, n)[method](be:buffer(t, n), ...)
      assert.are.equal(want:bytes(), got:download():bytes(), t .. ":" .. method)
    end
    same("fill", t == "bool" and true or 3)
    same("random", 42)
    same("random", 0)
    if t ~= "bool" then
      same("iota")
      same("iota", 5)
      same("iota", t:sub(1, 1) == "u" and 2 or -2, 3)
      same("random", 7, 1, 9)
    end
    if t == "f32" or t == "f64" then
      same("iota", 0.25, 0.5)
      same("random", 9, -1.5, 2.5)
    end
  end
  -- on a view: only its elements change, as an Array of the view's length would
  local b = be:buffer("u64", 20)
  local vw = b:view(6, 9)
  assert.are.equal(vw, vw:random(3, 10, 20))
  assert.are.equal(vyre.array("u64", 9):random(3, 10, 20):bytes(),
    b:download({ first = 6, count = 9 }):bytes())
  assert.are.same({ 0, 0, 0, 0, 0 }, b:download({ count = 5 }):totable())
  assert.are.same({ 0, 0, 0, 0, 0, 0 }, b:download({ first = 15 }):totable())
  -- returns the buffer, so calls chain
  local c = be:buffer("i32", 3)
  assert.are.equal(c, c:fill(1))
  assert.are.equal(c, c:iota())
  assert.are.same({ 0, 1, 2 }, c:iota():download():totable())
  assert.are.equal(0, #be:buffer("f32", 0):random(1):download())
end

local function fill_errors(be)
  local b = be:buffer("i32", 4)
  assert.matches("vyre.Buffer:fill: .*Fix:", err(b.fill, b, "x"))
  assert.matches("vyre.Buffer:fill: .*Fix:", err(b.fill, b))
  assert.matches("vyre.Buffer:fill: .*Fix:", err(b.fill, b, 1.5))
  assert.matches("vyre.Buffer:iota: a bool array has no sequence. Fix:",
    err(be:buffer("bool", 2).iota, be:buffer("bool", 2)), 1, true)
  assert.matches("vyre.Buffer:iota: .*Fix:", err(b.iota, b, "a"))
  assert.matches("vyre.Buffer:random: a seed is needed. Fix:", err(b.random, b), 1, true)
  assert.matches("vyre.Buffer:random: lo is above hi. Fix:", err(b.random, b, 1, 5, 1), 1, true)
  assert.matches("vyre.Buffer:random: .*Fix:", err(b.random, b, "seed"))
  local f = be:buffer("f32", 2)
  assert.matches("vyre.Buffer:random: the range .* is empty or not finite. Fix:",
    err(f.random, f, 1, 2, 1))
  assert.matches("vyre.Buffer:fill: called on a string, not a vyre.Buffer. Fix:",
    err(b.fill, "nope", 1), 1, true)
  -- nothing was written by a failing call
  assert.are.same({ 0, 0, 0, 0 }, b:download():totable())
  b:free()
  assert.matches("vyre.Buffer:iota: the buffer was freed. Fix:", err(b.iota, b), 1, true)
end

local function view_errors(be)
  local b = be:buffer("f32", 10)
  local function bad(pat, ...)
    local msg = err(b.view, b, ...)
    assert.matches("^vyre.Buffer:view: ", msg)
    assert.matches("Fix:", msg, 1, true)
    assert.matches(pat, msg, 1, true)
  end
  bad("first must be an element index 1..11 (got nil)")
  bad("first must be an element index 1..11 (got 0)", 0)
  bad("first must be an element index 1..11 (got 12)", 12)
  bad("first must be an element index 1..11 (got -3)", -3)
  bad("count 11 from element 1 does not fit the 10 elements held", 1, 11)
  bad("count 2 from element 10 does not fit", 10, 2)
  bad("count -1 from element 3", 3, -1)
  bad("first", 1.5)
  bad("first", "a")
  bad("count", 1, {})
  assert.matches("vyre.Buffer:view: .*Fix:", err(b.view, "buf", 1))
  assert.matches("vyre.Buffer:view: .*Fix:", err(b.view, vyre.array("f32", 3), 1))
  local v = b:view(2, 3)
  assert.matches("count 3 from element 2 does not fit the 3 elements held",
    err(v.view, v, 2, 3), 1, true)
  b:free()
  assert.matches("vyre.Buffer:view: the buffer was freed. Fix:", err(b.view, b, 1), 1, true)
end

describe("buffer views and fills on the reference backend", function()
  local be = vyre.backend("reference")

  it("alias part of the parent's storage and end when the parent is freed", function()
    views(be)
  end)

  it("bind as their own length in run, launch, bind, sequence and graph", function()
    launches(be)
  end)

  it("cost no memory and count in no buffer statistic", function()
    local r = vyre.backend("reference")
    local b = r:buffer("f64", 100)
    local s0 = r:stats()
    local vs = {}
    for i = 1, 10 do vs[i] = b:view(i, 5) end
    local s1 = r:stats()
    assert.are.equal(s0.live_buffers, s1.live_buffers)
    assert.are.equal(s0.live_buffer_bytes, s1.live_buffer_bytes)
    assert.are.equal(s0.buffers_created, s1.buffers_created)
    b:free()
    assert.are.equal(s0.live_buffers - 1, r:stats().live_buffers)
    for i = 1, 10 do assert.is_true(vs[i].freed) end
  end)

  it("fill, iota and random give what the Array methods give", function()
    fills(be)
    -- reference buffers are filled in place: pointer() does not move
    local b = be:buffer("i32", 8)
    local p = b:pointer()
    b:iota()
    assert.are.equal(p, b:pointer())
    assert.are.equal(p + 8, b:view(3):pointer())
  end)

  it("raise clear errors for bad fills", function()
    fill_errors(be)
  end)

  it("raise clear errors for bad ranges, freed buffers and wrong types", function()
    view_errors(be)
  end)

  it("works with many views created and dropped in any order", function()
    local b = be:buffer("u32", 64):iota()
    for round = 1, 5 do
      local vs = {}
      for i = 1, 32 do vs[i] = b:view(i, 8):view(2, 4) end
      for i = 32, 1, -3 do vs[i]:free() end
      for i = 1, 32 do
        if not vs[i].freed then
          assert.are.same(seq(i, i + 3), vs[i]:download():totable(), "round " .. round)
        end
      end
      vs = nil -- luacheck: ignore 311
      collectgarbage()
    end
    b:free()
  end)
end)

describe("array views", function()
  it("alias part of the array, nest, and end when the parent is freed", function()
    local a = vyre.array("f64", 10):iota(1)
    local v = a:view(3, 4)
    assert.are.equal(4, #v)
    assert.are.same({ 3, 4, 5, 6 }, v:totable())
    v[2] = -4
    v:fill(0.5, nil)
    a[6] = 60
    assert.are.same({ 1, 2, 0.5, 0.5, 0.5, 60, 7 }, { table.unpack(a:totable(), 1, 7) })
    local vv = v:view(2)
    assert.are.same({ 0.5, 0.5, 60 }, vv:totable())
    vv:iota(10)
    assert.are.same({ 0.5, 10, 11, 12 }, v:totable())
    assert.are.equal(vyre.array("f64", { 0.5, 10, 11, 12 }), v)
    assert.are.same({ 8, 9, 10 }, a:view(8):totable())
    assert.are.equal(0, #a:view(11))
    -- a copy owns its memory; views bind like any array
    local c = v:copy()
    c[1] = 99
    assert.are.equal(0.5, v[1])
    local be = vyre.backend("reference")
    local f = vyre.array("f32", 8):iota(1)
    local out = be:run(vyre.parse(SCALE), { x = f:view(1, 4), y = f:view(5, 4), a = 2.0 })
    assert.are.same({ 7, 10, 13, 16 }, out.y:totable())
    assert.are.same({ 5, 6, 7, 8 }, f:view(5):totable()) -- run returns new arrays
    assert.are.same({ 1, 2, 0.5, 10 }, be:buffer("f64", a:view(1, 4)):download():totable())
    -- a view keeps its parent alive
    local kept = vyre.array("u32", 5):iota(10):view(2, 3)
    collectgarbage()
    collectgarbage()
    assert.are.same({ 11, 12, 13 }, kept:totable())
    -- freeing a view leaves the parent; freeing the parent ends the views
    vv:free()
    assert.are.equal(10, #a)
    a:free()
    assert.are.equal(0, #v)
    assert.matches("vyre.Array:totable: this view's parent array was freed. Fix:",
      err(v.totable, v), 1, true)
    assert.matches("parent array was freed", err(function() return v[1] end), 1, true)
  end)

  it("raise clear errors for bad ranges", function()
    local a = vyre.array("u32", 5)
    local function bad(pat, ...)
      local msg = err(a.view, a, ...)
      assert.matches("^vyre.Array:view: ", msg)
      assert.matches("Fix:", msg, 1, true)
      assert.matches(pat, msg, 1, true)
    end
    bad("first must be an element index 1..6 (got nil)")
    bad("first must be an element index 1..6 (got 0)", 0)
    bad("first must be an element index 1..6 (got 7)", 7)
    bad("count 6 from element 1 does not fit the 5 elements held", 1, 6)
    bad("count -2", 2, -2)
    bad("first", "x")
    bad("count", 1, 0.5)
    assert.matches("vyre.Array:view: .*Fix:", err(a.view, "a", 1))
    a:free()
    assert.matches("vyre.Array:view: this vyre.Array was freed. Fix:", err(a.view, a, 1), 1,
      true)
  end)
end)

describe("buffer views and fills on the fake CUDA driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end
  local be
  setup(function()
    be = F.device()
    F.register(H.INC)
    F.register(SCALE)
  end)

  it("alias device memory and end when the parent is freed", function()
    views(be)
    local b = be:buffer("f64", 8)
    assert.are.equal(b:pointer() + 8 * 5, b:view(6):pointer())
    assert.are.equal(b:pointer() + 8 * 2, b:view(3, 1):pointer())
  end)

  it("bind as their own length in launches", function() launches(be) end)

  it("fill, iota and random as the Array methods", function() fills(be) end)

  it("raise clear errors", function()
    fill_errors(be)
    view_errors(be)
  end)

  it("leave no device memory behind", function()
    collectgarbage()
    collectgarbage()
    local s = be:stats()
    local b = be:buffer("u32", 16)
    local v = b:view(2, 3)
    assert.are.equal(s.live_buffers + 1, be:stats().live_buffers)
    v:free()
    b:free()
    assert.are.equal(s.live_buffers, be:stats().live_buffers)
    assert.are.equal(0, (F.misuse()))
  end)
end)

describe("buffer views and fills on CUDA #gpu", function()
  local be
  setup(function() be = assert(vyre.backend("cuda")) end)

  it("alias device memory and end when the parent is freed #gpu", function()
    views(be)
  end)

  it("bind as their own length, misaligned f32 views included #gpu", function()
    launches(be)
  end)

  it("fill, iota and random give what the Array methods give #gpu", function()
    fills(be)
  end)

  it("raise clear errors #gpu", function()
    fill_errors(be)
    view_errors(be)
  end)

  -- On CUDA the generators are vyre.lib kernels (lib/basic.lua): bit for bit the host
  -- loop's elements at sizes where f32 loses integers (iota past 2^24), where a draw may
  -- round up to hi, and on the 64-bit integer paths (mulhi, every value).
  it("fill, iota and random on the device give the host loop's elements at size #gpu", function()
    local function same(t, n, method, ...)
      local want = vyre.array(t, n)[method](vyre.array(t, n), ...)
      local got = be:buffer(t, n)[method](be:buffer(t, n), ...)
      assert(want:bytes() == got:download():bytes(), ("%s:%s at %d"):format(t, method, n))
    end
    same("f32", (1 << 25) + 3, "iota", 0.5, 0.1)
    same("f64", 1000003, "iota", -3.0, 1e-3)
    same("f32", 1000003, "random", 5, -1, 1)
    same("f32", 1000003, "random", 6, 1.0, 1.0000002)
    same("f64", 1000003, "random", 7, -1e300, 1e300)
    same("i64", 1000003, "random", 8, math.mininteger, math.maxinteger - 3)
    same("u64", 1000003, "random", 9)
    same("i32", 1000003, "random", 10, -1000, 1000)
    same("bool", 1000003, "random", 11)
    same("u32", 1000003, "fill", 0xDEADBEEF)
    same("i64", 1000003, "iota", math.maxinteger - 10, 7)
  end)

  it("agree with the reference backend element for element #gpu", function()
    local ref = vyre.backend("reference")
    local sp = vyre.parse(SCALE)
    local result = {}
    for i, b in ipairs({ ref, be }) do
      local x = b:buffer("f32", 1001):random(11, -1, 1)
      local y = b:buffer("f32", 1001):random(12, -1, 1)
      b:run(sp, { x = x:view(2, 999), y = y:view(3, 999), a = 1.25 })
      result[i] = y:download():bytes()
    end
    assert.are.equal(result[1], result[2])
  end)
end)
