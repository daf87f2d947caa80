-- 74: the debug mode on CUDA (ARCHITECTURE.md §3, §7; spec 72 is the reference's).
-- Kernels compiled while be:debug() is on count their out-of-bounds loads and stores on
-- the device, per declaration, and be:oob_report() gives the same table as the
-- reference backend's for the same runs, with results unchanged. The cases run twice:
-- on the fake driver (#fakecuda, every commit: it runs the debug kernels on the
-- interpreter and adds the counts into the counters the runtime passes), and on a GPU
-- (#gpu), where random programs, shared memory, atomics and grid programs in every grid
-- sync mode are compared with the reference's report.
local vyre = require("vyre")
local H = require("spec.helpers")
local F = require("tests.fakecuda.harness")

local RANDOM_PROGRAMS = tonumber(os.getenv("VYRE_DEBUG_PROGRAMS") or "") or 300

-- o[i + 2] = a[i + 1] over 4 invocations: a read past its end once, o written twice.
local SHIFT = H.SHIFT_OOB

-- Shared memory and atomics: s[i + 2] of a shared array of 4, an atomic add at c[i] of
-- a 1-element counter, and an f32 atomic max (the compare-and-swap loop) at f[i + 1].
local SHARED = [[
(program dsh (workgroup 4)
  (buffer c u32 read_write) (buffer o u32 write) (buffer f f32 read_write)
  (shared s u32 4)
  (let i (gid x))
  (store s (add i 2u32) i)
  (barrier)
  (store o i (load s i))
  (let m (atomic max f (add i 1u32) 1.5f32))
  (atomic add c i 1u32))]]

-- Stays in bounds, and is elementwise: its non-debug kernel has a vector entry.
local INBOUNDS = [[
(program dok (workgroup 64) (buffer o u32 write) (let i (gid x))
  (if (lt i (len o)) (then (store o i i))))]]

-- A grid program: two sections, each writing one element past the end of its output.
local GRID = [[
(program dgrid (workgroup 4)
  (buffer o u32 read_write) (buffer r u32 write)
  (let i (gid x))
  (store o (add i 1u32) (add i 1u32))
  (grid_barrier)
  (let j (gid x))
  (store r (add j 1u32) (add (load o j) 1u32)))]]

local function shift_inputs()
  return { a = vyre.array("u32", { 1, 2, 3, 4 }), o = vyre.array("u32", 4) }
end

local function shared_inputs()
  return { c = vyre.array("u32", 1), o = vyre.array("u32", 4), f = vyre.array("f32", 4) }
end

-- Runs p with args() on the reference backend in debug mode and on be (debug on),
-- checks the results agree (bit for bit, NaN payloads free: H.parity_diff) and returns
-- both reports.
local function both(be, p, args, opts)
  local ref = vyre.reference.new({ debug = true })
  local want = ref:run(p, args(), opts)
  local got = be:run(p, args(), opts)
  for name, v in pairs(want) do
    local d = H.parity_diff(v, got[name])
    assert(not d, ("%s: result %s differs: %s"):format(p.name, name, tostring(d)))
  end
  return ref:oob_report(), be:oob_report()
end

-- The cases both drivers run; be() gives the device, register(text) makes the fake
-- compute a program (nothing on a GPU).
local function cases(be_of, register)
  -- The device in debug mode with an empty report, switched off when the case ends (no
  -- upvalue keeps it: a fault sweep below replaces lost device objects).
  local function debug_device()
    local be = be_of()
    be:oob_report()
    be:debug(true)
    finally(function() be_of():debug(false) end)
    return be
  end

  it("counts out-of-bounds loads and stores per buffer like the reference, results unchanged",
    function()
      local be = debug_device()
      register(SHIFT)
      local want, got = both(be, vyre.parse(SHIFT), shift_inputs)
      assert.are.same({ a = { loads = 1, stores = 0 }, o = { loads = 0, stores = 2 } }, want)
      assert.are.same(want, got)
      assert.are.same({}, be:oob_report())
    end)

  it("counts shared memory, atomics and the f32 compare-and-swap atomic as stores", function()
    local be = debug_device()
    register(SHARED)
    local want, got = both(be, vyre.parse(SHARED), shared_inputs)
    assert.are.same({ s = { loads = 0, stores = 2 }, c = { loads = 0, stores = 3 },
      f = { loads = 0, stores = 1 } }, want)
    assert.are.same(want, got)
  end)

  it("counts launches and sequences of kernels compiled in debug mode, until switched off",
    function()
      local be = debug_device()
      register(SHIFT)
      local p = vyre.parse(SHIFT)
      local k = be:compile(p)
      assert.is_true(k:info().debug)
      local a, o = be:buffer("u32", 4), be:buffer("u32", 4)
      k:launch({ a = a, o = o })
      be:sequence({ { k, { a = a, o = o } } }, { times = 3 })
      local l = k:bind({ a = a, o = o })
      l:launch()
      assert.are.same({ a = { loads = 5, stores = 0 }, o = { loads = 0, stores = 10 } },
        be:oob_report())
      assert.is_false(be:debug(false))
      k:launch({ a = a, o = o })
      assert.are.same({}, be:oob_report())
      assert.is_false(be:compile(p):info().debug)
    end)

  it("keeps the counts of kernels freed before the report", function()
    local be = debug_device()
    register(SHIFT)
    local k = be:compile(vyre.parse(SHIFT))
    local a, o = be:buffer("u32", 4), be:buffer("u32", 4)
    k:launch({ a = a, o = o })
    k:free()
    assert.are.same({ a = { loads = 1, stores = 0 }, o = { loads = 0, stores = 2 } },
      be:oob_report())
  end)

  it("switching starts a new report", function()
    local be = debug_device()
    register(SHIFT)
    be:run(vyre.parse(SHIFT), shift_inputs())
    be:debug(false)
    be:debug(true)
    assert.are.same({}, be:oob_report())
  end)

  it("reports nothing for a program that stays in bounds, and drops the vector entry", function()
    local be = debug_device()
    register(INBOUNDS)
    local p = vyre.parse(INBOUNDS)
    local got = be:run(p, { o = vyre.array("u32", 1000) })
    assert.are.same({ 0, 1, 2 }, { got.o[1], got.o[2], got.o[3] })
    assert.are.equal(999, got.o[1000])
    assert.are.same({}, be:oob_report())
    local k = be:compile(p)
    assert.is_true(k:info().debug)
    assert.is_false(k:info().vector)
    be:debug(false)
    assert.is_true(be:compile(p):info().vector)
  end)
end

describe("debug mode on the fake CUDA driver #fakecuda", function()
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  teardown(function()
    assert.are.same({}, H.leftovers(F.device()))
    assert.are.equal(0, (F.misuse()))
  end)

  cases(F.device, F.register)

  it("survives a failure of every driver call of compile, launch, free and report", function()
    F.register(SHIFT)
    F.register(F.INC) -- the sweep's "does the device compute" check
    local p = vyre.parse(SHIFT)
    local want = { a = { loads = 2, stores = 0 }, o = { loads = 0, stores = 4 } }
    F.sweep_covers({
      name = "debug mode",
      prep = function(be)
        be:debug(true)
        be:oob_report()
        return { a = be:buffer("u32", 4), o = be:buffer("u32", 4) }
      end,
      run = function(be, st)
        local k = be:compile(p) -- its counters: cuMemAlloc, cuMemsetD8Async
        k:launch({ a = st.a, o = st.o })
        k:free() -- folds its counts: cuMemcpyDtoHAsync, cuStreamSynchronize, cuMemFree
        st.k = be:compile(p)
        st.k:launch({ a = st.a, o = st.o })
        return be:oob_report()
      end,
      check = function(_, _, report) assert.are.same(want, report) end,
      release = function(st)
        for _, key in ipairs({ "k", "a", "o" }) do
          if st[key] then st[key]:free() end
        end
      end,
    }, { "cuMemAlloc", "cuMemsetD8Async", "cuLaunchKernel", "cuMemcpyDtoHAsync",
      "cuStreamSynchronize", "cuMemFree" })
    F.device():debug(false)
  end)

  it("is an option of vyre.cuda.device and vyre.backend, checked with a Fix", function()
    local cuda = require("vyre.cuda")
    local be = cuda.device(0, { debug = true })
    assert.is_true(be:debug())
    assert.are.equal(be, vyre.backend("cuda", { debug = false }))
    assert.is_false(be:debug())
    assert.matches("vyre.cuda.device: unknown option max_steps. Fix:",
      H.error_of(cuda.device, 0, { max_steps = 1 }), 1, true)
    assert.matches("vyre.cuda.device: debug must be a boolean (got string). Fix:",
      H.error_of(cuda.device, 0, { debug = "yes" }), 1, true)
    assert.matches("vyre.cuda.open: options must be a table (got number). Fix:",
      H.error_of(cuda.open, 0, 1), 1, true)
  end)

  it("starts as $VYRE_DEBUG says", function()
    local code = "print((require(\"vyre.cuda\").device(0):debug()))"
    assert.are.equal("true\n", H.lua_child("VYRE_DEBUG=1", code)) -- VYRE_LIBCUDA inherited
    assert.are.equal("false\n", H.lua_child("VYRE_DEBUG=0", code))
  end)
end)

describe("debug mode on CUDA #gpu", function()
  local cuda = require("vyre.cuda")
  local gpu

  setup(function() gpu = assert(cuda.device(0)) end)

  teardown(function()
    gpu:grid_sync("auto")
    -- vyre.lib keeps kernels per backend (also those of other spec files' buf:fill)
    require("vyre.lib").release(gpu)
    gpu = nil
    assert.are.same({}, H.leftovers(cuda.device(0)))
  end)

  cases(function() return gpu end, function() end)

  it("gives the reference's report for random programs", function()
    gpu:debug(true)
    finally(function() gpu:debug(false) end)
    local counted = 0
    for seed = 1, RANDOM_PROGRAMS do
      local p = vyre.random_program(seed, { allow_barriers = seed % 3 == 0 })
      local args = function() return H.random_inputs(p, seed, 100) end
      local want, got = both(gpu, p, args, { n = 100 })
      assert.are.same(want, got, "random_program(" .. seed .. ")")
      if next(want) then counted = counted + 1 end
      if seed % 100 == 0 then collectgarbage() end
    end
    gpu:debug(false)
    print(("\n  debug: %d random programs, %d with out-of-bounds accesses, reports equal")
      :format(RANDOM_PROGRAMS, counted))
    assert.is_true(counted > RANDOM_PROGRAMS // 10, "too few programs go out of bounds")
  end)

  it("gives the reference's report for vyre.lib calls and megakernels", function()
    local lib = require("vyre.lib")
    local ref = vyre.reference.new({ debug = true })
    local function run_on(be)
      local vals = {}
      for i = 1, 5000 do vals[i] = (i * 7919) % 1000 end
      local sum = lib.reduce(be, be:buffer("u32", vals), "add")
      local keys = lib.sort(be, be:buffer("u32", vals)):download():totable()
      local k = be:compile(vyre.parse(SHIFT))
      local a, o, o2 = be:buffer("u32", { 1, 2, 3, 4 }), be:buffer("u32", 4), be:buffer("u32", 4)
      be:megakernel({ { k, { a = a, o = o } }, { k, { a = o, o = o2 } } }, { times = 2 })
      return sum, keys, o2:download():totable(), be:oob_report()
    end
    gpu:debug(true)
    finally(function()
      gpu:debug(false)
      lib.release(gpu) -- its kernels and scratch buffers (the teardown counts leftovers)
    end)
    local rsum, rkeys, ro2, want = run_on(ref)
    local gsum, gkeys, go2, got = run_on(gpu)
    assert.are.equal(rsum, gsum)
    assert.are.same(rkeys, gkeys)
    assert.are.same(ro2, go2)
    -- the megakernel's buffers are reported under the composed program's names
    assert.are.same({ loads = 2, stores = 0 }, want.mg_b0)
    assert.are.same(want, got)
  end)

  it("counts grid programs in every grid sync mode", function()
    local p = vyre.parse(GRID)
    finally(function() gpu:debug(false) end)
    for _, mode in ipairs({ "cooperative", "split", "graph" }) do
      gpu:grid_sync(mode)
      gpu:debug(true)
      local args = function() return { o = vyre.array("u32", 8), r = vyre.array("u32", 8) } end
      local want, got = both(gpu, p, args, { n = 8 })
      assert.are.same({ o = { loads = 0, stores = 1 }, r = { loads = 0, stores = 1 } }, want,
        mode)
      assert.are.same(want, got, mode)
      gpu:debug(false)
    end
  end)
end)
