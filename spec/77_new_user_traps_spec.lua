-- 76: traps a new user fell into (issue 20 §4), each now an error with a Fix or the right
-- behaviour: a k:for_ loop variable's type (the type given, a typed bound's, else u32),
-- and where a u32 loop meets an i32 the error says how to type the loop. The gid.y
-- launch rule is spec/14 ("launch geometry") and spec/60 (vyre run --n W,H); float
-- printing is spec/78; the help coverage of the DSL builder is spec/62.
local vyre = require("vyre.cuda")
local H = require("spec.helpers")

local function build(body)
  return vyre.program("t", { workgroup = 1, vyre.buffer("o", "i32", "write", 1) }, body)
end

describe("k:for_ loop types", function()
  it("takes the type given second", function()
    for _, t in ipairs({ "i32", "u32", "i64", "u64" }) do
      local p = build(function(k)
        k:for_("j", t, 0, 5, function(j) k.o[0] = vyre.cast("i32", j) end)
      end)
      assert.matches("(for j 0" .. t .. " 5" .. t .. " 1" .. t .. " ", p:text(), 1, true)
    end
    -- an i32 loop adds to an i32 accumulator with no cast, counting down through 0
    local p = build(function(k)
      local acc = k:var("acc", vyre.lit("i32", 0))
      k:for_("j", "i32", -3, 2, function(j) acc:set(acc + j) end)
      k.o[0] = acc
    end)
    assert.are.same({ -3 - 2 - 1 + 0 + 1 }, vyre.backend("reference"):run(p, {}).o:totable())
    -- with a step, and the function as the last argument
    p = build(function(k)
      local acc = k:var("acc", vyre.lit("i32", 0))
      k:for_("j", "i32", 0, 10, 3, function(j) acc:set(acc + j) end)
      k.o[0] = acc
    end)
    assert.are.same({ 0 + 3 + 6 + 9 }, vyre.backend("reference"):run(p, {}).o:totable())
  end)

  it("takes a typed bound's type, else u32 for plain numbers", function()
    local p = build(function(k)
      k:for_("a", vyre.lit("i64", 0), 2, function() end)
      k:for_("b", 0, vyre.lit("i32", 2), function() end)
      k:for_("c", 0, 2, function() end)
    end)
    assert.matches("(for a 0i64 2i64 1i64)", p:text(), 1, true)
    assert.matches("(for b 0i32 2i32 1i32)", p:text(), 1, true)
    assert.matches("(for c 0u32 2u32 1u32)", p:text(), 1, true)
  end)

  it("refuses a bound of another type and a non-integer type at the loop's line", function()
    local e = H.error_of(build, function(k)
      k:for_("j", vyre.lit("i32", 0), vyre.lit("u32", 3), function() end)
    end)
    assert.matches("k:for_: the loop to is u32 but the loop variable is i32 (the first typed "
      .. "bound's type). Fix: vyre.cast('i32', to), or k:for_(name, 'u32', from, to, fn)", e, 1,
      true)
    e = H.error_of(build, function(k)
      k:for_("j", "i32", 0, vyre.lit("u64", 3), function() end)
    end)
    assert.matches("the loop to is u64 but the loop variable is i32 (the type given). Fix:", e,
      1, true)
    e = H.error_of(build, function(k) k:for_("j", "f32", 0, 3, function() end) end)
    assert.matches("k:for_: the loop type f32 is not an integer type. Fix: k:for_(name, 'i32', "
      .. "from, to, fn)", e, 1, true)
    e = H.error_of(build, function(k) k:for_("j", vyre.lit("f32", 0), 3, function() end) end)
    assert.matches("k:for_: the loop bounds are f32, not an integer. Fix:", e, 1, true)
    e = H.error_of(build, function(k) k:for_("j", "i32", vyre.lit("f32", 0), 3, function() end) end)
    assert.matches("k:for_: the loop from is f32 but the loop variable is i32", e, 1, true)
    e = H.error_of(build, function(k) k:for_("j", "int", 0, 3, function() end) end)
    assert.matches("the loop type int is not an integer type", e, 1, true)
  end)

  it("names the loop when a u32 loop over plain numbers meets an i32", function()
    local e = H.error_of(build, function(k)
      k:for_("j", 0, 5, function(j) k.o[0] = j + vyre.lit("i32", 1) end)
    end)
    assert.matches("add: operand types differ (u32 and i32)", e, 1, true)
    assert.matches("or type the loop: j is u32 because its bounds are plain numbers; "
      .. "k:for_('j', 'i32', from, to, fn)", e, 1, true)
    -- the hint is only for such loops
    e = H.error_of(build, function(k)
      k:for_("j", vyre.lit("u32", 0), 5, function(j) k.o[0] = j + vyre.lit("i32", 1) end)
    end)
    assert.matches("operand types differ", e, 1, true)
    assert.is_nil(e:find("type the loop", 1, true))
  end)

  it("has the rule in its help", function()
    local text = assert(require("vyre.help").text("Builder:for_"))
    assert.matches('k:for_("j", "i32", 0, 5, fn)', text, 1, true)
    assert.matches("else u32 %(plain Lua%snumbers%)", text)
  end)
end)

describe("tostring(be:plan(...)) on the reference backend", function()
  it("says what the reference does, with no GPU grid numbers", function()
    local be = vyre.backend("reference")
    local count = be:compile(vyre.parse([[(program count (workgroup 64)
  (buffer x u32 read_write) (buffer changed u32 read_write) (let i (gid x))
  (if (lt i (len x)) (then (if (gt (load x i) 0u32)
    (then (store x i (sub (load x i) 1u32)) (store changed 0u32 1u32))))))]]))
    local x, changed = be:buffer("u32", { 3, 1, 2 }), be:buffer("u32", 1)
    local s = tostring(be:plan({ { count, { x = x, changed = changed } } },
      { converge = { flag = changed, max = 100 } }))
    assert.matches("^plan: reference — the CPU interpreter runs it; a GPU's policy would pick "
      .. "[%a_]+ %(", s)
    assert.matches("\nreference: runs the steps in order on the CPU, one section at a time "
      .. "(every workgroup finishes a section before the next starts; each grid barrier ends "
      .. "one): 1 step in 1 layer, 0 barriers, 1 workgroup of 64 threads, up to 100 rounds, "
      .. "until the flag stays 0; no blocks, SMs or occupancy\n", s, 1, true)
    assert.is_nil(s:find("blocks (", 1, true))
    assert.is_nil(s:find("nil", 1, true))
    assert.matches("\nlayer 1: [step 1]\n", s, 1, true)
    -- two steps, a barrier between them, a fixed round count
    s = tostring(be:plan({ { count, { x = x, changed = changed } },
      { count, { x = x, changed = changed } } }, { times = 3 }))
    assert.matches(": 2 steps in 2 layers, 1 barrier, 1 workgroup of 64 threads, 3 rounds; ", s,
      1, true)
    assert.matches("\n  barrier: RAW (read after write) on x, step 1 -> step 2\n", s, 1, true)
    -- and what it says is what it does
    assert.are.equal(4, be:megakernel({ { count, { x = x, changed = changed } } },
      { converge = { flag = changed, max = 100 } }))
  end)
end)
