-- 16: subgroup (warp) ops, docs/SUBGROUPS.md. The reference backend against a plain-Lua
-- reading of the document (every op on every type it takes, full and partial subgroups,
-- NaN, signed zeros, subnormals, infinities), the DSL spellings and its traps, the
-- validator's placement rule, random programs with allow_subgroup, and (#gpu) the CUDA
-- backend bit for bit against the reference on the same programs and inputs.
local vyre = require("vyre")
local H = require("spec.helpers")

local W = 32
local GROUPS = 2
local GEOMETRIES = { { 32, 1, 1 }, { 64, 1, 1 }, { 48, 1, 1 }, { 1, 1, 1 }, { 7, 5, 1 },
  { 8, 3, 2 } }
local NUMERIC = { "i32", "u32", "i64", "u64", "f32", "f64" }
local IS_FLOAT = { f32 = true, f64 = true }
local SHUFFLES = { "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down" }
local COMBINERS = { "add", "min", "max", "and", "or", "xor" }
local BITWISE = { ["and"] = true, ["or"] = true, xor = true }

-- ---- inputs -------------------------------------------------------------------------

local function rng(seed)
  local s = seed ~ 0x9E3779B97F4A7C15
  if s == 0 then s = 1 end
  return function()
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    return s * 0x2545F4914F6CDD1D
  end
end

local SPECIAL_F = { 0.0, -0.0, 1.0, -1.0, 0.5, 1 / 0, -1 / 0, 0 / 0, 1e-40, -1e-45, 3.4e38,
  1e300, 5e-324, -2.5 }
local SPECIAL_I = { 0, 1, -1, math.mininteger, math.maxinteger, 0x7fffffff, -0x80000000 }

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end

local function value(t, r)
  local x = r()
  if t == "bool" then return x & 1 == 1 end
  if IS_FLOAT[t] then
    local v
    if x & 3 == 0 then v = SPECIAL_F[(x >> 8) % #SPECIAL_F + 1]
    else v = ((x >> 11) / (1 << 53) - 0.5) * 2.0 ^ (((x >> 4) & 31) - 10) end
    return t == "f32" and f32(v) or v
  end
  if x & 3 == 0 then x = SPECIAL_I[(x >> 8) % #SPECIAL_I + 1]
  elseif x & 3 == 1 then x = (x >> 40) % 50 end
  if t == "i32" then return ((x & 0xffffffff) ~ 0x80000000) - 0x80000000 end
  if t == "u32" then return x & 0xffffffff end
  return x
end

local FAR = { 32, 33, 31, 64, 0x80000000, 0xffffffff, 0xffffffe0 }
local function lane_arg(r)
  local x = r()
  if x % 5 == 0 then return FAR[(x >> 8) % #FAR + 1] end
  return (x >> 16) % 34
end

-- ---- the document in plain Lua ----------------------------------------------------

local function wrap(t, x)
  if t == "i32" then return ((x & 0xffffffff) ~ 0x80000000) - 0x80000000 end
  if t == "u32" then return x & 0xffffffff end
  return x -- 64-bit: Lua integers wrap
end

local function less(t, a, b)
  if t == "u64" then return math.ult(a, b) end
  return a < b
end

-- vyre's float min/max (§3): the non-NaN operand when one is NaN, -0 below +0.
local function fmin(a, b)
  if a ~= a then return b end
  if b ~= b then return a end
  if a == b and a == 0 then return (1 / a < 0) and a or b end
  return b < a and b or a
end

local function fmax(a, b)
  if a ~= a then return b end
  if b ~= b then return a end
  if a == b and a == 0 then return (1 / a > 0) and a or b end
  return b > a and b or a
end

local OP = {
  add = function(t, a, b)
    -- rounding the f64 sum of two f32 values to f32 gives the correctly rounded f32 sum
    if t == "f32" then return f32(a + b) end
    if t == "f64" then return a + b end
    return wrap(t, a + b)
  end,
  min = function(t, a, b)
    if IS_FLOAT[t] then return fmin(a, b) end
    return less(t, b, a) and b or a
  end,
  max = function(t, a, b)
    if IS_FLOAT[t] then return fmax(a, b) end
    return less(t, a, b) and b or a
  end,
  ["and"] = function(t, a, b) return wrap(t, a & b) end,
  ["or"] = function(t, a, b) return wrap(t, a | b) end,
  xor = function(t, a, b) return wrap(t, a ~ b) end,
}

local same -- below

-- v, arg: 0-based lanes 0..n-1 of one subgroup; returns the 0-based results.
local function model(kind, op, t, v, arg, n)
  local out = {}
  if kind == "ballot" or kind == "subgroup_all" or kind == "subgroup_any" then
    local mask, count = 0, 0
    for j = 0, n - 1 do
      if v[j] then mask = mask | (1 << j); count = count + 1 end
    end
    local r
    if kind == "ballot" then r = mask
    elseif kind == "subgroup_all" then r = count == n
    else r = count > 0 end
    for i = 0, n - 1 do out[i] = r end
  elseif kind == "subgroup_reduce" then
    local w = {}
    for j = 0, n - 1 do w[j] = v[j] end
    local d = W // 2
    while d >= 1 do
      local nw = {}
      for j = 0, n - 1 do
        local p = j ~ d
        if p >= n then nw[j] = w[j]
        elseif j < p then nw[j] = OP[op](t, w[j], w[p])
        else nw[j] = OP[op](t, w[p], w[j]) end
      end
      w, d = nw, d // 2
    end
    for i = 0, n - 1 do out[i] = w[0] end
  elseif kind == "match_any" then -- the lanes with the same bits (one NaN pattern here)
    for i = 0, n - 1 do
      local m = 0
      for j = 0, n - 1 do
        if same(t, v[j], v[i]) then m = m | (1 << j) end
      end
      out[i] = m
    end
  elseif kind == "subgroup_scan" then
    local w = {}
    for j = 0, n - 1 do w[j] = v[j] end
    local d = 1
    while d < W do
      local nw = {}
      for j = 0, n - 1 do nw[j] = j >= d and OP[op](t, w[j - d], w[j]) or w[j] end
      w, d = nw, d * 2
    end
    out = w
  else -- shuffles: an absent or out-of-range source gives the own value
    for i = 0, n - 1 do
      local a = arg[i]
      local src
      if kind == "shuffle" then src = a
      elseif kind == "shuffle_xor" then src = i ~ a
      elseif kind == "shuffle_up" then src = a <= i and i - a or nil
      else src = i + a end
      out[i] = (src and src < n) and v[src] or v[i]
    end
  end
  return out
end

-- Same value, NaN equal to any NaN, -0 different from +0.
function same(t, a, b)
  if t == "f32" or t == "f64" then
    if a ~= a and b ~= b then return true end
    local f = t == "f32" and "<f" or "<d"
    return string.pack(f, a) == string.pack(f, b)
  end
  return a == b
end

-- ---- the programs --------------------------------------------------------------------

local cases = {}
for _, k in ipairs({ "ballot", "subgroup_all", "subgroup_any" }) do
  cases[#cases + 1] = { kind = k, t = "bool" }
end
for _, t in ipairs(NUMERIC) do
  for _, k in ipairs(SHUFFLES) do cases[#cases + 1] = { kind = k, t = t } end
  cases[#cases + 1] = { kind = "match_any", t = t }
  for _, op in ipairs(COMBINERS) do
    if not (BITWISE[op] and IS_FLOAT[t]) then
      cases[#cases + 1] = { kind = "subgroup_reduce", op = op, t = t }
      cases[#cases + 1] = { kind = "subgroup_scan", op = op, t = t }
    end
  end
end

local function out_type(c)
  if c.kind == "ballot" or c.kind == "match_any" then return "u32" end
  if c.kind == "subgroup_all" or c.kind == "subgroup_any" then return "bool" end
  return c.t
end

local function program_of(c, wg)
  local expr
  if c.op then expr = ("(%s %s v)"):format(c.kind, c.op)
  elseif c.t == "bool" or c.kind == "match_any" then expr = ("(%s v)"):format(c.kind)
  else expr = ("(%s v a)"):format(c.kind) end
  local text = ([[
(program sg (workgroup %d %d %d)
  (buffer x %s read)
  (buffer l u32 read)
  (buffer o %s write)
  (let li (add (add (lid x) (mul (lid y) (wgsize x))) (mul (lid z) (mul (wgsize x) (wgsize y)))))
  (let g (add li (mul (wgid x) %du32)))
  (let v (load x g))
  (let a (load l g))
  (store o g %s))]]):format(wg[1], wg[2], wg[3], c.t, out_type(c), wg[1] * wg[2] * wg[3], expr)
  -- the 48-wide ones join the registry (round trip, and parity in spec 22 on a GPU)
  if wg[1] == 48 then return H.parse(text, "subgroup " .. expr .. " " .. c.t) end
  return vyre.parse(text)
end

local function inputs(c, total, seed)
  local r = rng(seed)
  local xs, ls = {}, {}
  for i = 1, total * GROUPS do
    xs[i] = value(c.t, r)
    ls[i] = lane_arg(r)
  end
  return { x = vyre.array(c.t, xs), l = vyre.array("u32", ls) }
end

-- Inputs for any program: params and read buffers from the seed (64 elements).
local function program_inputs(p, seed)
  local r = rng(seed)
  local args = {}
  for _, d in ipairs(p:decls()) do
    if d.kind == "param" then
      args[d.name] = value(d.type, r)
    elseif d.kind == "buffer" and d.access ~= "write" then
      local n = (d.count and d.count > 0) and d.count or 64
      local vals = {}
      for i = 1, n do vals[i] = value(d.type, r) end
      args[d.name] = vyre.array(d.type, vals)
    end
  end
  return args
end

-- ---- reference backend ------------------------------------------------------------------

describe("subgroup ops on the reference backend (docs/SUBGROUPS.md)", function()
  local ref = vyre.backend("reference")

  it("computes every op on every type like the document, full and partial", function()
    local n = 0
    for gi, wg in ipairs(GEOMETRIES) do
      local total = wg[1] * wg[2] * wg[3]
      for ci, c in ipairs(cases) do
        local p = program_of(c, wg)
        local args = inputs(c, total, gi * 1000 + ci)
        local o = ref:run(p, args, { grid = { GROUPS, 1, 1 } }).o
        local ot = out_type(c)
        for grp = 0, GROUPS - 1 do
          for sub = 0, total - 1, W do
            local cnt = math.min(W, total - sub)
            local v, a = {}, {}
            for i = 0, cnt - 1 do
              local at = grp * total + sub + i + 1
              v[i], a[i] = args.x[at], args.l[at]
            end
            local want = model(c.kind, c.op, c.t, v, a, cnt)
            for i = 0, cnt - 1 do
              local got = o[grp * total + sub + i + 1]
              if not same(ot, got, want[i]) then
                error(("%s %s %s on %s, workgroup %dx%dx%d, subgroup at %d, lane %d of %d: "
                  .. "got %s, want %s"):format(c.kind, c.op or "", c.t, ot, wg[1], wg[2], wg[3],
                  sub, i, cnt, tostring(got), tostring(want[i])))
              end
            end
          end
        end
        n = n + 1
      end
    end
    assert.is_true(n > 400)
  end)

  it("gives subgroup_size 32 and subgroup_lane the linear local id mod 32", function()
    local p = H.parse([[
(program lanes (workgroup 7 5)
  (buffer o u32 write)
  (buffer s u32 write)
  (let li (add (lid x) (mul (lid y) 7u32)))
  (store o li (subgroup_lane))
  (store s li (subgroup_size)))]])
    local r = ref:run(p, { o = vyre.array("u32", 35), s = vyre.array("u32", 35) },
      { grid = { 1, 1, 1 } })
    for i = 1, 35 do
      assert.are.equal((i - 1) % 32, r.o[i])
      assert.are.equal(32, r.s[i])
    end
  end)

  it("counts the lanes present with popcount of ballot true", function()
    local p = H.parse([[
(program present (workgroup 40)
  (buffer o u32 write)
  (store o (lid x) (popcount (ballot true))))]])
    local o = ref:run(p, { o = vyre.array("u32", 40) }, { grid = { 1, 1, 1 } }).o
    for i = 1, 40 do assert.are.equal(i <= 32 and 32 or 8, o[i]) end
  end)

  it("keeps float reductions in the documented order (not a sequential sum)", function()
    -- 1, then 31 tiny values: a sequential f32 sum would lose them one by one, the
    -- butterfly adds the tiny ones to each other first.
    local p = H.parse([[
(program order (workgroup 32)
  (buffer x f32 read)
  (buffer o f32 write)
  (store o (lid x) (subgroup_reduce add (load x (lid x)))))]])
    local xs = { 1.0 }
    for i = 2, 32 do xs[i] = 2.0 ^ -24 end
    local o = ref:run(p, { x = vyre.array("f32", xs) }, { grid = { 1, 1, 1 } }).o
    local v = {}
    for i = 0, 31 do v[i] = xs[i + 1] end
    local want = model("subgroup_reduce", "add", "f32", v, {}, 32)[0]
    assert.are.equal(want, o[1])
    assert.are_not.equal(1.0, o[1])
    for i = 2, 32 do assert.are.equal(o[1], o[i]) end
  end)

  it("rejects ops under divergent control flow with subgroup-divergent", function()
    local p = vyre.parse([[
(program div (workgroup 64)
  (buffer o u32 write)
  (if (lt (lid x) 5u32) (then (store o 0u32 (subgroup_reduce add (lid x))))))]])
    local ok, problems = vyre.validate(p)
    assert.is_false(ok)
    assert.are.equal("subgroup-divergent", problems[1].code)
    assert.are.equal("body[0].then[0].value", problems[1].path)
    assert.matches("out of divergent control flow", problems[1].fix, 1, true)
    -- the value may diverge; subgroup_lane may go anywhere
    assert.is_true(vyre.validate(vyre.parse([[
(program ok (workgroup 64)
  (buffer o u32 write)
  (store o (lid x) (shuffle (lid x) (sub 31u32 (subgroup_lane))))
  (if (lt (lid x) 5u32) (then (store o (subgroup_lane) 1u32))))]])))
  end)

  it("runs random programs made with allow_subgroup", function()
    local with_ops, with_match = 0, 0
    for seed = 1, 150 do
      local p = vyre.random_program(seed, { allow_subgroup = true, allow_barriers = seed % 2 == 0 })
      assert.is_true(vyre.validate(p))
      assert.are.equal(p:text(), vyre.random_program(seed, { allow_subgroup = true,
        allow_barriers = seed % 2 == 0 }):text())
      local text = p:text()
      if text:find("(shuffle", 1, true) or text:find("(ballot", 1, true)
        or text:find("%(subgroup_[rsa]") then
        with_ops = with_ops + 1
      end
      if text:find("(match_any", 1, true) then with_match = with_match + 1 end
      ref:run(p, program_inputs(p, seed), { n = 64 })
    end
    assert.is_true(with_ops >= 50, with_ops .. " of 150 programs use subgroup ops")
    -- match_any (issue 22) too: 46 of these 150 when it was added
    assert.is_true(with_match >= 30, with_match .. " of 150 programs use match_any")
    -- without the option nothing changes: no subgroup op appears
    for seed = 1, 50 do
      assert.is_nil(vyre.random_program(seed):text():find("(subgroup_", 1, true))
    end
  end)
end)

-- ---- DSL ------------------------------------------------------------------------------------

describe("subgroup ops in the DSL", function()
  local decls = { workgroup = 48, vyre.buffer("x", "f32", "read"),
    vyre.buffer("o", "u32", "write"), vyre.buffer("f", "f32", "write") }

  it("spells every op like the text format", function()
    local p = H.program("dsl_subgroup", decls, function(k)
      local i = k:let("i", k.lid.x)
      local v = k:let("v", k.x[i])
      local lane = k:let("lane", k:subgroup_lane())
      k.f[i] = v:shuffle(lane ~ 1) + v:shuffle_xor(3) + v:shuffle_up(1)
        + v:shuffle_down(k:subgroup_size())
      k.f[i + 48] = v:subgroup_reduce("add") + v:subgroup_scan("max")
      k.o[i] = k:ballot(v:gt(0)) + lane:subgroup_reduce("xor") + lane:subgroup_scan("and")
      k:when(v:lt(1):subgroup_all():lor(v:ne(v):subgroup_any()), function() k.o[0] = 1 end)
    end)
    local want = vyre.parse([[
(program dsl_subgroup (workgroup 48)
  (buffer x f32 read)
  (buffer o u32 write)
  (buffer f f32 write)
  (let i (lid x))
  (let v (load x i))
  (let lane (subgroup_lane))
  (store f i (add (add (add (shuffle v (xor lane 1u32)) (shuffle_xor v 3u32))
    (shuffle_up v 1u32)) (shuffle_down v (subgroup_size))))
  (store f (add i 48u32) (add (subgroup_reduce add v) (subgroup_scan max v)))
  (store o i (add (add (ballot (gt v 0x0p+0f32)) (subgroup_reduce xor lane))
    (subgroup_scan and lane)))
  (if (lor (subgroup_all (lt v 0x1p+0f32)) (subgroup_any (ne v v)))
    (then (store o 0u32 1u32))))]])
    assert.is_true(p == want, p:text())
  end)

  it("reports a subgroup_all/any built but never used, like a comparison", function()
    local line = debug.getinfo(1, "l").currentline + 3
    local msg = H.error_of(vyre.program, "unused", decls, function(k)
      local v = k:let("v", k.x[k.lid.x])
      local _ = v:gt(0):subgroup_any()
      k.o[0] = 1
    end)
    assert.matches("16_subgroup_spec.lua:" .. line .. ": the condition (subgroup_any (gt v "
      .. "0x0p+0f32)) is built but never used", msg, 1, true)
  end)

  it("refuses plain booleans, unknown combining ops and untyped values", function()
    assert.matches("plain Lua boolean", H.error_of(vyre.program, "b", decls, function(k)
      k.o[0] = k:ballot(true)
    end), 1, true)
    assert.matches("unknown combining op sub", H.error_of(vyre.program, "c", decls, function(k)
      k.f[0] = k.x[0]:subgroup_reduce("sub")
    end), 1, true)
    assert.matches("cannot tell the type", H.error_of(vyre.program, "d", decls, function(k)
      local shuffle = k.lid.x.shuffle -- the method, called on a plain number
      k.o[0] = shuffle(5, 1)
    end), 1, true)
  end)

  it("reports the validator's subgroup-divergent problem at the user's line", function()
    local line = debug.getinfo(1, "l").currentline + 3
    local msg = H.error_of(vyre.program, "dv", decls, function(k)
      k:when(k.lid.x:lt(3), function()
        k.o[0] = k:ballot(k.x[0]:gt(0))
      end)
    end)
    assert.matches("16_subgroup_spec.lua:" .. line .. ":", msg, 1, true)
    assert.matches("out of divergent control flow", msg, 1, true)
  end)
end)

-- ---- CUDA parity ------------------------------------------------------------------------------


describe("subgroup parity with the CUDA backend #gpu", function()
  local ref, gpu

  setup(function()
    ref = vyre.backend("reference")
    gpu = assert(require("vyre.cuda").device(0))
  end)

  teardown(function()
    gpu = nil
    collectgarbage()
    collectgarbage()
  end)

  local function compare(p, args, opts, label) H.parity_run(ref, gpu, p, args, opts, label) end

  it("runs every op on every type bit-identically, full and partial subgroups", function()
    for gi, wg in ipairs(GEOMETRIES) do
      local total = wg[1] * wg[2] * wg[3]
      for ci, c in ipairs(cases) do
        local p = program_of(c, wg)
        for rep = 1, 3 do
          compare(p, inputs(c, total, gi * 100000 + ci * 10 + rep), { grid = { GROUPS, 1, 1 } },
            ("%s %s %s %dx%dx%d"):format(c.kind, c.op or "", c.t, wg[1], wg[2], wg[3]))
        end
      end
    end
  end)

  it("runs subgroup_size, subgroup_lane and nested ops bit-identically", function()
    local p = vyre.parse([[
(program nested (workgroup 7 5 2)
  (buffer x f32 read)
  (buffer o u32 write)
  (buffer f f32 write)
  (let li (add (add (lid x) (mul (lid y) 7u32)) (mul (lid z) 35u32)))
  (let v (load x li))
  (store o li (add (mul (subgroup_lane) 1000u32) (subgroup_size)))
  (store f li (shuffle (subgroup_scan add (shuffle_xor v 5u32)) (sub 31u32 (subgroup_lane))))
  (let acc v)
  (for j 0u32 3u32 1u32 (set acc (subgroup_reduce min (add acc (shuffle_up acc 1u32)))))
  (store f (add li 70u32) acc))]])
    for seed = 1, 20 do
      local r = rng(seed)
      local xs = {}
      for i = 1, 70 do xs[i] = value("f32", r) end
      compare(p, { x = vyre.array("f32", xs), f = vyre.array("f32", 140),
        o = vyre.array("u32", 70) }, { grid = { 1, 1, 1 } }, "nested seed " .. seed)
    end
  end)

  it("runs random programs with allow_subgroup bit-identically", function()
    local count = tonumber(os.getenv("VYRE_PARITY_PROGRAMS") or "") or 1000
    for seed = 1, count do
      local p = vyre.random_program(seed, { allow_subgroup = true,
        allow_barriers = seed % 3 == 0 })
      compare(p, program_inputs(p, seed), { n = 64 }, "random_program(" .. seed .. ", subgroup)")
      if seed % 200 == 0 then collectgarbage() end
    end
  end)
end)
