-- 15: the DSL's traps closed. Lua's ==, ~=, not, and, or cannot build expressions, so
-- a plain boolean where an expression goes is an error naming :eq/:ne/:lnot/:land/:lor,
-- and a condition dropped by `and`/`or` (built, never used) is an error naming
-- :land/:lor; names are scoped like Lua locals so helpers compose; a plain number with
-- no type suggests the type it looks like; a validator problem is reported at the line
-- that built the statement, with one DSL-style Fix.
local vyre = require("vyre")
local H = require("spec.helpers")

local function program_error(body, decls)
  return H.error_of(vyre.program, "t", decls or {
    vyre.buffer("x", "u32", "read"), vyre.buffer("y", "u32", "read_write"),
    vyre.param("n", "u32") }, body)
end

local FIXES = "Fix: write a:eq(b), a:ne(b), c:lnot(), a:land(b), a:lor(b)"

describe("DSL traps", function()
  it("rejects == on an expression (Lua gives false), naming :eq", function()
    local msg = program_error(function(k)
      local i = k:let("i", k.gid.x)
      k:when(k.x[i] == 0, function() k.y[i] = 1 end)
    end)
    assert.matches("plain Lua boolean false", msg, 1, true)
    assert.matches(FIXES, msg, 1, true)
    assert.matches("spec/15_dsl_traps_spec.lua:", msg, 1, true)
  end)

  it("rejects `not cond` (Lua gives false), naming :lnot", function()
    local msg = program_error(function(k)
      local i = k:let("i", k.gid.x)
      k:when(not i:lt(2), function() k.y[i] = 1 end)
    end)
    assert.matches("c:lnot()", msg, 1, true)
  end)

  it("rejects a condition dropped by `and`, naming :land and the line that built it", function()
    local line = debug.getinfo(1, "l").currentline + 3
    local msg = program_error(function(k)
      local i = k:let("i", k.gid.x)
      k:when(i:ge(1) and i:lt(k.n), function() k.y[i] = 1 end)
    end)
    assert.matches("spec/15_dsl_traps_spec.lua:" .. line .. ": the condition (ge i 1u32) is "
      .. "built but never used", msg, 1, true)
    assert.matches("Fix: combine conditions with a:land(b) or a:lor(b)", msg, 1, true)
  end)

  it("rejects plain booleans in select, stores, lets and operands", function()
    for _, body in ipairs({
      function(k) k:let("s", vyre.select(true, 1, 2)) end,
      function(k) k.y[0] = false end,
      function(k) k:let("b", true) end,
      function(k) k:let("c", k.gid.x:lt(1):lor(k.gid.x == 3)) end,
    }) do
      assert.matches("plain Lua boolean", program_error(body), 1, true)
    end
    -- the way to a boolean constant
    local p = vyre.program("lit", { vyre.buffer("o", "bool", "write", 1) }, function(k)
      k.o[0] = vyre.lit("bool", true):land(k.gid.x:eq(0))
    end)
    assert.are.same({ true }, H.ref():run(p, {}).o:totable())
  end)

  it("scopes names: sibling loops and helpers that let the same name compose", function()
    local function add_twice(k, v) -- a helper that names its temporary "tmp"
      local tmp = k:let("tmp", v + 1)
      return tmp + 1
    end
    local p = vyre.program("scoped", { workgroup = 1, vyre.buffer("o", "u32", "write", 2) },
      function(k)
        local acc = k:var("acc", vyre.lit("u32", 0))
        k:for_("j", 0, 3, function(j) acc:set(acc + j) end)
        k:for_("j", 0, 4, function(j) acc:set(acc + j) end)
        k.o[0] = acc
        k.o[1] = add_twice(k, add_twice(k, vyre.lit("u32", 10)))
      end)
    assert.are.same({ 3 + 6, 14 }, H.ref():run(p, {}).o:totable())
    assert.matches("(for j_2 ", p:text(), 1, true)
    assert.matches("(let tmp_2 ", p:text(), 1, true)
  end)

  it("suggests the type a plain number looks like", function()
    local msg = program_error(function(k) k:var("acc", 0.0) end)
    assert.matches("vyre.lit('f32', 0.0) (or 'f64')", msg, 1, true)
    msg = program_error(function(k) k:var("count", 3) end)
    assert.matches("vyre.lit('u32', 3)", msg, 1, true)
  end)

  it("reports a validator problem at the statement's line with a DSL-style fix", function()
    local line = debug.getinfo(1, "l").currentline + 4
    local msg = program_error(function(k)
      local f = k:let("f", vyre.lit("f32", 1.5))
      k:when(k.gid.x:lt(k.n), function()
        k.y[f] = 1
      end)
    end)
    assert.matches("vyre.program: spec/15_dsl_traps_spec.lua:" .. line .. ": ", msg, 1, true)
    assert.matches("Fix: wrap the index in vyre.cast('u32', e)", msg, 1, true)
    local _, fixes = msg:gsub("Fix:", "")
    assert.are.equal(1, fixes, msg)
  end)
end)
