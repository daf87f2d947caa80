-- 101: fault injection over the fake NCCL and the fake driver (#fakecuda, 4 fake devices;
-- issue 26 §6): group collectives, all_to_all, g:sequence steps and peer copies. Each
-- NCCL call an operation makes is failed in turn (fakecuda.nccl "fail N:R": returned at
-- once) and made to fail asynchronously ("async N:R": reported by
-- ncclCommGetAsyncError), with the results NCCL can give; each driver call of a peer
-- copy is failed too (tests/fakecuda/harness.lua). After each case: the error names the
-- failed call (or the asynchronous error) with a Fix, the Lua state works, a new group
-- computes, and the fake driver's live objects are back at their baseline.
-- Runs in scripts/test.sh's NCCL pass (VYRE_FAKECUDA_DEVICES=4, VYRE_LIBNCCL=fake).
local F = require("tests.fakecuda.harness")

local available, why = F.available()
local nccl_lib = os.getenv("VYRE_LIBNCCL") or ""
if available and not nccl_lib:find("fakenccl/libnccl.so.2", 1, true) then
  available, why = false, "needs VYRE_LIBNCCL=build/fakenccl/libnccl.so.2 (scripts/test.sh sets it)"
end

-- ncclResult_t values the fake returns: the failures a real NCCL reports.
local RESULTS = { { 1, "ncclUnhandledCudaError" }, { 2, "ncclSystemError" },
  { 3, "ncclInternalError" }, { 5, "ncclInvalidUsage" }, { 6, "ncclRemoteError" } }

describe("fault injection: NCCL groups and peer copies #fakecuda", function()
  if not available then
    it("needs the fake driver and the fake NCCL", function() pending(why) end)
    return
  end
  local cuda = require("vyre.cuda")
  local nccl
  setup(function()
    nccl = package.loadlib((os.getenv("VYRE_BUILD_DIR") or "build") .. "/fakecuda/fakecuda.so",
      "luaopen_fakecuda")().nccl
  end)

  local function live_now()
    collectgarbage()
    collectgarbage()
    for i = 0, 3 do pcall(cuda.device(i).synchronize, cuda.device(i)) end
    for i = 0, 3 do pcall(cuda.device(i).trim, cuda.device(i)) end
    local l = F.live()
    local pool = 0
    for i = 0, 3 do pool = pool + cuda.device(i):stats().pool_bytes end
    return { mem = l.mem, dev_bytes = l.mem_bytes - pool, streams = l.streams,
      events = l.events, modules = l.modules, graphs = l.graphs, execs = l.execs }
  end

  -- A group works: all_reduce of {r + 1} over 2 ranks gives 3 on each.
  local function group_works()
    local g = cuda.group({ 0, 1 })
    local b = { g.backends[1]:buffer("f32", { 1 }), g.backends[2]:buffer("f32", { 2 }) }
    g:all_reduce(b)
    local ok = b[1]:download():totable()[1] == 3 and b[2]:download():totable()[1] == 3
    b[1]:free()
    b[2]:free()
    g:free()
    return ok
  end

  -- The operations, each on a fresh 2-rank group it opens itself (so init is swept too).
  local OPS = {
    { name = "group open + all_reduce", run = function(st)
        st.g = cuda.group({ 0, 1 })
        local be1, be2 = st.g.backends[1], st.g.backends[2]
        st.b = { be1:buffer("f32", { 1, 2 }), be2:buffer("f32", { 3, 4 }) }
        st.g:all_reduce(st.b)
        st.g:synchronize()
      end },
    { name = "broadcast, all_gather, reduce_scatter", prep = true, run = function(st)
        local g = st.g
        local a = { g.backends[1]:buffer("u32", { 1, 2 }), g.backends[2]:buffer("u32", { 3, 4 }) }
        local o = { g.backends[1]:buffer("u32", 4), g.backends[2]:buffer("u32", 4) }
        local rs = { g.backends[1]:buffer("u32", 1), g.backends[2]:buffer("u32", 1) }
        st.b = { a[1], a[2], o[1], o[2], rs[1], rs[2] }
        g:broadcast(a, 1)
        g:all_gather(a, o)
        g:reduce_scatter(a, rs)
        g:synchronize()
      end },
    { name = "all_to_all and g:sequence with a collective step", prep = true, run = function(st)
        local g = st.g
        local a = { g.backends[1]:buffer("u32", { 1, 2 }), g.backends[2]:buffer("u32", { 3, 4 }) }
        local o = { g.backends[1]:buffer("u32", 2), g.backends[2]:buffer("u32", 2) }
        st.b = { a[1], a[2], o[1], o[2] }
        g:all_to_all(a, o)
        local steps = g:collective("all_reduce", o)
        g:sequence({ { steps[1] }, { steps[2] } }, { times = 2 })
      end },
  }

  local function open_group(st)
    st.g = cuda.group({ 0, 1 })
  end

  local function release(st)
    for _, b in ipairs(st.b or {}) do pcall(b.free, b) end
    if st.g then pcall(st.g.free, st.g) end
  end

  local cases = 0
  for _, op in ipairs(OPS) do
    it(op.name .. ": each NCCL call failed, at once and asynchronously", function()
      -- A clean run counts the calls.
      local st = {}
      if op.prep then open_group(st) end
      local c0 = nccl("calls")
      op.run(st)
      local ncalls = nccl("calls") - c0
      release(st)
      assert.is_true(ncalls > 0, "the operation made no NCCL call")
      local base = live_now()
      for k = 1, ncalls do
        for _, r in ipairs(RESULTS) do
          for _, mode in ipairs({ "fail", "async" }) do
            local what = ("%s: call %d of %d, %s %s"):format(op.name, k, ncalls, mode, r[2])
            st = {}
            if op.prep then open_group(st) end
            local fired0 = nccl("async_fired")
            nccl(("%s %d:%d"):format(mode, k, r[1]))
            local ok, err = pcall(op.run, st)
            nccl("clear")
            local async_fired = nccl("async_fired") > fired0
            if ok and async_fired and st.g then
              -- An asynchronous failure after the operation's last wait: the next wait
              -- must raise it.
              ok, err = pcall(st.g.synchronize, st.g)
              if ok then error(what .. ": the asynchronous failure was lost: nothing raised it") end
            end
            if not ok then
              err = tostring(err)
              assert.truthy(err:find("Fix:", 1, true), what .. ": no Fix: " .. err)
              assert.truthy(err:find("^[^:]*:?%d*:? ?vyre[%.%w_]*[:%.][%w_]+: ") or
                err:find("vyre%.[%w_]+[:%.][%w_]+: "), what .. ": no function name: " .. err)
              assert.truthy(err:find("nccl", 1, true) or err:find(r[2], 1, true),
                what .. ": the error names no NCCL call: " .. err)
            elseif mode == "fail" then
              -- A failed call is raised; only an asynchronous one that came after the
              -- last wait may go unreported by this run (it is reported at the next).
              error(what .. ": the failure was lost: nothing raised it")
            end
            release(st)
            cases = cases + 1
            assert.is_true(group_works(), what .. ": a new group does not compute afterwards")
            local after = live_now()
            for key, v in pairs(base) do
              assert.are.equal(v, after[key], what .. ": leaked " .. key)
            end
            local n, last = F.misuse()
            assert.are.equal(0, n, what .. ": the runtime misused the driver: " .. tostring(last))
          end
        end
      end
      if os.getenv("VYRE_FAKECUDA_VERBOSE") == "1" then
        io.stderr:write(("nccl sweep %s: %d calls, %d cases so far\n"):format(op.name, ncalls,
          cases))
      end
    end)
  end

  it("g:free(): a failed finalise or destroy is raised at the device's next call", function()
    local g = cuda.group({ 0, 1 })
    local c0 = nccl("calls")
    g:free()
    local ncalls = nccl("calls") - c0
    assert.is_true(ncalls > 0, "g:free made no NCCL call")
    local base = live_now()
    for k = 1, ncalls do
      g = cuda.group({ 0, 1 })
      nccl(("fail %d:%d"):format(k, 2))
      local ok, err = pcall(g.free, g)
      nccl("clear")
      assert.is_true(ok, "g:free itself raises nothing: " .. tostring(err))
      -- the failure went to a device's deferred error: the next call there raises it
      local raised = {}
      for i = 0, 1 do
        local sok, serr = pcall(cuda.device(i).synchronize, cuda.device(i))
        if not sok then raised[#raised + 1] = tostring(serr) end
      end
      assert.are.equal(1, #raised, ("call %d of %d: one device raises"):format(k, ncalls))
      assert.truthy(raised[1]:find("ncclComm", 1, true), raised[1])
      assert.truthy(raised[1]:find("Fix:", 1, true), raised[1])
      assert.is_true(group_works(), "a new group computes afterwards")
      local after = live_now()
      for key, v in pairs(base) do assert.are.equal(v, after[key], "leaked " .. key) end
    end
  end)

  it("a peer copy: each driver call failed in turn", function()
    F.sweep_covers({
      name = "peer copy",
      no_sticky = true,
      -- peer access is asked once per device pair: ask it before the trace
      shared = function(be)
        local x, y = be:buffer("u32", 1), cuda.device(1):buffer("u32", 1)
        x:copy_to(y)
        x:free()
        y:free()
      end,
      prep = function(be)
        return { x = be:buffer("u32", { 5, 6, 7 }), y = cuda.device(1):buffer("u32", 3) }
      end,
      run = function(_, st)
        st.x:copy_to(st.y)
        cuda.device(1):synchronize()
      end,
      check = function(_, st) assert.are.same({ 5, 6, 7 }, st.y:download():totable()) end,
      release = function(st) st.x:free(); st.y:free() end,
    }, {})
  end)
end)
