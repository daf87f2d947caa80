-- 72: the reference backend's debug mode (ARCHITECTURE.md §3, §7): out-of-bounds loads
-- and stores are counted per declaration and reported by be:oob_report(), and the
-- results stay exactly those of a backend without it (loads past the end read 0,
-- stores are dropped).
local vyre = require("vyre")
local H = require("spec.helpers")

-- o[i + 2] = a[i + 1] over 4 invocations: a read past its end once, o written twice.
local SHIFT = H.SHIFT_OOB

-- Shared memory and an atomic: s[i + 2] for i < 4 of a shared array of 4, then an
-- atomic add at c[i] of a 1-element counter.
local SHARED = [[
(program sh (workgroup 4)
  (buffer c u32 read_write) (buffer o u32 write)
  (shared s u32 4)
  (let i (gid x))
  (store s (add i 2u32) i)
  (barrier)
  (store o i (load s i))
  (atomic add c i 1u32))]]

local function inputs()
  return { a = vyre.array("u32", { 1, 2, 3, 4 }), o = vyre.array("u32", 4) }
end

describe("debug mode on the reference backend", function()
  it("counts out-of-bounds loads and stores per buffer, results unchanged", function()
    local p = vyre.parse(SHIFT)
    local plain = vyre.reference.new()
    local be = vyre.reference.new({ debug = true })
    assert.is_true(be:debug())
    assert.is_false(plain:debug())
    local want = plain:run(p, inputs())
    local got = be:run(p, inputs())
    assert.are.equal(want.o, got.o)
    assert.are.same({ 0, 0, 2, 3 }, got.o:totable())
    assert.are.same({ a = { loads = 1, stores = 0 }, o = { loads = 0, stores = 2 } },
      be:oob_report())
    assert.are.same({}, plain:oob_report())
  end)

  it("a report covers the runs since the last one", function()
    local p = vyre.parse(SHIFT)
    local be = vyre.reference.new({ debug = true })
    be:run(p, inputs())
    be:run(p, inputs())
    assert.are.same({ a = { loads = 2, stores = 0 }, o = { loads = 0, stores = 4 } },
      be:oob_report())
    assert.are.same({}, be:oob_report())
  end)

  it("counts kernel launches and sequences too, and stops when switched off", function()
    local be = vyre.reference.new()
    assert.is_true(be:debug(true))
    local k = be:compile(vyre.parse(SHIFT))
    local a, o = be:buffer("u32", 4), be:buffer("u32", 4)
    k:launch({ a = a, o = o })
    be:sequence({ { k, { a = a, o = o } } }, { times = 3 })
    assert.are.same({ a = { loads = 4, stores = 0 }, o = { loads = 0, stores = 8 } },
      be:oob_report())
    assert.is_false(be:debug(false))
    k:launch({ a = a, o = o })
    assert.are.same({}, be:oob_report())
  end)

  it("switching starts a new report", function()
    local be = vyre.reference.new({ debug = true })
    be:run(vyre.parse(SHIFT), inputs())
    be:debug(true)
    assert.are.same({}, be:oob_report())
  end)

  it("counts shared memory and atomics (as stores)", function()
    local p = vyre.parse(SHARED)
    local plain, be = vyre.reference.new(), vyre.reference.new({ debug = true })
    local args = function() return { c = vyre.array("u32", 1), o = vyre.array("u32", 4) } end
    local want, got = plain:run(p, args()), be:run(p, args())
    assert.are.equal(want.o, got.o)
    assert.are.equal(want.c, got.c)
    assert.are.same({ 1 }, got.c:totable())
    assert.are.same({ s = { loads = 0, stores = 2 }, c = { loads = 0, stores = 3 } },
      be:oob_report())
  end)

  it("reports nothing for a program that stays in bounds", function()
    local be = vyre.reference.new({ debug = true })
    local p = vyre.parse([[(program ok (workgroup 4) (buffer o u32 write) (let i (gid x))
      (if (lt i (len o)) (then (store o i i))))]])
    be:run(p, { o = vyre.array("u32", 6) })
    assert.are.same({}, be:oob_report())
  end)

  it("is an option of vyre.backend too", function()
    local be = vyre.backend("reference", { debug = true })
    assert.is_true(be:debug())
    be:run(vyre.parse(SHIFT), inputs())
    assert.are.same({ a = { loads = 1, stores = 0 }, o = { loads = 0, stores = 2 } },
      be:oob_report())
    assert.is_false(vyre.backend("reference"):debug())
  end)

  it("starts as $VYRE_DEBUG says", function()
    local code = "print((require(\"vyre.reference\").new():debug()))"
    assert.are.equal("true\n", H.lua_child("VYRE_DEBUG=1", code))
    assert.are.equal("false\n", H.lua_child("VYRE_DEBUG=0", code))
  end)

  it("has debug PTX for CUDA: counters as the last parameter, one count per guard", function()
    local p = vyre.parse(SHIFT)
    local plain, dbg = vyre.ptx(p, { sm = 90 }), vyre.ptx(p, { sm = 90, debug = true })
    assert.is_nil(plain:find("vy_oob", 1, true))
    assert.matches("%.param %.u64 vy_oob\n%)", dbg)
    -- a: loads at byte offset 0 of the counters; o: stores at 16 * 1 + 8
    assert.matches("@!%%p%d+ red%.global%.add%.u64 %[%%rd%d+%+0%], 1", dbg)
    assert.matches("@!%%p%d+ red%.global%.add%.u64 %[%%rd%d+%+24%], 1", dbg)
    local _, guards = dbg:gsub("red%.global%.add%.u64", "")
    assert.are.equal(2, guards)
    -- an elementwise program loses its vector entry in debug mode
    local ew = vyre.parse([[(program ew (workgroup 64) (buffer o u32 write) (let i (gid x))
      (if (lt i (len o)) (then (store o i i))))]])
    assert.truthy(vyre.ptx(ew, { sm = 90 }):find("ew_v4", 1, true))
    assert.is_nil(vyre.ptx(ew, { sm = 90, debug = true }):find("ew_v4", 1, true))
  end)

  it("refuses bad switches with a fix", function()
    local be = vyre.reference.new()
    assert.matches("vyre.Backend:debug: on must be a boolean %(got number%)%. Fix:",
      H.error_of(be.debug, be, 1))
    assert.matches("vyre.reference.new: debug must be a boolean (got string). Fix:",
      H.error_of(vyre.reference.new, { debug = "yes" }), 1, true)
    assert.matches("called on a number, not a vyre.Backend", H.error_of(be.oob_report, 3))
    be:free()
    assert.matches("freed", H.error_of(be.oob_report, be))
  end)
end)
