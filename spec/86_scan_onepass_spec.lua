-- 86: the single-pass scan and compaction of vyre.lib (lua/vyre/lib/scan_onepass.lua,
-- docs/LIB.md "scan"). On the reference backend (always), on the fake CUDA driver (tag
-- fakecuda: the CUDA runtime with every kernel interpreted on the CPU; small sizes) and
-- on CUDA (tag gpu): every type and op at sizes 0, 1, 31, 33, 2049 and 10^5, floats bit
-- for bit against the documented association order (spec/scan_onepass_sim.lua), the
-- look-back's every path (config.lag makes the in-order reference walk as a busy GPU
-- would), carries that do not depend on where a walk stopped, graph replays, and
-- compaction. A parity block compares CUDA with the reference at 10^6, and every kernel
-- variant goes through ptxas for sm_90.
local vyre = require("vyre")
local lib = require("vyre.lib")
local onepass = require("vyre.lib.scan_onepass")
local scan = require("vyre.lib.scan")
local sim = require("spec.scan_onepass_sim")
local H = require("spec.helpers")

local NUM = { "i32", "u32", "i64", "u64", "f32", "f64" }
local OPS_ = { "add", "min", "max" }

-- Lua models of the types (spec/lib_model.lua, shared with spec 17) ------------------------

local LM = require("spec.lib_model")
local OPS, IDENTITY, is_float, same = LM.OPS, LM.IDENTITY, LM.is_float, LM.same

local function init_of(t, op, excl)
  if excl and op == "add" and is_float(t) then return 0.0 end
  return IDENTITY[t][op]
end


local random_list = LM.random_list

-- The expected scan: the association order's model for floats, the plain fold otherwise
-- (integer ops give the same bits in any order).
local function want_scan(t, op, xs, excl)
  local f, id, init = OPS[t][op], IDENTITY[t][op], init_of(t, op, excl)
  if is_float(t) then return sim.scan(t, f, id, init, xs, excl) end
  local out, acc = {}, init
  for i = 1, #xs do
    if excl then
      out[i] = acc
      acc = f(acc, xs[i])
    else
      acc = f(acc, xs[i])
      out[i] = acc
    end
  end
  return out
end

-- lib.reduce's chunk order over xs[b+1 .. e] (0-based [b, e)): invocation l folds b+l,
-- b+l+256, ... from the identity, then the fixed tree over the 256 values.
local function chunk_reduce(xs, b, e, f, id)
  local acc = {}
  for l = 0, 255 do
    local a = id
    for i = b + l, e - 1, 256 do a = f(a, xs[i + 1]) end
    acc[l] = a
  end
  local half = 128
  while half >= 1 do
    for l = 0, half - 1 do acc[l] = f(acc[l], acc[l + half]) end
    half = half // 2
  end
  return acc[0]
end

-- The documented result of segment [b, e) of the load-balanced segmented reduce: the
-- left fold up to LONG elements; longer: the chunk order over chunks of CHUNK elements.
local function want_segment(t, op, xs, b, e)
  local lb = require("vyre.lib.segmented_lb")
  local f, id = OPS[t][op], IDENTITY[t][op]
  if b >= e then
    if op == "add" then return is_float(t) and 0.0 or 0 end
    if is_float(t) then return op == "min" and math.huge or -math.huge end
    return ({ min = { i32 = 0x7fffffff, u32 = 0xffffffff, i64 = math.maxinteger, u64 = -1 },
      max = { i32 = -0x80000000, u32 = 0, i64 = math.mininteger, u64 = 0 } })[op][t]
  end
  if e - b <= lb.LONG then
    local acc = xs[b + 1]
    for i = b + 2, e do acc = f(acc, xs[i]) end
    return acc
  end
  local parts = {}
  for c = b, e - 1, lb.CHUNK do
    parts[#parts + 1] = chunk_reduce(xs, c, math.min(e, c + lb.CHUNK), f, id)
  end
  return chunk_reduce(parts, 0, #parts, f, id)
end

local function assert_list(t, want, got, what)
  assert.are.equal(#want, #got, what .. ": length")
  for i = 1, #want do
    if not same(t, want[i], got[i]) then
      error(("%s: element %d is %s, want %s"):format(what, i, tostring(got[i]),
        tostring(want[i])), 2)
    end
  end
end

-- Runs fn with onepass.config fields set to cfg, restoring them afterwards.
local function with_config(cfg, fn)
  local saved = {}
  for k, v in pairs(cfg) do
    saved[k] = onepass.config[k]
    onepass.config[k] = v
  end
  local ok, err = pcall(fn)
  for k, v in pairs(saved) do onepass.config[k] = v end
  if not ok then error(err, 0) end
end

-- The suite per backend -------------------------------------------------------------------

local KINDS = H.only_loaded({
  { name = "reference", tag = "", open = function() return vyre.backend("reference") end },
  { name = "CUDA", tag = " #gpu", open = function()
    return assert(require("vyre.cuda").device(0))
  end },
  { name = "fake CUDA driver's", tag = " #fakecuda", open = H.fake_backend, small = true },
})

for _, kind in ipairs(KINDS) do
  describe("single-pass scan on the " .. kind.name .. " backend" .. kind.tag, function()
    local be
    -- the fake interprets on the CPU: 20000 (5 tiles of 32-bit, 10 of 64-bit elements,
    -- past config.small, so the look-back runs) stands in for 10^5
    local SIZES = kind.small and { 0, 1, 31, 33, 2049, 20000 } or { 0, 1, 31, 33, 2049, 100000 }
    local BIG = SIZES[#SIZES]

    setup(function()
      be = kind.open()
      assert.is_true(onepass.config.enabled, "lib.scan takes the single-pass kernels")
    end)

    it("scans every type and op, inclusive and exclusive, floats in the documented order",
      function()
        for ti, t in ipairs(NUM) do
          for _, n in ipairs(SIZES) do
            local xs = random_list(t, n, 8600 + 100 * ti + n)
            local src, dst = be:buffer(t, xs), be:buffer(t, n)
            for _, op in ipairs(OPS_) do
              for _, excl in ipairs({ false, true }) do
                assert.are.equal(dst, lib.scan(be, src, dst, op, { exclusive = excl }))
                assert_list(t, want_scan(t, op, xs, excl), dst:download():totable(),
                  ("%s %s excl=%s n=%d"):format(t, op, tostring(excl), n))
              end
            end
            src:free()
            dst:free()
          end
        end
      end)

    it("gives the same float bits however far each look-back walked", function()
      -- lag L: every look-back ignores the inclusive prefixes of the L tiles before it,
      -- so it folds L aggregates (L >= window: the serial walk below the window). Small
      -- tiles (items = 2: 512 elements) make many tiles out of few elements.
      local n = kind.small and 9000 or 60000
      for _, t in ipairs({ "f32", "f64" }) do
        local xs = random_list(t, n, 8700)
        local want = {}
        for _, excl in ipairs({ false, true }) do
          with_config({ items = 2 }, function()
            want[excl] = want_scan(t, "add", xs, excl)
          end)
        end
        for _, lag in ipairs({ 0, 1, 7, 40, 1000 }) do
          with_config({ items = 2, window = 32, lag = lag }, function()
            local src, dst = be:buffer(t, xs), be:buffer(t, n)
            for _, excl in ipairs({ false, true }) do
              lib.scan(be, src, dst, "add", { exclusive = excl })
              assert_list(t, want[excl], dst:download():totable(),
                ("%s excl=%s lag=%d"):format(t, tostring(excl), lag))
            end
            -- the associative ops take the window's subgroup reduction
            lib.scan(be, src, dst, "max")
            assert_list(t, want_scan(t, "max", xs, false), dst:download():totable(),
              ("%s max lag=%d"):format(t, lag))
          end)
        end
      end
      -- integers and 64-bit words on the serial walk too
      for _, t in ipairs({ "u32", "i64", "u64" }) do
        local xs = random_list(t, n, 8800)
        with_config({ items = 2, window = 64, lag = 200 }, function()
          local src = be:buffer(t, xs)
          lib.scan(be, src, src, "add", { exclusive = true })
          assert_list(t, want_scan(t, "add", xs, true), src:download():totable(),
            t .. " in place, lag 200")
        end)
      end
    end)

    it("runs calls back to back and scans of several sizes in one sequence", function()
      -- each launch takes a new epoch and leaves the counters clean for the next one;
      -- two scans in one steps list use two look-back buffers (size classes)
      local a = random_list("u32", BIG, 8900)
      local b = random_list("u32", BIG * 3, 8901)
      local sa, da = be:buffer("u32", a), be:buffer("u32", BIG)
      local sb, db = be:buffer("u32", b), be:buffer("u32", BIG * 3)
      for _ = 1, 3 do
        local steps = {}
        scan.steps(be, "u32", "add", true, sa, da, BIG, steps)
        scan.steps(be, "u32", "add", false, sb, db, BIG * 3, steps)
        scan.steps(be, "u32", "max", false, sa, sa, BIG, steps)
        be:sequence(steps)
        assert_list("u32", want_scan("u32", "add", a, true), da:download():totable(), "a")
        assert_list("u32", want_scan("u32", "add", b, false), db:download():totable(), "b")
        assert_list("u32", want_scan("u32", "max", a, false), sa:download():totable(), "max")
        sa:upload(a)
      end
    end)

    it("replays a recorded graph with new input each time", function()
      local n = BIG
      local src, dst = be:buffer("f32", n), be:buffer("f32", n)
      local steps = {}
      scan.steps(be, "f32", "add", false, src, dst, n, steps)
      local g = be:graph(steps)
      for r = 1, 3 do
        local xs = random_list("f32", n, 9000 + r)
        src:upload(xs)
        g:launch(1)
        assert_list("f32", want_scan("f32", "add", xs, false), dst:download():totable(),
          "replay " .. r)
      end
    end)

    it("compacts stably in one pass with flags and predicates, counting what it keeps",
      function()
        for ti, t in ipairs({ "u32", "f64", "i64" }) do
          for _, n in ipairs(SIZES) do
            local xs = random_list(t, n, 9100 + 10 * ti + n)
            local src = be:buffer(t, xs)
            math.randomseed(n + ti)
            local fl = {}
            local want_f = {}
            for i = 1, n do
              fl[i] = math.random(0, 2) == 0 and 0 or math.random(1, 5)
              if fl[i] ~= 0 then want_f[#want_f + 1] = xs[i] end
            end
            local pred = ({ u32 = "(eq (and x 1u32) 1u32)", f64 = "(lt x 0x0p+0f64)",
              i64 = "(gt x 0i64)" })[t]
            local keep = ({ u32 = function(x) return x & 1 == 1 end,
              f64 = function(x) return x < 0 end, i64 = function(x) return x > 0 end })[t]
            local want_p = {}
            for i = 1, n do if keep(xs[i]) then want_p[#want_p + 1] = xs[i] end end
            for _, case in ipairs({ { be:buffer("u32", fl), want_f }, { pred, want_p } }) do
              for _, lag in ipairs({ 0, 5 }) do
                with_config({ lag = lag }, function()
                  local dst = be:buffer(t, n + 1)
                  local count = lib.compact(be, src, case[1], dst)
                  assert.are.equal(#case[2], count, ("%s n=%d lag=%d"):format(t, n, lag))
                  local got = dst:download():totable()
                  for i = 1, count do
                    assert.is_true(same(t, case[2][i], got[i]),
                      ("compact %s n=%d element %d"):format(t, n, i))
                  end
                  assert.is_true(same(t, is_float(t) and 0.0 or 0, got[count + 1]),
                    "nothing written past the count")
                end)
              end
            end
          end
        end
      end)

    it("compacts bool elements and into a short dst", function()
      local n = BIG
      local xs, want = {}, 0
      for i = 1, n do
        xs[i] = i % 3 == 0
        if xs[i] then want = want + 1 end
      end
      local src = be:buffer("bool", xs)
      local dst = be:buffer("bool", n)
      assert.are.equal(want, lib.compact(be, src, "x", dst))
      local got = dst:download()
      for i = 1, want do assert.is_true(got[i]) end
      local short = be:buffer("i32", 5)
      local ints = {}
      for i = 1, n do ints[i] = i end
      assert.are.equal(n // 2, lib.compact(be, be:buffer("i32", ints), "(eq (and x 1i32) 0i32)",
        short))
      assert.are.same({ 2, 4, 6, 8, 10 }, short:download():totable())
    end)
  end)
end

-- The load-balanced segmented reduce ----------------------------------------------------

for _, kind in ipairs(KINDS) do
  describe("load-balanced segmented reduce on the " .. kind.name .. " backend" .. kind.tag,
    function()
      local be
      setup(function() be = kind.open() end)

      -- a long segment, short ones, empty ones, the LONG boundary, a trailing empty one
      local function mix(n)
        local lb = require("vyre.lib.segmented_lb")
        local offs = { 0, n // 2 }
        local at = n // 2
        offs[#offs + 1] = at -- empty
        at = at + lb.LONG + 1
        offs[#offs + 1] = at -- just long
        at = at + lb.LONG
        offs[#offs + 1] = at -- just short
        while at < n do
          at = math.min(n, at + math.random(0, 12))
          offs[#offs + 1] = at
        end
        offs[#offs + 1] = n
        return offs
      end

      it("reduces long segments in the chunk order and short ones left to right", function()
        local n = kind.small and 20000 or 100000
        for ti, t in ipairs({ "f32", "f64", "i32", "u64" }) do
          math.randomseed(9500 + ti)
          local xs = random_list(t, n, 9500 + ti)
          local offs = mix(n)
          local vb, ob = be:buffer(t, xs), be:buffer("u32", offs)
          for _, op in ipairs(OPS_) do
            local out = be:buffer(t, #offs - 1)
            for rep = 1, 2 do -- the second call runs on the counters the first one left
              lib.segmented_reduce(be, vb, ob, out, op)
              local got = out:download():totable()
              for sidx = 1, #offs - 1 do
                local want = want_segment(t, op, xs, offs[sidx], math.min(offs[sidx + 1], n))
                if not same(t, want, got[sidx]) then
                  error(("%s %s segment %d [%d, %d) run %d: got %s want %s"):format(t, op, sidx,
                    offs[sidx], offs[sidx + 1], rep, tostring(got[sidx]), tostring(want)))
                end
              end
            end
          end
        end
      end)

      it("reduces overlapping and out-of-order segments, past the chunk slots too", function()
        -- more chunks than the host's bound (overlapping long segments): the segments
        -- that find no slots are folded by their own invocation
        local n = 8200
        local xs = {}
        for i = 1, n do xs[i] = i % 11 end
        local offs = { 0, n, 0, n, 100, 9000, 50, n, 0 }
        local vb, ob = be:buffer("i64", xs), be:buffer("u32", offs)
        local out = be:buffer("i64", #offs - 1)
        lib.segmented_reduce(be, vb, ob, out, "add")
        local got = out:download():totable()
        for sidx = 1, #offs - 1 do
          local w = 0
          for i = offs[sidx] + 1, math.min(offs[sidx + 1], n) do w = w + xs[i] end
          assert.are.equal(w, got[sidx], "segment " .. sidx)
        end
      end)
    end)
end

-- CUDA against the reference, bit for bit ------------------------------------------------

for _, kind in ipairs(H.cuda_kinds()) do
  describe("single-pass scan, " .. kind.name .. " against the reference " .. kind.tag,
    function()
      local ref, gpu
      local N = kind.small and 12345 or 1000000
      setup(function()
        ref = vyre.backend("reference")
        gpu = kind.open()
      end)

      it("scans, compacts and reduces segments to the same bits at " .. N .. " elements",
        function()
          for ti, t in ipairs(NUM) do
            local xs = random_list(t, N, 9200 + ti)
            for _, op in ipairs(is_float(t) and OPS_ or { "add" }) do
              for _, excl in ipairs({ false, true }) do
                local r = ref:buffer(t, N)
                lib.scan(ref, ref:buffer(t, xs), r, op, { exclusive = excl })
                local want = r:download():bytes()
                local src, dst = gpu:buffer(t, xs), gpu:buffer(t, N)
                for rep = 1, kind.small and 1 or 3 do
                  lib.scan(gpu, src, dst, op, { exclusive = excl })
                  assert.are.equal(want, dst:download():bytes(),
                    ("%s %s excl=%s run %d"):format(t, op, tostring(excl), rep))
                end
              end
            end
          end
          -- segmented reduce with a long segment of N/2 and short ones
          local sx = random_list("f32", N, 9350)
          local offs, at = { 0, N // 2 }, N // 2
          while at < N do
            at = math.min(N, at + math.random(1, 20))
            offs[#offs + 1] = at
          end
          for _, op in ipairs(OPS_) do
            local ro = ref:buffer("f32", #offs - 1)
            lib.segmented_reduce(ref, ref:buffer("f32", sx), ref:buffer("u32", offs), ro, op)
            local go = gpu:buffer("f32", #offs - 1)
            lib.segmented_reduce(gpu, gpu:buffer("f32", sx), gpu:buffer("u32", offs), go, op)
            assert.are.equal(ro:download():bytes(), go:download():bytes(), "segreduce " .. op)
          end
          local xs = random_list("f32", N, 9300)
          local pred = "(gt x 0x0p+0f32)"
          local rd = ref:buffer("f32", N)
          local rc = lib.compact(ref, ref:buffer("f32", xs), pred, rd)
          local gd = gpu:buffer("f32", N)
          assert.are.equal(rc, lib.compact(gpu, gpu:buffer("f32", xs), pred, gd))
          assert.are.equal(rd:download({ first = 1, count = rc }):bytes(),
            gd:download({ first = 1, count = rc }):bytes())
        end)
    end)
end

describe("single-pass scan under contention #gpu", function()
  -- On a GPU the look-backs stop wherever the timing puts them; the bits must not move.
  -- A window of 32 tiles makes walks below the window (the serial path) happen too.
  it("gives the same float bits run after run and against the reference at 2^22", function()
    local gpu = assert(require("vyre.cuda").device(0))
    local ref = vyre.backend("reference")
    for _, t in ipairs({ "f32", "f64" }) do
      local n = 1 << 22
      local xs = random_list(t, n, 9400)
      local rsrc, r = ref:buffer(t, xs), ref:buffer(t, n)
      local src, dst = gpu:buffer(t, xs), gpu:buffer(t, n)
      for _, cfg in ipairs({ {}, { window = 32 }, { window = 32, items = 4 } }) do
        with_config(cfg, function()
          -- the window changes only the walk; items changes the order (the reference too)
          lib.scan(ref, rsrc, r, "add", { exclusive = true })
          local want = r:download():bytes()
          for rep = 1, 4 do
            lib.scan(gpu, src, dst, "add", { exclusive = true })
            assert.are.equal(want, dst:download():bytes(),
              ("%s window=%s run %d"):format(t, tostring(cfg.window), rep))
          end
        end)
      end
      -- 2^26 elements: many more tiles in flight, run against run
      local big = gpu:buffer(t, 1 << 26)
      lib.iota(gpu, big, 0.5, 1.0 / 3)
      local out = gpu:buffer(t, 1 << 26)
      lib.scan(gpu, big, out, "add")
      local first = out:download():bytes()
      for rep = 1, 3 do
        lib.scan(gpu, big, out, "add")
        assert.are.equal(first, out:download():bytes(), t .. " 2^26 run " .. rep)
      end
    end
  end)
end)

-- ptxas ------------------------------------------------------------------------------------

local function find_ptxas()
  for _, path in ipairs({ os.getenv("PTXAS") or "", "/usr/local/cuda/bin/ptxas" }) do
    if path ~= "" and io.open(path, "r") then return path end
  end
  local h = io.popen("command -v ptxas 2>/dev/null")
  local p = h:read("l")
  h:close()
  return p
end

describe("single-pass scan kernels", function()
  it("assemble with ptxas for sm_90, every type, op and variant", function()
    local ptxas = find_ptxas()
    if not ptxas or ptxas == "" then
      pending("no ptxas on this machine: set PTXAS or install the CUDA toolkit")
      return
    end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local files = {}
    local function add(text)
      local p = vyre.parse(text)
      local path = ("%s/k%d.ptx"):format(dir, #files + 1)
      local f = assert(io.open(path, "w"))
      f:write(vyre.ptx(p, { sm = 90 }))
      f:close()
      files[#files + 1] = path
    end
    for _, t in ipairs(NUM) do
      for _, op in ipairs(OPS_) do
        for _, excl in ipairs({ false, true }) do
          for _, look in ipairs({ false, true }) do add(onepass.scan_text(t, op, excl, look)) end
        end
      end
    end
    with_config({ lag = 3, window = 256, items = 5 }, function()
      add(onepass.scan_text("f32", "add", true, true))
      add(onepass.scan_text("u64", "min", false, true))
    end)
    for _, t in ipairs({ "u32", "f64", "bool" }) do
      for _, look in ipairs({ false, true }) do
        add(onepass.compact_text(t, "u32", nil, look))
        add(onepass.compact_text(t, nil, t == "bool" and "x" or
          ("(ne x %s)"):format(t == "f64" and "0x0p+0f64" or "0u32"), look))
      end
    end
    for _, path in ipairs(files) do
      local h = io.popen(("%s -arch=sm_90 %s -o /dev/null 2>&1"):format(ptxas, path))
      local out = h:read("a")
      local ok = h:close()
      assert.is_true(ok == true, path .. ": " .. out)
    end
    os.execute("rm -rf " .. dir)
  end)
end)
