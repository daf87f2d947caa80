-- 02: vyre.Program — text format, canonical printing, hash, fields, equality,
-- random programs and PTX text (no GPU needed).
local vyre = require("vyre")
local H = require("spec.helpers")

describe("vyre.parse and p:text()", function()
  it("prints the canonical text of a canonical program unchanged", function()
    local p = H.saxpy()
    assert.are.equal(H.saxpy_text, p:text())
    assert.are.equal(H.saxpy_text, tostring(p))
  end)

  it("canonicalises layout, comments and literal spellings", function()
    local p = H.parse([[
      ; a comment
      (program  lits (workgroup 4 1 1)
        (buffer o f32 write)   (param h u64)
        (store o 0u32 1.5f32) (store o 1u32 1e-3f32)
        (store o 0xffu32 nanf32)
        (store o 2u32 (cast f32 0xffffffffffffffffu64)))]])
    assert.are.equal([[
(program lits (workgroup 4)
  (buffer o f32 write)
  (param h u64)
  (store o 0u32 0x1.8p+0f32)
  (store o 1u32 0x1.0624dep-10f32)
  (store o 255u32 nan:0x7fc00000f32)
  (store o 2u32 (cast f32 18446744073709551615u64)))
]], p:text())
  end)

  it("prints workgroup y and z only when they are not 1", function()
    assert.matches("(workgroup 8 4)", H.parse("(program a (workgroup 8 4 1))"):text(), 1, true)
    assert.matches("(workgroup 8 1 2)", H.parse("(program b (workgroup 8 1 2))"):text(), 1, true)
  end)

  it("exposes name, workgroup and declarations", function()
    local p = H.parse([[
(program decls (workgroup 16 2 1)
  (buffer x f32 read)
  (shared s u32 64)
  (buffer y i64 write 10)
  (param a f32)
  (param b bool))
]])
    assert.are.equal("decls", p.name)
    assert.are.same({ 16, 2, 1, x = 16, y = 2, z = 1 }, p.workgroup)
    assert.are.same({
      { kind = "buffer", name = "x", type = "f32", access = "read", count = 0, slot = 1 },
      { kind = "shared", name = "s", type = "u32", count = 64, slot = 1 },
      { kind = "buffer", name = "y", type = "i64", access = "write", count = 10, slot = 2 },
      { kind = "param", name = "a", type = "f32", slot = 1 },
      { kind = "param", name = "b", type = "bool", slot = 2 },
    }, p:decls())
  end)

  it("hashes the canonical text as 16 hex digits, stable across parses", function()
    local h = H.saxpy():hash()
    assert.matches("^%x+$", h)
    assert.are.equal(16, #h)
    assert.are.equal(h, vyre.parse(H.saxpy():text()):hash())
    local other = H.parse((H.saxpy_text:gsub("256", "128")))
    assert.are_not.equal(h, other:hash())
  end)

  it("compares programs structurally with ==", function()
    local a = H.saxpy()
    local b = vyre.parse(H.saxpy_text:gsub("\n%s*", " "))
    assert.is_true(a == b)
    local c = H.parse((H.saxpy_text:gsub("read_write", "write")))
    assert.is_false(a == c)
  end)

  it("round-trips parse(print(p)) == p", function()
    assert.is_true(H.roundtrips(H.saxpy()))
  end)

  it("raises syntax errors naming line and column", function()
    local msg = H.error_of(vyre.parse, "(program x (workgroup 1)\n  (let a 5u32 )")
    assert.matches("^vyre.parse: line 2, column %d+: ", msg)
    msg = H.error_of(vyre.parse, "(program x (workgroup 1)\n  (let a 5u32)))")
    assert.matches("vyre.parse: line 2, column 16: expected end of input", msg, 1, true)
    assert.matches("Fix:", msg, 1, true)
    assert.matches("^vyre.parse: line 1, column %d+: .*", H.error_of(vyre.parse,
      "(program x (workgroup 1) (let a 300000000000u32))"))
  end)

  it("rejects non-string input", function()
    assert.matches("bad argument #1 to '[%w.]*parse' %(string expected, got boolean%)",
      H.error_of(vyre.parse, false))
  end)
end)

describe("vyre.random_program", function()
  it("is deterministic per seed and valid by default", function()
    for seed = 1, 20 do
      local p = H.register(vyre.random_program(seed), "random " .. seed)
      assert.are.equal(p:text(), vyre.random_program(seed):text())
      assert.is_true(vyre.validate(p))
      assert.is_true(H.roundtrips(p))
    end
    assert.are_not.equal(vyre.random_program(1):text(), vyre.random_program(2):text())
  end)

  it("takes options, and allow_invalid usually breaks a rule", function()
    local p = vyre.random_program(3, { max_stmts = 2, max_depth = 2, allow_barriers = true })
    assert.is_true(vyre.validate(p))
    local invalid = 0
    for seed = 1, 10 do
      if not vyre.validate(vyre.random_program(seed, { allow_invalid = true })) then
        invalid = invalid + 1
      end
    end
    assert.is_true(invalid >= 5)
    assert.matches("option 'max_stmts' must be an integer",
      H.error_of(vyre.random_program, 1, { max_stmts = "x" }), 1, true)
  end)
end)

describe("vyre.ptx", function()
  it("emits PTX text for a target without a GPU", function()
    local ptx = vyre.ptx(H.saxpy(), { sm = 80 })
    assert.matches(".target sm_80", ptx, 1, true)
    assert.matches(".visible .entry saxpy(", ptx, 1, true)
    assert.matches(".param .f32 p_a", ptx, 1, true)
    assert.matches(".target sm_70", vyre.ptx(H.saxpy()), 1, true)
  end)

  it("raises for an invalid program, naming vyre.ptx", function()
    local p = H.parse("(program bad (workgroup 1) (buffer o u32 write) (store o 0u32 1.5f32))")
    assert.matches("^vyre.ptx: ", H.error_of(vyre.ptx, p, { sm = 80 }))
  end)
end)
