-- 93: the subgroup op (match_any V) (docs/SUBGROUPS.md): for each lane, the u32 mask of
-- the present lanes of its subgroup whose V has the same bits. The reference backend
-- against a plain-Lua reading of the document on every type, full, partial and 3-D
-- workgroups, values with many collisions, signed zeros and NaN payloads (bits compared);
-- the text form, the DSL, the validator's type and placement rules and the PTX
-- (match.any.sync); then the fake CUDA driver (#fakecuda) and a GPU (#gpu) bit for bit
-- against the reference on the same programs and inputs, and on vyre.random_program
-- programs that keep a match_any after the optimiser.
local vyre = require("vyre")
local H = require("spec.helpers")

local W = 32
local GROUPS = 3
local GEOMETRIES = { { 32, 1, 1 }, { 64, 1, 1 }, { 48, 1, 1 }, { 1, 1, 1 }, { 7, 5, 1 },
  { 8, 3, 2 } }
local TYPES = { "i32", "u32", "i64", "u64", "f32", "f64" }
local WIDE = { i64 = true, u64 = true, f64 = true }

-- Bit patterns drawn from a small pool (so lanes collide), with the float corner cases:
-- +0 and -0 (different bits: never match), two NaN payloads, infinities.
local POOL32 = { 0x00000000, 0x80000000, 0x3F800000, 0x7FC00000, 0x7FC00001, 0xFFFFFFFF,
  0x7F800000, 0x00000001, 5, 7 }
local POOL64 = { 0, 0x8000000000000000, 0x3FF0000000000000, 0x7FF8000000000000,
  0x7FF8000000000001, -1, 0x7FF0000000000000, 1, 0x0000000100000000, 0x100000000 + 5 }

local function bits_of(t, n, seed, spread)
  local r = H.rng(seed)
  local pool = WIDE[t] and POOL64 or POOL32
  local out = {}
  for i = 1, n do
    local x = r()
    local k = (x >> 33) % spread + 1
    if k <= #pool then out[i] = pool[k]
    else out[i] = WIDE[t] and x or (x >> 32) & 0xFFFFFFFF end
  end
  return out
end

-- The program: lane value = the input's bits as type t; o[g] = (match_any v).
local function program_of(t, wg)
  local src = WIDE[t] and "u64" or "u32"
  local v = (t == "u32" or t == "u64") and "(load x g)" or ("(bitcast %s (load x g))"):format(t)
  return vyre.parse(([[
(program match_%s (workgroup %d %d %d)
  (buffer x %s read)
  (buffer o u32 write)
  (let li (add (add (lid x) (mul (lid y) (wgsize x))) (mul (lid z) (mul (wgsize x) (wgsize y)))))
  (let g (add li (mul (wgid x) %du32)))
  (let v %s)
  (store o g (match_any v)))]]):format(t, wg[1], wg[2], wg[3], src, wg[1] * wg[2] * wg[3], v))
end

-- The document's definition, lane by lane.
local function model(xs, total)
  local out = {}
  for base = 0, #xs - 1, total do
    for sub = 0, total - 1, W do
      local n = math.min(W, total - sub)
      for i = 0, n - 1 do
        local m = 0
        for j = 0, n - 1 do
          if xs[base + sub + j + 1] == xs[base + sub + i + 1] then m = m | (1 << j) end
        end
        out[base + sub + i + 1] = m
      end
    end
  end
  return out
end

local function input(t, total, seed, spread)
  local xs = bits_of(t, total * GROUPS, seed, spread)
  return xs, vyre.array(WIDE[t] and "u64" or "u32", xs)
end

describe("match_any on the reference backend (docs/SUBGROUPS.md)", function()
  local be
  setup(function() be = vyre.backend("reference") end)

  it("gives every lane the mask of the present lanes with its bits, on every type", function()
    for gi, wg in ipairs(GEOMETRIES) do
      local total = wg[1] * wg[2] * wg[3]
      for ti, t in ipairs(TYPES) do
        local p = program_of(t, wg)
        for _, spread in ipairs({ 3, 12, 40 }) do
          local xs, arr = input(t, total, gi * 1000 + ti * 10 + spread, spread)
          local got = be:run(p, { x = arr }, { grid = { GROUPS, 1, 1 } }).o:totable()
          local want = model(xs, total)
          assert.are.equal(#want, #got)
          for i = 1, #want do
            if got[i] ~= want[i] then
              error(("%s %dx%dx%d element %d: got 0x%x, want 0x%x"):format(t, wg[1], wg[2],
                wg[3], i, got[i], want[i]))
            end
          end
        end
      end
    end
  end)

  it("compares bits: -0 and +0 differ, equal NaN payloads match, others do not", function()
    local p = program_of("f32", { 32, 1, 1 })
    local xs = {}
    local pats = { 0x00000000, 0x80000000, 0x7FC00000, 0x7FC00001 }
    for i = 1, W * GROUPS do xs[i] = pats[(i - 1) % 4 + 1] end
    local got = be:run(p, { x = vyre.array("u32", xs) }, { grid = { GROUPS, 1, 1 } }).o
    for i = 1, W do assert.are.equal(0x11111111 << ((i - 1) % 4), got[i]) end
  end)

  it("leaves absent lanes out of a partial subgroup's masks", function()
    local p = program_of("u32", { 40, 1, 1 })
    local xs = {}
    for i = 1, 40 * GROUPS do xs[i] = 9 end
    local got = be:run(p, { x = vyre.array("u32", xs) }, { grid = { GROUPS, 1, 1 } }).o
    for i = 1, 40 do assert.are.equal(i <= 32 and 0xFFFFFFFF or 0xFF, got[i]) end
  end)
end)

describe("match_any in the text format, the DSL, the validator and the PTX", function()
  it("prints and parses back unchanged", function()
    local p = program_of("f64", { 48, 1, 1 })
    assert.truthy(p:text():find("(match_any v)", 1, true))
    assert.are.equal(p, vyre.parse(p:text()))
  end)

  it("is v:match_any() in the DSL, a u32", function()
    local p = vyre.program("dsl_match", { workgroup = 64,
      vyre.buffer("x", "i64", "read"), vyre.buffer("o", "u32", "write") },
      function(k)
        local i = k:let("i", k.gid.x)
        local m = k.x[i]:match_any()
        assert.are.equal("u32", m.type)
        k.o[i] = m
      end)
    assert.truthy(p:text():find("(match_any (load x i))", 1, true))
    local r = vyre.backend("reference"):run(p, { x = vyre.array("i64", 64) }, { n = 64 })
    assert.are.equal(0xFFFFFFFF, r.o[1])
    assert.are.equal(0xFFFFFFFF, r.o[64])
  end)

  it("refuses a bool value and divergent control flow, each with a Fix", function()
    local ok, _, msg = vyre.validate(vyre.parse([[
(program m (workgroup 32) (buffer o u32 write)
  (store o (lid x) (match_any (lt (lid x) 3u32))))]]))
    assert.is_false(ok)
    assert.truthy(msg:find("operand-type", 1, true) or msg:find("match_any needs", 1, true))
    assert.truthy(msg:find("Fix:", 1, true))
    ok, _, msg = vyre.validate(vyre.parse([[
(program m (workgroup 32) (buffer o u32 write)
  (if (lt (lid x) 3u32) (then (store o (lid x) (match_any (lid x))))))]]))
    assert.is_false(ok)
    assert.truthy(msg:find("subgroup", 1, true))
    assert.truthy(msg:find("Fix:", 1, true))
  end)

  it("lowers to match.any.sync .b32 and .b64 over the present lanes on every target", function()
    for _, sm in ipairs({ 70, 80, 90 }) do
      assert.truthy(vyre.ptx(program_of("f32", { 48, 1, 1 }), { sm = sm })
        :find("match.any.sync.b32", 1, true))
      assert.truthy(vyre.ptx(program_of("u64", { 48, 1, 1 }), { sm = sm })
        :find("match.any.sync.b64", 1, true))
    end
  end)
end)

for _, kind in ipairs(H.cuda_kinds()) do
  describe("match_any parity with " .. kind.name .. " " .. kind.tag, function()
    local ref, be
    setup(function()
      ref = vyre.backend("reference")
      be = kind.open()
    end)

    it("gives the reference's masks bit for bit on every type and geometry", function()
      for gi, wg in ipairs(GEOMETRIES) do
        local total = wg[1] * wg[2] * wg[3]
        for ti, t in ipairs(TYPES) do
          local p = program_of(t, wg)
          for _, spread in ipairs(kind.small and { 12 } or { 3, 12, 40 }) do
            local _, arr = input(t, total, gi * 1000 + ti * 10 + spread, spread)
            H.parity_run(ref, be, p, { x = arr }, { grid = { GROUPS, 1, 1 } },
              ("match_any %s %dx%dx%d"):format(t, wg[1], wg[2], wg[3]))
          end
        end
      end
    end)

    -- vyre.random_program makes match_any where subgroup ops may go; the backend compiles
    -- the optimised program, which drops a match_any whose value is dead, so the programs
    -- counted are those that keep one after p:optimize().
    it("runs generated programs that keep a match_any bit for bit", function()
      local want = kind.small and 20 or 80
      local ran, seed = 0, 0
      while ran < want and seed < 2000 do
        seed = seed + 1
        local p = vyre.random_program(seed, { allow_subgroup = true,
          allow_barriers = seed % 3 == 0 })
        if p:optimize():text():find("(match_any", 1, true) then
          ran = ran + 1
          H.parity_run(ref, be, p, H.random_inputs(p, seed, 100), { n = 100 },
            "random_program(" .. seed .. ", subgroup)")
        end
      end
      assert.are.equal(want, ran, ran .. " generated programs with match_any in seeds 1.." .. seed)
    end)
  end)
end
