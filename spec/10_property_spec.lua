-- spec/10_property_spec.lua — property checks over generated programs, seen from Lua:
-- vyre.random_program is deterministic, its programs validate, round-trip through the
-- canonical text (equal program, equal hash, identical text) and run on the reference
-- backend with random buffer contents and edge-value params; mutated programs are
-- rejected. The C suite (tests/c/test_props.c) covers thousands of seeds; this spec
-- keeps to a few hundred so the Lua surface is exercised without slowing busted down.
local vyre = require("vyre")

local SEEDS = 300

-- Options cycle through barriers/approximate ops; a few seeds get bigger programs.
local function opts_for(seed)
  return {
    allow_barriers = seed % 2 == 1,
    allow_approx = seed % 4 >= 2,
    max_stmts = seed % 7 == 3 and 14 or 8,
    max_depth = seed % 7 == 3 and 6 or 4,
  }
end

-- A tiny deterministic generator for test data (xorshift on 64-bit integers).
local function rng(seed)
  local x = seed * 2654435761 + 1
  return function(n)
    x = x ~ (x << 13)
    x = x ~ (x >> 7)
    x = x ~ (x << 17)
    return n and (x % n) or x
  end
end

local SIZES = { bool = 4, i32 = 4, u32 = 4, f32 = 4, i64 = 8, u64 = 8, f64 = 8 }

local EDGE = {
  bool = { true, false },
  i32 = { 0, 1, -1, -2147483648, 2147483647 },
  u32 = { 0, 1, 3, 4294967295, 2147483648 },
  i64 = { 0, -1, math.mininteger, math.maxinteger, 5 },
  u64 = { 0, 1, -1, math.mininteger, 7 },
  f32 = { 0.0, -0.0, 1.5, 0 / 0, math.huge, -math.huge },
  f64 = { 0.0, -0.0, 2.5, 0 / 0, math.huge, 1e-310 },
}

local function random_bytes(r, n)
  local t = {}
  for i = 1, n do t[i] = string.char(r(256)) end
  return table.concat(t)
end

-- Arguments for every declaration: random arrays (sizes 0, 1, n or random) and params.
local function make_args(p, r, n)
  local args = {}
  for _, d in ipairs(p:decls()) do
    if d.kind == "buffer" then
      local count = d.count
      if count == 0 then
        local k = r(4)
        count = k == 0 and 0 or k == 1 and 1 or k == 2 and n or r(100)
      end
      args[d.name] = vyre.array(d.type, random_bytes(r, count * SIZES[d.type]))
    elseif d.kind == "param" then
      local e = EDGE[d.type]
      args[d.name] = e[r(#e) + 1]
    end
  end
  return args
end

describe("vyre.random_program", function()
  it("gives the same program for the same seed", function()
    local a, b = vyre.random_program(42), vyre.random_program(42)
    assert.are.equal(a:text(), b:text())
    assert.are.equal(a:hash(), b:hash())
    assert.is_true(a == b)
    assert.are.equal("prog_2a", a.name)
    assert.are_not.equal(a:text(), vyre.random_program(43):text())
  end)

  it("builds valid programs that round-trip through the text format", function()
    for seed = 1, SEEDS do
      local p = vyre.random_program(seed, opts_for(seed))
      local ok, problems = vyre.validate(p)
      if not ok then
        error(string.format("seed %d: generated program is invalid: %s\n%s", seed,
          problems and problems[1] and problems[1].message or "?", p:text()))
      end
      local text = p:text()
      local q = vyre.parse(text)
      assert(q == p, "seed " .. seed .. ": parse(print(p)) ~= p")
      assert.are.equal(text, q:text())
      assert.are.equal(p:hash(), q:hash())
    end
  end)

  it("runs on the reference backend with random inputs", function()
    local ref = vyre.backend("reference")
    local ran = 0
    for seed = 1, SEEDS do
      local p = vyre.random_program(seed, opts_for(seed))
      local r = rng(seed)
      local n = 1 + r(64)
      local args = make_args(p, r, n)
      local ok, out = pcall(ref.run, ref, p, args, { n = n })
      if not ok then
        error(string.format("seed %d: reference run failed: %s\n%s", seed, tostring(out), p:text()))
      end
      for _, d in ipairs(p:decls()) do
        if d.kind == "buffer" and d.access ~= "read" then
          local arr = out[d.name]
          assert(arr ~= nil, "seed " .. seed .. ": no result for output " .. d.name)
          assert.are.equal(d.type, arr.type)
          if args[d.name] then assert.are.equal(#args[d.name], #arr) end
        end
      end
      ran = ran + 1
    end
    assert.are.equal(SEEDS, ran)
  end)

  it("gives the same results for the same inputs", function()
    local ref = vyre.backend("reference")
    for seed = 1, 40 do
      local p = vyre.random_program(seed, opts_for(seed))
      local r1, r2 = rng(seed), rng(seed)
      local out1 = ref:run(p, make_args(p, r1, 40), { n = 40 })
      local out2 = ref:run(p, make_args(p, r2, 40), { n = 40 })
      for name, arr in pairs(out1) do
        assert.are.equal(arr:bytes(), out2[name]:bytes())
      end
    end
  end)

  it("mutates into programs the validator rejects", function()
    local rejected = 0
    for seed = 1, SEEDS do
      local p = vyre.random_program(seed, { allow_invalid = true, allow_barriers = seed % 2 == 0 })
      local ok, problems = vyre.validate(p)
      if not ok then
        rejected = rejected + 1
        assert.is_table(problems)
        assert.is_true(#problems >= 1)
      end
    end
    assert.is_true(rejected >= SEEDS * 0.9, "only " .. rejected .. " of " .. SEEDS .. " rejected")
  end)
end)
