-- 54: fault injection over the fake driver (#fakecuda) for dispatch: launch,
-- launch_timed, bind + launch, launch_raw, sequences (prefix, repeat, ranged readback,
-- timed), graph capture, replay and free, run and run_timed. Each driver call is failed
-- in turn (tests/fakecuda/harness.lua, F.sweep), launches and waits also with
-- CUDA_ERROR_LAUNCH_FAILED (sticky) and CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES. Then device
-- loss as docs/RUNTIME.md describes it: a kernel fault reported by the next wait marks
-- the device lost, every later call raises the cause, and a new device object resets
-- the context — or, where the driver keeps the fault for the process (driver 580,
-- VYRE_FAKECUDA_PERSIST), says to restart the process. Grid programs (a converge loop)
-- in each grid sync mode (cooperative, split, graph) are swept the same
-- way: every failure surfaces, raised or recorded and raised at the next call (issue
-- 26: a failed cuMemsetD8Async inside a graph-mode round was lost). A converge flag
-- bound with no elements is refused at launch.
local F = require("tests.fakecuda.harness")
local vyre = require("vyre")

local available, why = F.available()

describe("fault injection: dispatch #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  setup(function()
    F.control("set ptxas 0")
  end)

  teardown(function()
    F.control("set ptxas 1")
  end)

  local sweep = F.sweep_covers -- the sweep, and that it covered the listed calls

  -- A kernel (INC) and a buffer {1, 2, 3}.
  local function kernel(be)
    return { k = be:compile(vyre.parse(F.INC)), v = be:buffer("u32", { 1, 2, 3 }) }
  end

  local function values(st, want)
    assert.are.same(want, st.v:download():totable())
  end

  local function release(st)
    for _, key in ipairs({ "g", "l", "k", "v", "raw" }) do
      if st[key] then st[key]:free() end
    end
  end

  it("launch (then a wait)", function()
    sweep({
      name = "launch",
      prep = kernel,
      run = function(be, st) st.k:launch({ v = st.v }); be:synchronize() end,
      check = function(_, st) values(st, { 2, 3, 4 }) end,
      release = release,
    }, { "cuLaunchKernel", "cuStreamSynchronize" })
  end)

  it("launch_timed", function()
    sweep({
      name = "launch_timed",
      prep = kernel,
      run = function(_, st) return st.k:launch_timed({ v = st.v }) end,
      check = function(_, st, t)
        assert.is_true(t.wall_ns > 0 and t.device_ns >= 0)
        values(st, { 2, 3, 4 })
      end,
      release = release,
    }, { "cuEventRecord", "cuLaunchKernel", "cuStreamSynchronize", "cuEventElapsedTime" })
  end)

  it("bind once, then l:launch()", function()
    sweep({
      name = "bind+launch",
      prep = function(be)
        local st = kernel(be)
        st.l = st.k:bind({ v = st.v })
        return st
      end,
      run = function(be, st) st.l:launch(); be:synchronize() end,
      check = function(_, st) values(st, { 2, 3, 4 }) end,
      release = release,
    }, { "cuLaunchKernel" })
  end)

  it("k:bind itself", function()
    sweep({
      name = "bind",
      prep = kernel,
      run = function(_, st) return st.k:bind({ v = st.v }) end,
      release = release,
    }, { "cuCtxGetCurrent" })
  end)

  it("launch_raw", function()
    F.foreign(true) -- RAW is foreign PTX: its launch only tests the plumbing
    finally(function() F.foreign(false) end)
    local RAW = ".version 7.0\n.target sm_70\n.address_size 64\n"
      .. ".visible .entry touch(.param .u64 p)\n{\n  ret;\n}\n"
    sweep({
      name = "launch_raw",
      prep = function(be) return { raw = be:load_ptx(RAW, "touch"), v = be:buffer("u32", 4) } end,
      run = function(be, st) st.raw:launch_raw({ 2 }, { 32 }, { st.v }); be:synchronize() end,
      release = release,
    }, { "cuLaunchKernel" })
  end)

  it("sequence: a prefix, a repeated group, ranged readbacks, timed", function()
    sweep({
      name = "sequence",
      prep = function(be)
        local st = kernel(be)
        st.iota = be:compile(vyre.parse(require("spec.helpers").IOTA))
        st.w = be:buffer("u32", 100)
        return st
      end,
      run = function(be, st)
        return be:sequence({ { st.iota, { v = st.w } }, { st.k, { v = st.w } } },
          { prefix = 1, times = 3, readback = { { st.w, 11, 3 }, st.v }, timed = true })
      end,
      check = function(_, _, res)
        assert.are.same({ 13, 14, 15 }, res[1]:totable())
        assert.are.same({ 1, 2, 3 }, res[2]:totable())
      end,
      release = function(st)
        st.iota:free()
        st.w:free()
        release(st)
      end,
    }, { "cuEventRecord", "cuLaunchKernel", "cuMemHostAlloc", "cuMemcpyDtoHAsync",
      "cuStreamSynchronize", "cuEventElapsedTime" })
  end)

  it("graph capture", function()
    sweep({
      name = "graph",
      prep = kernel,
      run = function(be, st)
        return be:graph({ { st.k, { v = st.v } }, { st.k, { v = st.v } } })
      end,
      check = function(_, st, g)
        g:launch(2)
        values(st, { 5, 6, 7 })
        g:free()
      end,
      release = release,
    }, { "cuStreamBeginCapture", "cuLaunchKernel", "cuStreamEndCapture",
      "cuGraphInstantiateWithFlags" })
  end)

  it("graph replay, timed", function()
    sweep({
      name = "graph:launch",
      prep = function(be)
        local st = kernel(be)
        st.g = be:graph({ { st.k, { v = st.v } } })
        return st
      end,
      run = function(_, st) return st.g:launch(3, true) end,
      check = function(_, st, t)
        assert.is_true(t.wall_ns > 0)
        values(st, { 4, 5, 6 })
      end,
      release = release,
    }, { "cuEventRecord", "cuGraphLaunch", "cuStreamSynchronize", "cuEventElapsedTime" })
  end)

  it("graph free (a failure is reported next)", function()
    sweep({
      name = "graph:free",
      prep = function(be)
        local st = kernel(be)
        st.g = be:graph({ { st.k, { v = st.v } } })
        return st
      end,
      run = function(_, st) st.g:free() end,
      release = release,
    }, { "cuGraphExecDestroy", "cuGraphDestroy" })
  end)

  it("run with host data (module from the disk cache, pools, staging, one wait)", function()
    sweep({
      name = "run",
      prep = function(be)
        be:run(vyre.parse(F.INC), { v = { 0 } }) -- the cubin is on disk now
        be:trim() -- pools empty, module unloaded: the run allocates and loads again
        return {}
      end,
      run = function(be) return be:run_timed(vyre.parse(F.INC), { v = { 7, 8, 9 } }) end,
      check = function(_, _, out) assert.are.same({ 8, 9, 10 }, out.v:totable()) end,
    }, { "cuModuleLoadDataEx", "cuMemAlloc", "cuMemHostAlloc", "cuMemcpyHtoDAsync",
      "cuLaunchKernel", "cuMemcpyDtoHAsync", "cuStreamSynchronize", "cuEventElapsedTime" })
  end)

  it("run with a resident buffer and a zeroed output", function()
    sweep({
      name = "run(resident)",
      prep = function(be)
        local st = kernel(be)
        be:run(vyre.parse(F.INC), { v = st.v })
        values(st, { 2, 3, 4 })
        return st
      end,
      run = function(be, st) return be:run(vyre.parse(F.INC), { v = st.v }) end,
      check = function(_, st) values(st, { 3, 4, 5 }) end,
      release = release,
    }, { "cuLaunchKernel", "cuStreamSynchronize" })
  end)
end)

describe("device loss over the fake driver #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  local INC = F.INC

  it("a kernel fault reported by the next wait marks the device lost; every later call "
    .. "raises the cause; a new device object resets the context and works", function()
    local cuda = require("vyre.cuda")
    local be = F.device()
    collectgarbage()
    local refs0 = F.live().ctx_refs
    local k = be:compile(vyre.parse(INC))
    local v = be:buffer("u32", { 1, 2 })
    -- The launch itself succeeds; the fault surfaces later, as on a GPU.
    F.control("fail cuLaunchKernel:1:CUDA_ERROR_ILLEGAL_ADDRESS:async")
    k:launch({ v = v })
    F.control("clear")
    local ok, err = pcall(be.synchronize, be)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS",
      1, true), err)
    assert.truthy(tostring(err):find("the device is lost", 1, true), err)
    assert.is_true(be:lost())
    for _, call in ipairs({
      function() return be:buffer("u32", 4) end,
      function() return v:download() end,
      function() return k:launch({ v = v }) end,
      function() return be:run(vyre.parse(INC), { v = { 1 } }) end,
      function() return be:compile(vyre.parse(INC)) end,
    }) do
      local ok2, err2 = pcall(call)
      assert.is_false(ok2)
      assert.truthy(tostring(err2):find("CUDA_ERROR_ILLEGAL_ADDRESS", 1, true), err2)
    end
    -- Freeing on a lost device never touches the driver (the reset frees it all).
    local misuse = F.misuse()
    v:free()
    k:free()
    v, k = nil, nil -- luacheck: ignore 311 (a kernel keeps its backend alive)
    local again = assert(cuda.device(0))
    assert.are_not.equal(be, again)
    assert.is_false(again:lost())
    assert.is_true(F.usable(again))
    assert.is_true(be:lost()) -- the old object stays lost
    local ok3, err3 = pcall(be.synchronize, be)
    assert.is_false(ok3)
    assert.truthy(tostring(err3):find("CUDA_ERROR_ILLEGAL_ADDRESS", 1, true), err3)
    be = nil -- luacheck: ignore 311
    collectgarbage()
    collectgarbage()
    assert.are.equal(misuse, (F.misuse()))
    -- The old object's context reference went, the new one's came; the reset freed
    -- what the old context held.
    local live = F.live()
    assert.are.equal(refs0, live.ctx_refs)
    assert.are.equal(0, live.mem)
  end)

  it("where the driver keeps the fault for the process, reopening says to restart it",
    function()
      local cuda = require("vyre.cuda")
      local be = F.device()
      F.control("set persist 1")
      F.control("fault CUDA_ERROR_ILLEGAL_ADDRESS")
      local ok, err = pcall(be.synchronize, be)
      assert.is_false(ok)
      assert.truthy(tostring(err):find("CUDA_ERROR_ILLEGAL_ADDRESS", 1, true), err)
      local again, reason = cuda.device(0)
      assert.is_nil(again)
      assert.truthy(reason:find("cannot be reopened in this process", 1, true), reason)
      assert.truthy(reason:find("Fix: restart the process", 1, true), reason)
      -- A driver that does clear it on reset: the next open works.
      F.control("set persist 0")
      again = assert(cuda.device(0))
      assert.is_true(F.usable(again))
    end)

  it("a lost device of one ordinal leaves another ordinal alone (2 fake devices)", function()
    -- The fault poisons the context current on the calling thread: d1's, opened last.
    -- (One line per statement and no comments: the shell joins the lines.)
    local code = [[
      local vyre, cuda = require('vyre'), require('vyre.cuda')
      local F = require('tests.fakecuda.harness')
      assert(F.available())
      local d0, d1 = assert(cuda.device(0)), assert(cuda.device(1))
      F.control('fault CUDA_ERROR_LAUNCH_FAILED')
      local ok = pcall(d1.synchronize, d1)
      print(cuda.count(), ok, d1:lost(), d0:lost(), F.usable(d0))
    ]]
    local cmd = string.format("VYRE_FAKECUDA_DEVICES=2 LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q 2>&1",
      package.path, package.cpath, code)
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    p:close()
    assert.are.equal("2\tfalse\ttrue\tfalse\ttrue\n", out)
  end)
end)

-- A countdown: each round decrements x[i] > 0 and sets the flag; its host split has one
-- section, registered as gcount_s0 so that split and graph launches compute.
local GDECLS = [[
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (param max u32)]]
local GBODY = [[
    (let i (gid x))
    (if (lt i (len x))
      (then
        (if (gt (load x i) 0u32)
          (then
            (store x i (sub (load x i) 1u32))
            (store flag 0u32 1u32)))))]]
local COUNTDOWN = "(program gcount (workgroup 32)" .. GDECLS .. "\n  (converge flag max\n"
  .. GBODY .. "))"
local COUNTDOWN_S0 = "(program gcount_s0 (workgroup 32)" .. GDECLS .. GBODY .. ")"
local STEP = "(program gstep (workgroup 32) (buffer x u32 read_write) (buffer flag u32 read_write)"
  .. GBODY .. ")"

describe("fault injection: grid programs #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  setup(function()
    F.control("set ptxas 0")
    for _, text in ipairs({ COUNTDOWN, COUNTDOWN_S0, STEP, F.INC }) do
      assert(F.register(text))
    end
  end)

  teardown(function()
    F.control("set ptxas 1")
    F.device():grid_sync("auto")
  end)

  -- The fake computes a program through the interpreter, with the program's own
  -- parameters: a cooperative kernel (which also takes the grid barrier's scratch) is
  -- not computed, so that mode sweeps an unregistered copy and checks no values.
  local COOP = COUNTDOWN:gsub("program gcount", "program gcoop")

  local function grid_state(be, mode)
    be:grid_sync(mode)
    return { k = be:compile(vyre.parse(mode == "cooperative" and COOP or COUNTDOWN)),
      x = be:buffer("u32", { 3, 1 }), f = be:buffer("u32", 1) }
  end

  local function grid_release(st)
    for _, key in ipairs({ "k", "x", "f" }) do
      if st[key] then st[key]:free() end
    end
  end

  for _, mode in ipairs({ "cooperative", "split", "graph" }) do
    it("a converge launch in grid sync mode " .. mode, function()
      -- Modules (and the fake's JIT) warmed once per device object, before each case's
      -- leak baseline; each case still compiles its own kernel, so graph mode records
      -- (and probes the memset node) in every case.
      local warmed = setmetatable({}, { __mode = "k" })
      local calls = F.sweep({
        name = "grid " .. mode,
        shared = function(be)
          if not warmed[be] then
            local st = grid_state(be, mode)
            st.k:launch({ x = st.x, flag = st.f, max = 9 })
            be:synchronize()
            grid_release(st)
            warmed[be] = true
          end
        end,
        prep = function(be) return grid_state(be, mode) end,
        run = function(be, st)
          st.k:launch({ x = st.x, flag = st.f, max = 9 })
          be:synchronize()
        end,
        check = mode ~= "cooperative" and function(_, st)
          assert.are.same({ 0, 0 }, st.x:download():totable())
        end or nil,
        release = grid_release,
        -- graph mode: the fake refuses a memset node, so the first capture is ended
        -- (INVALIDATED, by design) and the memset runs around the graph
        tolerate = { ["cuStreamEndCapture:1:CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"] =
          "ending the capture the refused memset invalidated" },
      })
      local got = " " .. table.concat(calls, " ") .. " "
      local want = ({ cooperative = "cuLaunchCooperativeKernel", split = "cuMemsetD8Async",
        graph = "cuGraphLaunch" })[mode]
      assert.truthy(got:find(" " .. want .. " ", 1, true), "no " .. want .. ":" .. got)
      if mode == "graph" then
        assert.truthy(got:find(" cuStreamBeginCapture cuMemsetD8Async ", 1, true),
          "no memset probed in a capture:" .. got)
      end
    end)
  end

  it("refuses a converge flag with no elements at launch, with a fix", function()
    local be = F.device()
    local k = be:compile(vyre.parse(COUNTDOWN))
    local x, f = be:buffer("u32", { 1 }), be:buffer("u32", 0)
    local ok, err = pcall(k.launch, k, { x = x, flag = f, max = 3 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("buffer 2 has 0 elements, but it is the flag of a "
      .. "converge loop", 1, true), tostring(err))
    assert.truthy(tostring(err):find("Fix: bind a buffer of at least 1 element", 1, true))
    k:free()
    x:free()
    f:free()
  end)
end)
