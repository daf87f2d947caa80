-- 32: grid sync "graph" (docs/GRID.md): the host split with every converge round —
-- zeroing the flag, the round's section launches, the flag readback — captured once
-- into a CUDA graph and replayed, one graph launch and one flag read per round. On the
-- fake driver (#fakecuda; scripts/test.sh runs it against build/fakecuda/libcuda.so.1):
-- results and rounds bit for bit those of the reference, one graph launch per round,
-- recorded rounds reused (and recorded again for other arguments or grid loop values),
-- the mode's spellings ($VYRE_GRID_SYNC, be:grid_sync, opts.grid_sync, plan.mode) and a
-- fault sweep of a graph-mode launch. Launches compute on the fake because the programs
-- and their section kernels (the host split's "<name>_s<i>": the program's declarations,
-- the grid loop variables as params, the section's statements) are registered.
-- #gpu parity for this mode is in specs 30 and 31.
local vyre = require("vyre")
local F = require("tests.fakecuda.harness")

local available, why = F.available()

local DECLS = [[
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (param max u32)]]

local COUNT_BODY = [[
    (let i (gid x))
    (if (lt i (len x))
      (then
        (if (gt (load x i) 0u32)
          (then
            (store x i (sub (load x i) 1u32))
            (store flag 0u32 1u32)))))]]

local COUNTDOWN = "(program gcount (workgroup 32)" .. DECLS .. "\n  (converge flag max\n"
  .. COUNT_BODY .. "))"
local COUNTDOWN_S0 = "(program gcount_s0 (workgroup 32)" .. DECLS .. COUNT_BODY .. ")"

-- Two sections per round (a grid barrier between them), a section before the loops, and
-- the converge inside a grid loop: a round is recorded for each value of k.
local TWO_DECLS = [[
  (buffer x u32 read_write)
  (buffer y u32 read_write)
  (buffer flag u32 read_write)
  (param lim u32)]]
local TWO_PRE = [[
  (let p (gid x))
  (if (lt p (len y)) (then (store y p 0u32)))]]
local TWO_A = [[
      (let i (gid x))
      (if (lt i (len x)) (then (store y i (add (load x i) k))))]]
local TWO_B = [[
      (let j (gid x))
      (if (lt j (len x))
        (then
          (if (lt (load y j) (add lim (mul k 4u32)))
            (then
              (store x j (add (load y j) 1u32))
              (store flag 0u32 1u32)))))]]
local TWO = "(program gtwo (workgroup 16)" .. TWO_DECLS .. TWO_PRE
  .. "\n  (grid_barrier)\n  (for k 0u32 3u32 1u32\n    (converge flag 50u32\n" .. TWO_A
  .. "\n      (grid_barrier)\n" .. TWO_B .. ")))"
local function two_part(n, body, k)
  return ("(program gtwo_s%d (workgroup 16)%s%s%s)"):format(n, TWO_DECLS,
    k and "\n  (param k u32)" or "", body)
end

describe("grid sync \"graph\" on the fake driver #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  local ref, be

  setup(function()
    ref = vyre.backend("reference")
    be = F.device()
    for _, text in ipairs({ COUNTDOWN, COUNTDOWN_S0, TWO, two_part(0, TWO_PRE),
      two_part(1, TWO_A, true), two_part(2, TWO_B, true), F.INC }) do
      assert(F.register(text))
    end
  end)

  teardown(function()
    be:grid_sync("auto")
    be = nil
    collectgarbage()
    collectgarbage()
    local cur = F.device()
    cur:trim()
    local s = cur:stats()
    assert.are.equal(0, s.live_kernels)
    assert.are.equal(0, s.live_buffers)
    local live = F.live()
    assert.are.equal(0, live.graphs)
    assert.are.equal(0, live.execs)
    assert.are.equal(0, (F.misuse()))
  end)

  local function computed()
    return tonumber(F.control("launches"):match("computed=(%d+)"))
  end

  it("is a grid sync mode of its own, from be:grid_sync and $VYRE_GRID_SYNC", function()
    assert.are.equal("auto", be:grid_sync("graph"))
    assert.are.equal("graph", be:grid_sync())
    assert.are.equal("graph", be:grid_sync("auto"))
    local e = select(2, pcall(be.grid_sync, be, "graphs"))
    assert.truthy(tostring(e):find('"graph"', 1, true))
    assert.truthy(tostring(e):find("Fix:", 1, true))
    local cmd = ("VYRE_GRID_SYNC=graph LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q 2>&1"):format(
      package.path, package.cpath,
      "io.write(assert(require('vyre.cuda').device(0)):grid_sync())")
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    p:close()
    assert.are.equal("graph", out)
    -- one name per mode: the old "host_loop" (and any unknown value) fails the open,
    -- naming the new one, instead of silently running "auto"
    cmd = ("VYRE_GRID_SYNC=host_loop LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q 2>&1"):format(
      package.path, package.cpath,
      "io.write(tostring(select(2, pcall(require('vyre.cuda').device, 0))))")
    p = assert(io.popen(cmd))
    out = p:read("a")
    p:close()
    assert.truthy(out:find('$VYRE_GRID_SYNC is "host_loop", not a grid sync mode ("host_loop" is '
      .. 'now called "split"). Fix:', 1, true), out)
  end)

  it("runs converge rounds as graph replays, bit for bit the reference", function()
    be:grid_sync("graph")
    local p = vyre.parse(COUNTDOWN)
    local cases = {
      { x = { 3, 0, 1, 5, 2, 0, 4, 1 }, flag = { 7 }, max = 100 }, -- converges: 6 rounds
      { x = { 3, 0, 1, 5, 2, 0, 4, 1 }, flag = { 0 }, max = 2 },   -- stops at max, flag 1
      { x = { 9 }, flag = { 5 }, max = 0 },                        -- no round, flag zeroed
    }
    for i, args in ipairs(cases) do
      local want, wr = ref:run(p, args)
      local g0, c0 = be:stats().graph_launches, computed()
      local got, gr = be:run(p, args)
      assert.are.equal(wr, gr, "rounds of case " .. i)
      assert.are.same(want.x:totable(), got.x:totable())
      assert.are.same(want.flag:totable(), got.flag:totable())
      -- one graph launch per round, and each replay computed the round's section
      assert.are.equal(wr, be:stats().graph_launches - g0)
      assert.are.equal(wr, computed() - c0)
    end
  end)

  it("records a round once per arguments and grid loop values, and reuses it", function()
    be:grid_sync("graph")
    local k = be:compile(vyre.parse(COUNTDOWN))
    local x, f = be:buffer("u32", { 5, 1, 2 }), be:buffer("u32", 1)
    local execs0 = F.live().execs
    k:launch({ x = x, flag = f, max = 100 })
    assert.are.equal(6, k:rounds())
    assert.are.same({ 0, 0, 0 }, x:download():totable())
    assert.are.equal("graph", (select(3, k:occupancy())))
    assert.are.equal(execs0 + 1, F.live().execs)
    x:upload({ 2, 2, 0 })
    k:launch({ x = x, flag = f, max = 100 }) -- same arguments: the recorded round
    assert.are.equal(3, k:rounds())
    assert.are.equal(execs0 + 1, F.live().execs)
    k:launch({ x = x, flag = f, max = 7 })   -- another param value: another recording
    assert.are.equal(1, k:rounds())
    assert.are.equal(execs0 + 2, F.live().execs)
    k:free()
    assert.are.equal(execs0, F.live().execs)
    x:free()
    f:free()

    -- a section before the loops, two sections per round, the loop variable k baked
    -- into each recording (three), rounds summed over the loop
    local p = vyre.parse(TWO)
    local args = { x = { 1, 7, 3, 0, 12, 5, 2, 9, 4, 4, 11, 0, 6, 1, 8, 3, 2 },
      y = vyre.array("u32", 17), flag = { 1 }, lim = 6 }
    local want, wr = ref:run(p, args)
    local g0 = be:stats().graph_launches
    local got, gr = be:run(p, args)
    assert.is_true(wr > 3)
    assert.are.equal(wr, gr)
    for _, name in ipairs({ "x", "y", "flag" }) do
      assert.are.same(want[name]:totable(), got[name]:totable(), name)
    end
    assert.are.equal(wr, be:stats().graph_launches - g0)
    -- the host split gives the same, with no graph launch
    be:grid_sync("split")
    g0 = be:stats().graph_launches
    local split, sr = be:run(p, args)
    assert.are.equal(wr, sr)
    assert.are.same(want.x:totable(), split.x:totable())
    assert.are.equal(g0, be:stats().graph_launches)
    be:grid_sync("auto")
  end)

  it("refuses a converge loop run on the host inside be:graph's capture, with a Fix", function()
    local k = be:compile(vyre.parse(COUNTDOWN))
    local x, f = be:buffer("u32", { 1, 2 }), be:buffer("u32", 1)
    for _, mode in ipairs({ "graph", "split" }) do
      be:grid_sync(mode)
      local ok, e = pcall(be.graph, be, { { k, { x = x, flag = f, max = 5 } } })
      assert.is_false(ok)
      e = tostring(e)
      assert.truthy(e:find("graph capture of 'gcount'", 1, true), e)
      assert.truthy(e:find('grid sync "' .. mode .. '"', 1, true), e)
      assert.truthy(e:find("Fix:", 1, true), e)
      -- the stream is usable afterwards: the same launch outside a graph computes
      k:launch({ x = x, flag = f, max = 5 })
      assert.are.same({ 0, 0 }, x:download():totable())
      x:upload({ 1, 2 })
    end
    be:grid_sync("auto")
    k:free()
    x:free()
    f:free()
  end)

  it("is chosen by opts.grid_sync and by a policy's plan.mode", function()
    local steps = function(b)
      local k = b:compile(vyre.parse(
        "(program gstep (workgroup 32) (buffer x u32 read_write) (buffer flag u32 read_write)"
        .. " (let i (gid x)) (if (lt i (len x)) (then (if (gt (load x i) 0u32) (then"
        .. " (store x i (sub (load x i) 1u32)) (store flag 0u32 1u32))))))"))
      local x, f = b:buffer("u32", { 3, 1, 4 }), b:buffer("u32", 1)
      return { { k, { x = x, flag = f }, { n = 3 } } }, f
    end
    local st, flag = steps(be)
    local plan = be:plan(st, { converge = { flag = flag, max = 10 }, grid_sync = "graph" })
    assert.are.equal("graph", plan.mode)
    assert.truthy(plan.reason:find("forced by opts.grid_sync", 1, true))
    assert.truthy(plan.reason:find("CUDA graph", 1, true))
    local policy = require("vyre.policy")
    local saved = policy.megakernel
    policy.megakernel = function() return { mode = "graph", reason = "test" } end
    local ok, res = pcall(be.plan, be, st, { converge = { flag = flag, max = 10 } })
    policy.megakernel = saved
    assert(ok, res)
    assert.are.equal("graph", res.mode)
    assert.truthy(res.reason:find("one graph launch + one flag readback per round", 1, true))
    local e = select(2, pcall(be.plan, be, st, { converge = { flag = flag, max = 10 },
      grid_sync = "graphs" }))
    assert.truthy(tostring(e):find('"graph"', 1, true))
    -- on the reference the mode is accepted and the interpreter runs the rounds
    local rst, rflag = steps(ref)
    assert.are.equal(5, ref:megakernel(rst, { converge = { flag = rflag, max = 10 },
      grid_sync = "graph" }))
    assert.are.same({ 0, 0, 0 }, rst[1][2].x:download():totable())
  end)

  it("survives every driver call of a graph-mode launch failing", function()
    F.control("set ptxas 0")
    -- the sweep's sticky faults lose the device: this file must not hold the old object
    be = nil
    collectgarbage()
    collectgarbage()
    local ok, calls = pcall(F.sweep, {
      name = "grid graph launch",
      prep = function(b)
        b:grid_sync("graph")
        local st = { k = b:compile(vyre.parse(COUNTDOWN)), x = b:buffer("u32", { 2, 1 }),
          f = b:buffer("u32", 1) }
        st.k:launch({ x = st.x, flag = st.f, max = 9 }) -- records (and probes) once
        st.x:upload({ 3, 1 })
        return st
      end,
      -- max = 8: another recording, then its replays
      run = function(_, st) st.k:launch({ x = st.x, flag = st.f, max = 8 }) return st end,
      check = function(_, st) assert.are.same({ 0, 0 }, st.x:download():totable()) end,
      release = function(st)
        st.k:free()
        st.x:free()
        st.f:free()
      end,
    })
    F.control("set ptxas 1")
    be = F.device()
    be:grid_sync("auto")
    assert(ok, calls)
    local got = " " .. table.concat(calls, " ") .. " "
    for _, c in ipairs({ "cuStreamBeginCapture", "cuLaunchKernel", "cuStreamEndCapture",
      "cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuMemcpyDtoHAsync" }) do
      assert.truthy(got:find(" " .. c .. " ", 1, true), "no " .. c .. ":" .. got)
    end
  end)
end)
