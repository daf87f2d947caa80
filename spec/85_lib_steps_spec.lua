-- 85: vyre.lib's steps forms (issue 22 §1, docs/LIB.md "Steps forms"). lib.steps.NAME
-- returns the steps of NAME's call for be:sequence, be:graph and be:megakernel: nothing
-- is read back (scalars and counts go to buffers), nothing is allocated when they run,
-- and a count known only on the device (compact's) feeds the steps after it through a
-- buffer (opts.count). Random chains of steps forms run inside one be:sequence, one
-- be:graph (replayed) and one be:megakernel (times = N), and every buffer they touch is
-- compared bit for bit with a second set of buffers that the plain calls computed (run
-- the same number of times, counts carried on the host). On the reference backend
-- (always), the fake CUDA driver (#fakecuda, small sizes) and a GPU (#gpu, 10^6).
local vyre = require("vyre")
local lib = require("vyre.lib")
local H = require("spec.helpers")

-- A world: the buffers a chain works on, all of length n (cnt, ru, rf: 1; h: 64 bins).
local function world(be, n, seed)
  local w = {
    a = be:buffer("u32", n), b = be:buffer("u32", n), c = be:buffer("u32", n),
    f = be:buffer("f32", n), g = be:buffer("f32", n), k = be:buffer("i64", n),
    cnt = be:buffer("u32", 1), ru = be:buffer("u32", 1), rf = be:buffer("f32", 1),
    h = be:buffer("u32", 64), off = be:buffer("u32", { 0, 3, 3, n // 3, n // 2, n }),
    n = n, pc = 0,
  }
  w.a:random(seed, 0, 1000)
  w.b:random(seed + 1, 0, 50)
  w.f:random(seed + 2, -1.0, 1.0)
  w.k:random(seed + 3, -5, 5)
  return w
end

local NAMES = { "a", "b", "c", "f", "g", "k", "cnt", "ru", "rf", "h" }

local function bits(buf)
  local t = buf:download():totable()
  if buf.type == "f32" or buf.type == "f64" then
    for i = 1, #t do t[i] = ("%q"):format(string.pack("<d", t[i])) end
  end
  return t
end

local function int_identity(op)
  return op == "min" and 4294967295 or 0
end

-- Each op: steps(be, w, p, sc) -> steps list, and plain(be, w, p) doing the same with the
-- plain calls (scalars uploaded into the world's buffers, counts kept in w.pc too). p is
-- drawn by arg(r). The u32 buffer b holds compaction output: its first w.pc elements.
local OPS = {
  { name = "fill", arg = function(r) return r(0, 99) end,
    steps = function(be, w, v, sc) return lib.steps.fill(be, w.c, v, { scratch = sc }) end,
    plain = function(be, w, v) lib.fill(be, w.c, v) end },
  { name = "iota", arg = function(r) return r(0, 9) end,
    steps = function(be, w, v, sc) return lib.steps.iota(be, w.c, v, 3, { scratch = sc }) end,
    plain = function(be, w, v) lib.iota(be, w.c, v, 3) end },
  { name = "copy", arg = function() return 0 end,
    steps = function(be, w, _, sc) return lib.steps.copy(be, w.a, w.c, { scratch = sc }) end,
    plain = function(be, w) lib.copy(be, w.a, w.c) end },
  { name = "scan f32", arg = function(r) return ({ "add", "min", "max" })[r(1, 3)] end,
    steps = function(be, w, op, sc)
      return lib.steps.scan(be, w.f, w.g, op, { exclusive = op == "add", scratch = sc })
    end,
    plain = function(be, w, op) lib.scan(be, w.f, w.g, op, { exclusive = op == "add" }) end },
  { name = "reduce f32", arg = function(r) return ({ "add", "min", "max" })[r(1, 3)] end,
    steps = function(be, w, op, sc)
      return lib.steps.reduce(be, w.g, op, { out = w.rf, scratch = sc })
    end,
    plain = function(be, w, op) w.rf:upload({ lib.reduce(be, w.g, op) }) end },
  { name = "compact", arg = function(r) return r(0, 1100) end,
    steps = function(be, w, t, sc)
      return lib.steps.compact(be, w.a, ("(lt x %du32)"):format(t), w.b,
        { out = w.cnt, scratch = sc })
    end,
    plain = function(be, w, t)
      w.pc = lib.compact(be, w.a, ("(lt x %du32)"):format(t), w.b)
      w.cnt:upload({ w.pc })
    end },
  { name = "scan with count", arg = function(r) return r(0, 1) == 1 end,
    steps = function(be, w, excl, sc)
      return lib.steps.scan(be, w.b, w.b, { exclusive = excl, count = w.cnt, scratch = sc })
    end,
    plain = function(be, w, excl)
      if w.pc > 0 then
        local v = w.b:view(1, w.pc)
        lib.scan(be, v, v, { exclusive = excl })
      end
    end },
  { name = "reduce with count", arg = function(r) return ({ "add", "min", "max" })[r(1, 3)] end,
    steps = function(be, w, op, sc)
      return lib.steps.reduce(be, w.b, op, { out = w.ru, count = w.cnt, scratch = sc })
    end,
    plain = function(be, w, op)
      -- a device count of 0 leaves the op's identity (docs/LIB.md)
      local v = w.pc > 0 and lib.reduce(be, w.b:view(1, w.pc), op) or int_identity(op)
      w.ru:upload({ v })
    end },
  { name = "copy with count", arg = function() return 0 end,
    steps = function(be, w, _, sc)
      return lib.steps.copy(be, w.b, w.c, { count = w.cnt, scratch = sc })
    end,
    plain = function(be, w)
      if w.pc > 0 then lib.copy(be, w.b:view(1, w.pc), w.c) end
    end },
  { name = "sort", arg = function(r) return r(0, 3) end, big_shared = true,
    steps = function(be, w, v, sc)
      if v == 0 then return lib.steps.sort(be, w.a, { scratch = sc }) end
      if v == 1 then return lib.steps.sort(be, w.f, w.c, { scratch = sc }) end
      if v == 2 then return lib.steps.sort(be, w.c, { bits = { 0, 4 }, scratch = sc }) end
      return lib.steps.sort(be, w.k, w.a, { scratch = sc })
    end,
    plain = function(be, w, v)
      if v == 0 then lib.sort(be, w.a) elseif v == 1 then lib.sort(be, w.f, w.c)
      elseif v == 2 then lib.sort(be, w.c, { bits = { 0, 4 } }) else lib.sort(be, w.k, w.a) end
    end },
  { name = "argsort", arg = function(r) return r(0, 1) end, big_shared = true,
    steps = function(be, w, v, sc)
      return lib.steps.argsort(be, v == 0 and w.f or w.k, { out = w.c, scratch = sc,
        order = v == 0 and "numpy" or nil })
    end,
    plain = function(be, w, v)
      lib.argsort(be, v == 0 and w.f or w.k, { out = w.c, order = v == 0 and "numpy" or nil })
    end },
  { name = "histogram", arg = function(r) return r(1, 64) end,
    steps = function(be, w, bins, sc)
      return lib.steps.histogram(be, w.a, bins, 0, 1000, { out = w.h, scratch = sc })
    end,
    plain = function(be, w, bins) lib.histogram(be, w.a, bins, 0, 1000, { out = w.h }) end },
  { name = "segmented", arg = function(r) return r(0, 1) end,
    steps = function(be, w, v, sc)
      if v == 0 then return lib.steps.segmented_reduce(be, w.f, w.off, w.g, "max",
        { scratch = sc }) end
      return lib.steps.segmented_scan(be, w.f, w.off, w.g, { scratch = sc })
    end,
    plain = function(be, w, v)
      if v == 0 then lib.segmented_reduce(be, w.f, w.off, w.g, "max")
      else lib.segmented_scan(be, w.f, w.off, w.g) end
    end },
  { name = "runs", arg = function(r) return r(0, 2) end,
    steps = function(be, w, v, sc)
      local o = { out = w.cnt, scratch = sc }
      if v == 0 then return lib.steps.unique(be, w.b, w.c, o) end
      if v == 1 then return lib.steps.run_length(be, w.b, w.c, w.a, o) end
      return lib.steps.reduce_by_key(be, w.b, w.f, w.c, w.g, "add", o)
    end,
    plain = function(be, w, v)
      if v == 0 then w.pc = lib.unique(be, w.b, w.c)
      elseif v == 1 then w.pc = lib.run_length(be, w.b, w.c, w.a)
      else w.pc = lib.reduce_by_key(be, w.b, w.f, w.c, w.g, "add") end
      w.cnt:upload({ w.pc })
    end },
  { name = "runs with count", arg = function(r) return r(0, 2) end,
    steps = function(be, w, v, sc)
      local o = { out = w.ru, count = w.cnt, scratch = sc }
      if v == 0 then return lib.steps.unique(be, w.b, w.c, o) end
      if v == 1 then return lib.steps.run_length(be, w.b, w.c, w.a, o) end
      return lib.steps.reduce_by_key(be, w.b, w.f, w.c, w.g, "max", o)
    end,
    plain = function(be, w, v)
      local m = 0
      if w.pc > 0 then
        local b = w.b:view(1, w.pc)
        if v == 0 then m = lib.unique(be, b, w.c)
        elseif v == 1 then m = lib.run_length(be, b, w.c, w.a)
        else m = lib.reduce_by_key(be, b, w.f:view(1, w.pc), w.c, w.g, "max") end
      end
      w.ru:upload({ m })
    end },
  { name = "sorts with count", arg = function(r) return r(0, 2) end, big_shared = true,
    steps = function(be, w, v, sc)
      if v == 0 then return lib.steps.sort(be, w.b, w.c, { count = w.cnt, scratch = sc }) end
      if v == 1 then
        return lib.steps.sort(be, w.b, { bits = { 2, 9 }, count = w.cnt, scratch = sc })
      end
      return lib.steps.argsort(be, w.b, { out = w.a, count = w.cnt, scratch = sc })
    end,
    plain = function(be, w, v)
      if w.pc == 0 then return end
      local b = w.b:view(1, w.pc)
      if v == 0 then lib.sort(be, b, w.c:view(1, w.pc))
      elseif v == 1 then lib.sort(be, b, { bits = { 2, 9 } })
      else lib.argsort(be, b, { out = w.a }) end
    end },
  { name = "fill and iota with count", arg = function(r) return r(0, 9) end,
    steps = function(be, w, v, sc)
      local steps = lib.steps.fill(be, w.c, v, { count = w.cnt, scratch = sc })
      for _, x in ipairs(lib.steps.iota(be, w.g, v, 0.25, { count = w.cnt })) do
        steps[#steps + 1] = x
      end
      return steps
    end,
    plain = function(be, w, v)
      if w.pc > 0 then
        lib.fill(be, w.c:view(1, w.pc), v)
        lib.iota(be, w.g:view(1, w.pc), v, 0.25)
      end
    end },
  { name = "histogram with count", arg = function(r) return r(1, 64) end,
    steps = function(be, w, bins, sc)
      return lib.steps.histogram(be, w.b, bins, 0, 600000, { out = w.h, count = w.cnt,
        scratch = sc })
    end,
    plain = function(be, w, bins)
      if w.pc > 0 then lib.histogram(be, w.b:view(1, w.pc), bins, 0, 600000, { out = w.h })
      else lib.fill(be, w.h:view(1, bins), 0) end
    end },
}

local function rng(seed)
  local r = H.rng(seed)
  return function(lo, hi) return lo + r() % (hi - lo + 1) end
end

local function steps_of(be, w, list, sc)
  local steps = {}
  for _, e in ipairs(list) do
    for _, s in ipairs(e.op.steps(be, w, e.p, sc)) do steps[#steps + 1] = s end
  end
  return steps
end

-- Whether be:megakernel composes steps (be:plan validates the composed program).
local function composes(be, steps)
  return (pcall(be.plan, be, steps, { times = 2 }))
end

-- A random chain of ops with their drawn arguments; at most max_steps steps on be. For a
-- megakernel (mega), only ops with which the composed program stays valid (be:plan
-- checks; the shared window is the largest step's, so today every op composes).
local function chain(be, w, r, len, max_steps, mega)
  local list, total = {}, 0
  local sc = lib.scratch(be)
  for _ = 1, len * 6 do
    if #list == len then break end
    local op = OPS[r(1, #OPS)]
    local p = op.arg(r)
    local nsteps = #op.steps(be, w, p, sc)
    local e = { op = op, p = p }
    local ok = total + nsteps <= max_steps
    if ok and mega then
      list[#list + 1] = e
      ok = composes(be, steps_of(be, w, list, sc))
      list[#list] = nil
    end
    if ok then
      list[#list + 1] = e
      total = total + nsteps
    end
  end
  return list
end


local function run_plain(be, w, list, times)
  for _ = 1, times do
    for _, e in ipairs(list) do e.op.plain(be, w, e.p) end
  end
end

local function same(wa, wb, what)
  for _, name in ipairs(NAMES) do
    assert.are.same(bits(wb[name]), bits(wa[name]), what .. ": buffer " .. name)
  end
end

local function names(list)
  local t = {}
  for _, e in ipairs(list) do t[#t + 1] = e.op.name .. "(" .. tostring(e.p) .. ")" end
  return table.concat(t, ", ")
end

local KINDS = H.only_loaded({
  { name = "reference", tag = "", n = 20000,
    open = function() return vyre.backend("reference") end },
  { name = "fake CUDA driver", tag = " #fakecuda", n = 9000, open = H.fake_backend },
  { name = "CUDA", tag = " #gpu", n = 1000000, open = function()
    return assert(require("vyre.cuda").device(0))
  end },
})

for _, kind in ipairs(KINDS) do
  describe("vyre.lib steps forms on the " .. kind.name .. " backend" .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    it("run random chains in one be:sequence as the plain calls do, bit for bit", function()
      for seed = 1, 3 do
        local r = rng(seed * 7919)
        local wa, wb = world(be, kind.n, seed), world(be, kind.n, seed)
        local list = chain(be, wa, r, 7, 60)
        local sc = lib.scratch(be)
        be:sequence(steps_of(be, wa, list, sc))
        run_plain(be, wb, list, 1)
        same(wa, wb, "sequence " .. names(list))
      end
    end)

    it("run random chains in one be:graph replayed several times", function()
      for seed = 4, 5 do
        local r = rng(seed * 104729)
        local wa, wb = world(be, kind.n, seed), world(be, kind.n, seed)
        local list = chain(be, wa, r, 6, 60)
        local sc = lib.scratch(be)
        local g = be:graph(steps_of(be, wa, list, sc))
        g:launch(2)
        g:launch(1)
        run_plain(be, wb, list, 3)
        same(wa, wb, "graph x3 " .. names(list))
      end
    end)

    it("run random chains in one be:megakernel with times = N", function()
      for seed = 6, 7 do
        local r = rng(seed * 15485863)
        local wa, wb = world(be, kind.n, seed), world(be, kind.n, seed)
        local list = chain(be, wa, r, 5, 14, true)
        assert.is_true(#list >= 3, "too few ops compose: " .. names(list))
        local sc = lib.scratch(be)
        assert.are.equal(2, be:megakernel(steps_of(be, wa, list, sc), { times = 2 }))
        run_plain(be, wb, list, 2)
        same(wa, wb, "megakernel x2 " .. names(list))
      end
    end)

    it("run a sort in one be:megakernel as be:sequence and the plain calls do", function()
      -- The passes of a sort each declare a 40 KiB tile; the megakernel's shared window is
      -- the largest step's (the PTX overlaps the steps of a layer and the layers), so the
      -- sort composes, keys alone and with values.
      for _, list in ipairs({ { { op = OPS[2], p = 1 }, { op = OPS[10], p = 0 } },
                              { { op = OPS[10], p = 1 } }, { { op = OPS[10], p = 3 } },
                              { { op = OPS[11], p = 0 }, { op = OPS[10], p = 2 } } }) do
        local wa, wb, wc = world(be, kind.n, 31), world(be, kind.n, 31), world(be, kind.n, 31)
        local steps = steps_of(be, wa, list, lib.scratch(be))
        assert.is_true(composes(be, steps), "the sort does not compose: " .. names(list))
        assert.are.equal(3, be:megakernel(steps, { times = 3 }))
        be:sequence(steps_of(be, wc, list, lib.scratch(be)), { times = 3 })
        run_plain(be, wb, list, 3)
        same(wa, wb, "megakernel sort " .. names(list))
        same(wa, wc, "megakernel against be:sequence " .. names(list))
      end
    end)

    it("chain compaction into scans and reductions through the device count", function()
      -- every op that takes opts.count, after a compaction, in one sequence
      for _, t in ipairs({ 0, 1, 300, 999, 1000 }) do
        local wa, wb = world(be, kind.n, 11), world(be, kind.n, 11)
        local list = { { op = OPS[6], p = t }, { op = OPS[7], p = true },
          { op = OPS[8], p = "max" }, { op = OPS[9], p = 0 }, { op = OPS[7], p = false },
          { op = OPS[8], p = "add" }, { op = OPS[17], p = 4 }, { op = OPS[18], p = 50 },
          { op = OPS[15], p = 0 }, { op = OPS[15], p = 1 }, { op = OPS[15], p = 2 },
          { op = OPS[6], p = t }, { op = OPS[16], p = 0 }, { op = OPS[16], p = 1 },
          { op = OPS[16], p = 2 } }
        be:sequence(steps_of(be, wa, list, lib.scratch(be)))
        run_plain(be, wb, list, 1)
        same(wa, wb, "count chain " .. t)
      end
    end)

    it("run a compaction feeding its device count to later steps in one be:megakernel",
      function()
        for _, t in ipairs({ 0, 700 }) do
          local wa, wb = world(be, kind.n, 12), world(be, kind.n, 12)
          local list = { { op = OPS[6], p = t }, { op = OPS[8], p = "min" },
            { op = OPS[9], p = 0 } }
          assert.are.equal(2, be:megakernel(steps_of(be, wa, list, lib.scratch(be)),
            { times = 2 }))
          run_plain(be, wb, list, 2)
          same(wa, wb, "megakernel count chain " .. t)
        end
        -- a compaction and a scan of its output fit one megakernel up to 16384 elements
        -- (the scan is then one step; docs/LIB.md, Steps forms)
        local wa, wb = world(be, 16000, 13), world(be, 16000, 13)
        local list = { { op = OPS[6], p = 800 }, { op = OPS[7], p = true },
          { op = OPS[8], p = "max" } }
        assert.are.equal(3, be:megakernel(steps_of(be, wa, list, lib.scratch(be)),
          { times = 3 }))
        run_plain(be, wb, list, 3)
        same(wa, wb, "megakernel compaction and scan")
      end)

    it("allocate nothing when the steps run, and read nothing back", function()
      local w = world(be, kind.n, 21)
      local sc = lib.scratch(be)
      local steps = steps_of(be, w, { { op = OPS[6], p = 500 }, { op = OPS[10], p = 1 },
        { op = OPS[14], p = 2 } }, sc)
      local before = tostring(sc)
      be:sequence(steps)
      be:sequence(steps)
      assert.are.equal(before, tostring(sc)) -- no scratch buffer was added by running
      for _, s in ipairs(steps) do
        assert.are.equal("vyre.Kernel", getmetatable(s[1]).__name)
        assert.is_table(s[3].grid)
      end
    end)
  end)
end

describe("vyre.lib steps forms: errors", function()
  local be = vyre.backend("reference")
  it("say what is missing and how to fix it", function()
    local u = be:buffer("u32", 8)
    local function msg(fn, ...) return H.error_of(fn, ...) end
    assert.matches("vyre.lib.steps.reduce: opts.out is missing. Fix:", msg(lib.steps.reduce,
      be, u), 1, true)
    assert.matches("vyre.lib.steps.compact: opts.out is missing. Fix:", msg(lib.steps.compact,
      be, u, "(gt x 0u32)", be:buffer("u32", 8)), 1, true)
    assert.matches("vyre.lib.steps.scan: opts.count has type i32", msg(lib.steps.scan, be, u, u,
      { count = be:buffer("i32", 1) }), 1, true)
    assert.matches("vyre.lib.steps.scan: opts.scratch must be a vyre.lib.Scratch",
      msg(lib.steps.scan, be, u, u, { scratch = {} }), 1, true)
    assert.matches("vyre.lib.steps.histogram: opts.out is missing. Fix:",
      msg(lib.steps.histogram, be, u, 4, 0, 8), 1, true)
    assert.matches("vyre.lib.steps.unique: opts.out is missing. Fix:",
      msg(lib.steps.unique, be, u, be:buffer("u32", 8)), 1, true)
    assert.matches("vyre.lib.steps.reduce: opts.out is buf. Fix:",
      msg(lib.steps.reduce, be, u, { out = u }), 1, true)
    local c = be:buffer("u32", 1)
    assert.matches("vyre.lib.steps.compact: opts.count is opts.out. Fix: keep the count",
      msg(lib.steps.compact, be, u, "(gt x 0u32)", be:buffer("u32", 8), { out = c, count = c }),
      1, true)
    assert.matches("vyre.lib.steps.scan: opts.count and dst share memory",
      msg(lib.steps.scan, be, u, u, { count = u:view(2, 1) }), 1, true)
    assert.matches("vyre.lib.steps.fill: opts.count and argument 2 (buf) share memory",
      msg(lib.steps.fill, be, u, 1, { count = u:view(8) }), 1, true)
    local other = vyre.backend("reference")
    assert.matches("opts.scratch belongs to another backend", msg(lib.steps.copy, be, u,
      be:buffer("u32", 8), { scratch = lib.scratch(other) }), 1, true)
  end)
end)
