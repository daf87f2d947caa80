-- 94: the load-balanced segmented scan (lua/vyre/lib/segmented_scan_lb.lua, docs/LIB.md).
-- Segments of at most LONG elements keep the left fold; longer ones are cut into chunks
-- of CHUNK elements whose carries and values follow the chunk tree written at the top of
-- that file. A Lua model computes exactly that order (float add included), and the
-- reference backend and the fake CUDA driver (#fakecuda) must give its bits at sizes 0,
-- 1, 31, 33, 2049 and 10^5, inclusive and exclusive, in place too, with empty segments,
-- uncovered elements and offsets past the end; small LONG/CHUNK make the short sizes take
-- the long path. On a GPU (#gpu) the CUDA results equal the reference's at 10^6, and the
-- mix of issue 22 (one segment of 10^7, 10^5 of 10) equals the model.
local vyre = require("vyre")
local lib = require("vyre.lib")
local slb = require("vyre.lib.segmented_scan_lb")
local H = require("spec.helpers")
local LM = require("spec.lib_model")

local W = 32

-- ---- the model ---------------------------------------------------------------------------

local function first_excl(t, op)
  if op == "add" and LM.is_float(t) then return 0.0 end
  return LM.IDENTITY[t][op]
end

-- The chunk tree of list xs (0-based positions 0 .. #xs-1 as xs[1..]) with q values per
-- invocation: returns S (S[l] for l = 0..255, 0-based keys) and the total S[255].
local function tree(t, op, xs, q)
  local f, N = LM.OPS[t][op], LM.IDENTITY[t][op]
  local s, w = {}, {}
  for l = 0, 255 do
    local acc = N
    for k = 0, q - 1 do
      local x = xs[l * q + k + 1]
      if x ~= nil then acc = f(acc, x) end
    end
    s[l] = acc
  end
  for l = 0, 255 do w[l] = s[l] end
  for d = 0, 4 do
    local dd, nw = 1 << d, {}
    for j = 0, 255 do nw[j] = (j % W >= dd) and f(w[j - dd], w[j]) or w[j] end
    w = nw
  end
  local S = {}
  for l = 0, 255 do
    local p = N
    for z = 0, (l // W) - 1 do p = f(p, w[z * W + W - 1]) end
    S[l] = f(p, w[l])
  end
  return S, S[255]
end

-- The scan of values xs (Lua list) over CSR offs (Lua list) into out (a copy of dst's
-- initial contents), as docs/LIB.md defines it for the given LONG and CHUNK.
local function model(t, op, excl, xs, offs, out, long, chunk)
  local f, N = LM.OPS[t][op], LM.IDENTITY[t][op]
  local n, q = #xs, chunk // 256
  local FIRST = first_excl(t, op)
  for sgi = 1, #offs - 1 do
    local b, e = offs[sgi], math.min(offs[sgi + 1], n)
    if b < e and e - b <= long then
      local acc = xs[b + 1]
      out[b + 1] = excl and FIRST or acc
      for i = b + 1, e - 1 do
        if excl then out[i + 1] = acc; acc = f(acc, xs[i + 1])
        else acc = f(acc, xs[i + 1]); out[i + 1] = acc end
      end
    elseif b < e then
      local nch = (e - b + chunk - 1) // chunk
      local P, Ss = {}, {}
      for c = 0, nch - 1 do
        local cb = b + c * chunk
        local vals = {}
        for i = cb, math.min(e, cb + chunk) - 1 do vals[#vals + 1] = xs[i + 1] end
        Ss[c], P[c + 1] = tree(t, op, vals, q)
      end
      for c = 0, nch - 1 do
        local cb = b + c * chunk
        local ce = math.min(e, cb + chunk)
        local prev = {}
        for j = 1, c do prev[j] = P[j] end
        local _, C = tree(t, op, prev, (c + 255) // 256)
        for l = 0, 255 do
          local acc = f(C, l == 0 and N or Ss[c][l - 1])
          for k = 0, q - 1 do
            local i = cb + l * q + k
            if i < ce then
              if excl then out[i + 1] = (i == b) and FIRST or acc; acc = f(acc, xs[i + 1])
              else acc = f(acc, xs[i + 1]); out[i + 1] = acc end
            end
          end
        end
      end
    end
  end
  return out
end

-- ---- inputs ------------------------------------------------------------------------------

-- CSR offsets over n elements from seed: a first offset past 0 (uncovered head), runs of
-- random lengths with some long ones and empty segments, a last offset short of n
-- (uncovered tail) or past it (clipped).
local function offsets_for(n, seed, long)
  local r = H.rng(seed)
  local function pick(m) return (r() >> 33) % m end
  local offs = { n > 4 and pick(3) or 0 }
  while offs[#offs] < n do
    local k = pick(10)
    local len
    if k == 0 then len = 0
    elseif k <= 2 then len = long + 1 + pick(long * 3 + 300)
    else len = 1 + pick(long) end
    offs[#offs + 1] = offs[#offs] + len
  end
  if n > 2 and pick(2) == 0 then offs[#offs] = n - 1 end
  if #offs == 1 then offs[2] = n end
  return offs
end

local function compare(t, want, got, label)
  for i = 1, #want do
    if not LM.same(t, want[i], got[i]) then
      error(("%s: element %d: got %s, want %s"):format(label, i, tostring(got[i]),
        tostring(want[i])), 2)
    end
  end
end

local CASES = { { "f32", "add" }, { "f64", "add" }, { "i32", "min" }, { "u64", "max" },
  { "f32", "max" }, { "i64", "add" } }

local function with_config(long, chunk, fn)
  local old = { slb.config.LONG, slb.config.CHUNK }
  slb.config.LONG, slb.config.CHUNK = long, chunk
  local ok, err = pcall(fn)
  slb.config.LONG, slb.config.CHUNK = old[1], old[2]
  if not ok then error(err, 0) end
end

-- One scan on be checked against the model; inplace: dst is values itself.
local function check(be, t, op, excl, n, seed, inplace, steps, offs)
  local xs = LM.random_list(t, n, seed)
  offs = offs or offsets_for(n, seed + 1, slb.config.LONG)
  local v = be:buffer(t, math.max(n, 1))
  if n > 0 then v:upload(vyre.array(t, xs)) end
  local vals = n > 0 and v:view(1, n) or v:view(1, 0)
  local dst = inplace and vals or (n > 0 and be:buffer(t, n):view(1, n) or vals)
  local init = {}
  for i = 1, n do init[i] = inplace and xs[i] or (LM.is_float(t) and 0.0 or 0) end
  if not inplace and n > 0 then dst:zero() end
  local off = be:buffer("u32", offs)
  if steps then
    be:sequence(lib.steps.segmented_scan(be, vals, off, dst, op, { exclusive = excl }))
  else
    lib.segmented_scan(be, vals, off, dst, op, { exclusive = excl })
  end
  local want = model(t, op, excl, xs, offs, init, slb.config.LONG, slb.config.CHUNK)
  local got = n > 0 and dst:download():totable() or {}
  compare(t, want, got, ("%s %s %s n=%d seed=%d%s"):format(t, op, excl and "excl" or "incl",
    n, seed, inplace and " in place" or ""))
end

local KINDS = H.only_loaded({
  { name = "reference", tag = "", sizes = { 0, 1, 31, 33, 2049, 100000 },
    open = function() return vyre.backend("reference") end },
  { name = "fake CUDA driver", tag = " #fakecuda", sizes = { 0, 1, 31, 33, 2049, 20000 },
    open = H.fake_backend },
})

for _, kind in ipairs(KINDS) do
  describe("load-balanced segmented scan on the " .. kind.name .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    it("equals the model with small chunks (long path at every size)", function()
      with_config(40, 256, function()
        for ci, c in ipairs(CASES) do
          for si, n in ipairs(kind.sizes) do
            if n <= 2049 or ci <= 2 then
              check(be, c[1], c[2], (si + ci) % 2 == 0, n, ci * 100 + si, false)
            end
          end
        end
      end)
    end)

    it("equals the model with several elements per invocation, in place, as steps", function()
      with_config(300, 512, function()
        for ci, c in ipairs(CASES) do
          check(be, c[1], c[2], ci % 2 == 1, 2049, 7000 + ci, true)
          check(be, c[1], c[2], ci % 2 == 0, 5000, 8000 + ci, false, true)
        end
      end)
    end)

    it("equals the model with the default LONG and CHUNK at the largest size", function()
      local n = kind.sizes[#kind.sizes]
      for _, excl in ipairs({ false, true }) do
        check(be, "f32", "add", excl, n, excl and 91 or 92, false)
      end
    end)

    it("keeps the left fold for segments of at most LONG elements", function()
      -- one segment of LONG elements and one of LONG + 1 (split): float add differs
      -- between the two orders for these values, so the split must follow the tree
      with_config(300, 256, function()
        check(be, "f32", "add", false, 601, 4242, false, false, { 0, 300, 601 })
        -- the tree is not the left fold: the model's split segment differs from one
        local xs = LM.random_list("f32", 601, 4242)
        local tree_out = model("f32", "add", false, xs, { 0, 300, 601 }, {}, 300, 256)
        local fold_out = model("f32", "add", false, xs, { 0, 300, 601 }, {}, 1000, 256)
        local differ = 0
        for i = 301, 601 do
          if not LM.same("f32", tree_out[i], fold_out[i]) then differ = differ + 1 end
        end
        assert.is_true(differ > 0, "the test values do not tell the orders apart")
      end)
    end)
  end)
end

describe("load-balanced segmented scan on a GPU #gpu", function()
  local ref, gpu
  setup(function()
    ref = vyre.backend("reference")
    gpu = assert(require("vyre.cuda").device(0))
  end)

  it("gives the reference's bits at 10^6 on every case", function()
    for ci, c in ipairs(CASES) do
      local n = 1000000
      local xs = LM.random_list(c[1], n, 500 + ci)
      local offs = offsets_for(n, 600 + ci, slb.config.LONG)
      local res = {}
      for k, be in ipairs({ ref, gpu }) do
        local v = be:buffer(c[1], vyre.array(c[1], xs))
        local d = be:buffer(c[1], n)
        lib.segmented_scan(be, v, be:buffer("u32", offs), d, c[2], { exclusive = ci % 2 == 0 })
        res[k] = d:download()
      end
      assert.is_nil(H.parity_diff(res[1], res[2]), c[1] .. " " .. c[2])
    end
  end)

  it("runs issue 22's mix (one segment of 10^7, 10^5 of 10) as the model says", function()
    local n = 10000000 + 100000 * 10
    local xs = LM.random_list("f32", n, 77)
    local offs = { 0, 10000000 }
    for s = 1, 100000 do offs[#offs + 1] = 10000000 + 10 * s end
    local v = gpu:buffer("f32", vyre.array("f32", xs))
    local d = gpu:buffer("f32", n)
    lib.segmented_scan(gpu, v, gpu:buffer("u32", offs), d)
    local want = model("f32", "add", false, xs, offs, {}, slb.config.LONG, slb.config.CHUNK)
    compare("f32", want, d:download():totable(), "mix")
  end)
end)
