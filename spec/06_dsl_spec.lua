-- 06: the Lua DSL builds exactly the IR that the equivalent text parses to.
local vyre = require("vyre")
local H = require("spec.helpers")

local function dsl(name, spec, fn)
  return H.program(name, spec, fn)
end

-- One-statement program around an expression built by fn(k).
local function expr_text(decls, fn)
  local spec = { workgroup = 1, vyre.buffer("o", "f32", "write", 1) }
  for _, d in ipairs(decls) do spec[#spec + 1] = d end
  local p = dsl("e", spec, function(k)
    k:let("r", fn(k))
  end)
  return p:text():match("%(let r (.*)%)%)\n$")
end

describe("vyre.program (DSL)", function()
  it("builds saxpy equal to the hand-written text", function()
    local p = dsl("saxpy", { workgroup = 256,
      vyre.buffer("x", "f32", "read"), vyre.buffer("y", "f32", "read_write"),
      vyre.param("a", "f32") },
      function(k)
        local i = k:let("i", k.gid.x)
        k:when(i:lt(k.y:len()), function()
          k.y[i] = k.a * k.x[i] + k.y[i]
        end)
      end)
    assert.is_true(p == H.saxpy())
    assert.are.equal(H.saxpy_text, p:text())
    assert.are.equal(H.saxpy():hash(), p:hash())
  end)

  it("builds control flow, atomics, shared memory and barriers like the text", function()
    local p = dsl("full", { workgroup = { 8, 2 },
      vyre.buffer("x", "f32", "read"), vyre.buffer("h", "u32", "read_write"),
      vyre.buffer("o", "i32", "write", 4), vyre.shared("s", "u32", 16),
      vyre.param("a", "f32"), vyre.param("n", "u32") },
      function(k)
        local i = k:let("i", k.gid.x)
        local v = k:var("v", 0.5 * k.a)
        v:set(v + 1)
        k:when(i:lt(k.n):land(vyre.lit("bool", true)), function()
          k.h[i % 4] = (i << 2) | 1
          local old = k:let("old", k:atomic("add", k.h, 0, 1))
          k.o[0] = vyre.cast("i32", old) // 2 - 7
        end, function()
          k.o[3] = 1
        end)
        k:for_("j", 0, k.n, 2, function(j)
          k:when(j:eq(3), function() k:break_() end)
          k.s[j] = -j
        end)
        k:barrier()
        k:atomic("cas", k.h, 1, 5, 6)
        k.o[1] = vyre.select(v:gt(1.5), vyre.bitcast("i32", v), -1)
        k.o[2] = vyre.cast("i32", vyre.fma(v, 2, k.x[i]):sqrt():floor())
        k:return_()
      end)
    local text = [[
(program full (workgroup 8 2)
  (buffer x f32 read)
  (buffer h u32 read_write)
  (buffer o i32 write 4)
  (shared s u32 16)
  (param a f32)
  (param n u32)
  (let i (gid x))
  (let v (mul 0.5f32 a))
  (set v (add v 1.0f32))
  (if (land (lt i n) true)
    (then
      (store h (rem i 4u32) (or (shl i 2u32) 1u32))
      (let old (atomic add h 0u32 1u32))
      (store o 0u32 (sub (div (cast i32 old) 2i32) 7i32)))
    (else (store o 3u32 1i32)))
  (for j 0u32 n 2u32
    (if (eq j 3u32)
      (then (break)))
    (store s j (neg j)))
  (barrier)
  (atomic cas h 1u32 5u32 6u32)
  (store o 1u32 (select (gt v 1.5f32) (bitcast i32 v) -1i32))
  (store o 2u32 (cast i32 (floor (sqrt (fma v 2.0f32 (load x i))))))
  (return))
]]
    assert.is_true(p == H.parse(text))
  end)

  it("maps every operator and method to its op", function()
    local u = { vyre.param("a", "u32"), vyre.param("b", "u32") }
    local cases = {
      { function(k) return k.a + k.b end, "(add a b)" },
      { function(k) return k.a - k.b end, "(sub a b)" },
      { function(k) return k.a * k.b end, "(mul a b)" },
      { function(k) return k.a / k.b end, "(div a b)" },
      { function(k) return k.a // k.b end, "(div a b)" },
      { function(k) return k.a % k.b end, "(rem a b)" },
      { function(k) return k.a & k.b end, "(and a b)" },
      { function(k) return k.a | k.b end, "(or a b)" },
      { function(k) return k.a ~ k.b end, "(xor a b)" },
      { function(k) return k.a << k.b end, "(shl a b)" },
      { function(k) return k.a >> k.b end, "(shr a b)" },
      { function(k) return -k.a end, "(neg a)" },
      { function(k) return ~k.a end, "(not a)" },
      { function(k) return k.a:min(k.b) end, "(min a b)" },
      { function(k) return k.a:max(k.b) end, "(max a b)" },
      { function(k) return k.a:mulhi(k.b) end, "(mulhi a b)" },
      { function(k) return k.a:popcount() end, "(popcount a)" },
      { function(k) return k.a:clz() end, "(clz a)" },
      { function(k) return k.a:ctz() end, "(ctz a)" },
      { function(k) return k.a:brev() end, "(brev a)" },
      { function(k) return k.a:le(k.b):lor(k.a:ge(k.b)):lnot() end,
        "(lnot (lor (le a b) (ge a b)))" },
      { function(k) return k.a:ne(k.b) end, "(ne a b)" },
      { function(k) return k.a:cast("f64") end, "(cast f64 a)" },
      { function(k) return k.wgid.y + k.lid.z + k.wgsize.x + k.ngroups.z end,
        "(add (add (add (wgid y) (lid z)) (wgsize x)) (ngroups z))" },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], expr_text(u, c[1]))
    end
    local f = { vyre.param("x", "f32") }
    for _, op in ipairs({ "abs", "sqrt", "rsqrt", "floor", "ceil", "round", "trunc", "exp",
      "exp2", "log", "log2", "sin", "cos", "tanh" }) do
      assert.are.equal("(" .. op .. " x)", expr_text(f, function(k) return k.x[op](k.x) end))
    end
  end)

  it("turns Lua numbers into literals of the other operand's type", function()
    local d = { vyre.param("f", "f32"), vyre.param("g", "f64"), vyre.param("u", "u32"),
      vyre.param("i", "i64"), vyre.param("w", "u64") }
    assert.are.equal("(add f 0x1.99999ap-4f32)", expr_text(d, function(k) return k.f + 0.1 end))
    assert.are.equal("(mul 0x1.999999999999ap-4f64 g)",
      expr_text(d, function(k) return 0.1 * k.g end))
    assert.are.equal("(add u 3u32)", expr_text(d, function(k) return k.u + 3 end))
    assert.are.equal("(add u 3u32)", expr_text(d, function(k) return k.u + 3.0 end))
    assert.are.equal("(sub i -9i64)", expr_text(d, function(k) return k.i - -9 end))
    assert.are.equal("(xor w 18446744073709551615u64)",
      expr_text(d, function(k) return k.w ~ -1 end))
    assert.are.equal("(lt f inff32)", expr_text(d, function(k) return k.f:lt(math.huge) end))
    assert.matches("^%(ne f nan:0x[7f]fc00000f32%)$",
      expr_text(d, function(k) return k.f:ne(0 / 0) end))
    assert.are.equal("(add f -0x0p+0f32)", expr_text(d, function(k) return k.f + -0.0 end))
    assert.are.equal("(max g 0x1p-1074f64)",
      expr_text(d, function(k) return k.g:max(4.9406564584124654e-324) end))
  end)

  it("rounds f32 literals to f32 first and prints them exactly", function()
    local txt = expr_text({ vyre.param("f", "f32") }, function(k) return k.f + 16777217 end)
    assert.are.equal("(add f 0x1p+24f32)", txt)
  end)

  it("raises for a non-integer next to an integer type, naming the operation", function()
    local msg = H.error_of(vyre.program, "bad", { vyre.param("u", "u32") }, function(k)
      k:let("r", k.u * 1.5)
    end)
    assert.matches("vyre.program: mul: 1.5 is not an exact integer", msg, 1, true)
    assert.matches("cannot be a u32 literal. Fix:", msg, 1, true)
    msg = H.error_of(vyre.program, "bad", { vyre.param("u", "i32") }, function(k)
      k:let("r", k.u + 2 ^ 31)
    end)
    assert.matches("add: 2147483648 is out of range for a i32 literal", msg, 1, true)
  end)

  it("raises at the user's line for mismatched types", function()
    local msg = H.error_of(vyre.program, "bad", { vyre.param("u", "u32"),
      vyre.param("f", "f32") }, function(k)
      k:let("r", k.u + k.f)
    end)
    assert.matches("06_dsl_spec.lua:%d+: vyre.program: add: operand types differ %(u32 and f32%)",
      msg)
    assert.matches("Fix: convert one side with vyre.cast", msg, 1, true)
  end)

  it("rejects < and friends with a hint to use methods", function()
    local msg = H.error_of(vyre.program, "bad", { vyre.param("u", "u32") }, function(k)
      return k.u < k.u
    end)
    assert.matches("use a:lt(b)", msg, 1, true)
  end)

  it("reports the validator's problem at the user's line, with one Fix", function()
    local line = debug.getinfo(1, "l").currentline + 3
    local msg = H.error_of(vyre.program, "bad", { vyre.buffer("o", "f32", "write") },
      function(k)
        k:when(k.gid.x:lt(3), function() k:barrier() end)
      end)
    assert.matches("vyre.program: spec/06_dsl_spec.lua:" .. line .. ": barrier under control "
      .. "flow", msg, 1, true)
    local _, fixes = msg:gsub("Fix:", "")
    assert.are.equal(1, fixes, msg)
  end)

  it("binds atomic results only right where they are made", function()
    local msg = H.error_of(vyre.program, "bad", { vyre.buffer("h", "u32", "read_write") },
      function(k)
        local a = k:atomic("add", k.h, 0, 1)
        k.h[1] = 2
        k:let("old", a)
      end)
    assert.matches("must be bound right where the atomic is made", msg, 1, true)
    msg = H.error_of(vyre.program, "bad", { vyre.buffer("h", "u32", "read_write") },
      function(k)
        k.h[1] = k:atomic("add", k.h, 0, 1) + 1
      end)
    assert.matches("is not a value until it is bound", msg, 1, true)
  end)

  it("generates names for k:let without one and checks names", function()
    local p = dsl("auto", { vyre.buffer("o", "u32", "write") }, function(k)
      local a = k:let(k.gid.x + 1)
      k.o[a] = a
    end)
    assert.matches("(let _v1 (add (gid x) 1u32))", p:text(), 1, true)
    assert.matches("is not a valid name", H.error_of(vyre.program, "bad", {}, function(k)
      k:let("2x", vyre.lit("u32", 1))
    end), 1, true)
    assert.matches("program 'bad' has no declaration 'nope'", H.error_of(vyre.program, "bad",
      {}, function(k) return k.nope end), 1, true)
    assert.matches("cannot tell the type of the plain Lua value 5",
      H.error_of(vyre.program, "bad", {}, function(k) k:let("x", 5) end), 1, true)
  end)

  it("runs DSL programs on the reference backend", function()
    local p = dsl("sq", { workgroup = 4, vyre.buffer("o", "u32", "write") }, function(k)
      local i = k:let("i", k.gid.x)
      k:when(i:lt(k.o:len()), function() k.o[i] = i * i + 1 end)
    end)
    assert.are.same({ 1, 2, 5, 10, 17 }, H.ref():run(p, {}, { n = 5 }).o:totable())
  end)
end)
