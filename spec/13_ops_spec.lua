-- 13: the operator table (core.ops(), from src/core/ir/ops.h) and the DSL built from
-- it: every op, on every operand type its class admits, has a DSL method (and each of
-- its Lua operators) that builds exactly `(NAME a b)` / `(NAME a)` with the row's
-- result type; reserved names (core.reserved_names()) are refused by the DSL with the
-- validator's own words; atomics come from core.atomic_ops(). docs/OPS.md.
local vyre = require("vyre")
local core = require("vyre.core")
local H = require("spec.helpers")

-- How each Lua metamethod is written as an operator. A metamethod the table names
-- but this list does not is a spec failure: say here how a user writes it.
local SPELL = {
  __add = "a + b", __sub = "a - b", __mul = "a * b", __div = "a / b", __idiv = "a // b",
  __mod = "a % b", __band = "a & b", __bor = "a | b", __bxor = "a ~ b", __shl = "a << b",
  __shr = "a >> b", __unm = "-a", __bnot = "~a",
}

local function operator(mm)
  local src = SPELL[mm]
  if not src then return nil end
  return assert(load("local a, b = ... return " .. src, "=" .. mm))
end

-- Builds (let r EXPR) with params a and b of type t; returns the text after "let r "
-- and the expression object fn returned.
local function build(t, fn)
  local made
  local p = H.program("op", { workgroup = 1, vyre.param("a", t), vyre.param("b", t) },
    function(k)
      made = fn(k.a, k.b)
      k:let("r", made)
    end)
  return p:text():match("%(let r (.*)%)%)\n$"), made
end

local function expected_text(op)
  return op.arity == 2 and ("(" .. op.name .. " a b)") or ("(" .. op.name .. " a)")
end

local function expected_type(op, t)
  return op.result == "BOOL" and "bool" or t
end

describe("core.ops()", function()
  local ops = core.ops()

  it("lists every op with its columns", function()
    assert.is_true(#ops > 0)
    local names, methods = {}, {}
    local types = {}
    for _, t in ipairs(core.types()) do types[t] = true end
    local classes = core.op_classes()
    for i, op in ipairs(ops) do
      assert.are.equal("string", type(op.name), "op " .. i)
      assert.is_nil(names[op.name], "duplicate op " .. op.name)
      names[op.name] = true
      assert.is_nil(methods[op.method], "duplicate DSL method " .. op.method)
      methods[op.method] = true
      assert.is_true(op.arity == 1 or op.arity == 2, op.name)
      assert.is_true(op.result == "SAME" or op.result == "BOOL", op.name)
      assert.are.equal("boolean", type(op.approximate), op.name)
      assert.is_table(classes[op.operands], op.name .. ": unknown class " .. op.operands)
      assert.are.same(classes[op.operands], op.types, op.name)
      assert.is_true(#op.types > 0, op.name)
      for _, t in ipairs(op.types) do assert.is_true(types[t], op.name .. " " .. t) end
      for _, mm in ipairs(op.metamethods) do
        assert.truthy(SPELL[mm], op.name .. ": the spec does not know how to write " .. mm)
      end
    end
  end)

  it("gives every op, on every type it admits, a DSL method that builds (NAME ...)", function()
    local n = 0
    for _, op in ipairs(ops) do
      for _, t in ipairs(op.types) do
        local text, e = build(t, function(a, b)
          local m = a[op.method]
          assert.is_function(m, op.name .. ": no DSL method " .. op.method)
          return m(a, b)
        end)
        assert.are.equal(expected_text(op), text, op.name .. " on " .. t)
        assert.are.equal(expected_type(op, t), e.type, op.name .. " on " .. t)
        n = n + 1
      end
    end
    assert.is_true(n >= #ops)
  end)

  it("builds the same text through each op's Lua operators", function()
    local seen = 0
    for _, op in ipairs(ops) do
      for _, mm in ipairs(op.metamethods) do
        local f = operator(mm)
        for _, t in ipairs(op.types) do
          local text, e = build(t, f)
          assert.are.equal(expected_text(op), text, mm .. " on " .. t)
          assert.are.equal(expected_type(op, t), e.type, mm .. " on " .. t)
        end
        seen = seen + 1
      end
    end
    assert.is_true(seen > 0)
    -- plain Lua numbers take the expression's type on either side
    local text = build("u32", function(a) return 3 - a end)
    assert.are.equal("(sub 3u32 a)", text)
    text = build("bool", function(a) return a:land(vyre.lit("bool", true)) end)
    assert.are.equal("(land a true)", text)
  end)

  it("lets the validator refuse a type outside the op's class", function()
    local msg = H.error_of(vyre.program, "bad", { vyre.param("a", "f32") }, function(k)
      k:let("r", k.a:popcount())
    end)
    assert.matches("popcount needs an integer operand, got f32", msg, 1, true)
  end)
end)

describe("core.reserved_names()", function()
  local reserved = core.reserved_names()

  it("holds the literal spellings and every type name", function()
    local set = {}
    for _, n in ipairs(reserved) do set[n] = true end
    for _, n in ipairs({ "true", "false", "inf", "nan", "inff32", "inff64", "nanf32",
      "nanf64" }) do
      assert.is_true(set[n], n)
    end
    for _, t in ipairs(core.types()) do assert.is_true(set[t], t) end
  end)

  -- The validator's message (and Fix) for a reserved name, from parsed text.
  local function validator_says(text)
    local ok, probs = vyre.validate(vyre.parse(text))
    assert.is_false(ok)
    assert.are.equal("reserved-name", probs[1].code)
    return probs[1].message .. ". Fix: " .. probs[1].fix
  end

  it("is refused by the DSL with the validator's words", function()
    for _, n in ipairs(reserved) do
      local want = validator_says("(program t (workgroup 1) (let " .. n .. " 1u32))")
      local msg = H.error_of(vyre.program, "t", {}, function(k)
        k:let(n, vyre.lit("u32", 1))
      end)
      assert.matches("vyre.program: k:let: " .. want, msg, 1, true)

      want = validator_says("(program t (workgroup 1) (buffer " .. n .. " f32 read))")
      assert.matches("vyre.buffer: " .. want, H.error_of(vyre.buffer, n, "f32", "read"), 1, true)
      want = validator_says("(program t (workgroup 1) (param " .. n .. " f32))")
      assert.matches("vyre.param: " .. want, H.error_of(vyre.param, n, "f32"), 1, true)
    end
  end)

  it("still refuses names that are not identifiers as before", function()
    assert.matches("is not a valid name", H.error_of(vyre.param, "2x", "u32"), 1, true)
  end)
end)

describe("core.atomic_ops()", function()
  it("are the ops k:atomic takes, and the list its error names", function()
    local list = core.atomic_ops()
    assert.are.equal("cas", list[#list])
    for _, op in ipairs(list) do
      local p = H.program("at", { vyre.buffer("h", "u32", "read_write") }, function(k)
        k:atomic(op, k.h, 0, 1, 2)
      end)
      assert.matches("(atomic " .. op .. " h 0u32 1u32", p:text(), 1, true)
    end
    local msg = H.error_of(vyre.program, "at", { vyre.buffer("h", "u32", "read_write") },
      function(k) k:atomic("nope", k.h, 0, 1) end)
    assert.matches("unknown atomic op nope. Fix: use "
      .. table.concat(list, ", ", 1, #list - 1) .. " or " .. list[#list], msg, 1, true)
  end)
end)
