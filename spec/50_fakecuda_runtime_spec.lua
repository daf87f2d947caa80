-- 50: the CUDA runtime on the fake driver (#fakecuda; docs/RUNTIME.md "Fake driver"):
-- what spec 21 checks on a GPU, here on every commit without one. Device info,
-- buffers and byte ranges, run / compile / launch, the three cache levels (the disk
-- level across processes), out of memory, sequences, graphs, timing, limits, deferred
-- __gc errors, and nothing alive at the end. Launches compute because the programs are
-- registered with the fake (it runs them on the reference interpreter); the fake's own
-- counters check that the runtime never misuses a handle.
local vyre = require("vyre")
local F = require("tests.fakecuda.harness")
local H = require("spec.helpers")

local available, why = F.available()

local SAXPY = H.saxpy_text
-- The fake device's SM (VYRE_FAKECUDA_SM: scripts/test.sh runs these specs at several).
local SM = available and tonumber(F.control("config"):match("sm=(%d+)"))

-- Runs Lua code in a child process with the same paths and extra environment.
local function child(env, code, stdin)
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "w"))
  f:write(stdin or "")
  f:close()
  local cmd = string.format("%s LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q < %q 2>&1", env,
    package.path, package.cpath, code, tmp)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  os.remove(tmp)
  return out
end

describe("cuda runtime on the fake driver #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  local cuda, be

  setup(function()
    cuda = require("vyre.cuda")
    be = F.device()
  end)

  teardown(function()
    be = nil
    assert.are.same({}, H.leftovers(F.device()))
    local live = F.live()
    assert.are.equal(0, live.mem)
    assert.are.equal(0, live.modules)
    assert.are.equal(0, live.links)
    assert.are.equal(0, (F.misuse()))
  end)

  it("is loaded through VYRE_LIBCUDA and reports the fake device's capabilities", function()
    assert.is_true((cuda.available()))
    assert.are.equal("cuda", vyre.backend().name)
    local info = be:info()
    assert.are.equal(("vyre fakecuda 0 (sm_%d)"):format(SM), info.name)
    assert.are.equal(SM, info.sm)
    assert.are.equal(4, info.sms)
    assert.are.equal(1 << 30, info.memory_bytes)
    assert.are.equal(1024, info.max_threads_per_block)
    assert.are.same({ 1024, 1024, 64 }, info.max_block)
    assert.are.equal(65535, info.max_grid[2])
    assert.is_true(info.l2_bytes > 0)
    assert.are.equal(12080, info.driver_version)
    assert.is_true(info.cooperative_launch)
    -- a device SM the target table lacks runs the highest target the driver loads below it
    local as = info.target ~= ("sm_%d"):format(SM) and (" as " .. info.target) or ""
    assert.are.equal(("vyre.Backend(cuda 0: vyre fakecuda 0 (sm_%d), sm_%d%s)"):format(SM, SM, as),
      tostring(be))
  end)

  it("uploads and downloads whole buffers and ranges", function()
    local b <close> = be:buffer("u32", 8)
    assert.are.equal(8, #b)
    b:upload({ 1, 2, 3, 4, 5, 6, 7, 8 })
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, b:download():totable())
    b:upload(vyre.array("u32", { 70, 80 }), { first = 3 })
    assert.are.same({ 70, 80, 5 }, b:download({ first = 3, count = 3 }):totable())
    assert.are.same({ 70, 80 }, b:download({ byte_offset = 8, nbytes = 8 }):totable())
    local f = be:buffer("f64", { 1.5, -2.25 })
    assert.are.same({ 1.5, -2.25 }, f:download():totable())
    f:free()
    f:free()
    assert.has_error(function() f:download() end)
    local ok, err = pcall(b.upload, b, { 1, 2 }, { byte_offset = 28 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("outside", 1, true) and tostring(err):find("Fix:", 1, true))
  end)

  it("starts a buffer made from a count zeroed (fresh fake memory is not)", function()
    local ones = {}
    for i = 1, 1000 do ones[i] = 0xffffffff end
    for _ = 1, 3 do
      local b = be:buffer("u32", 1000)
      assert.are.equal(0, b:download():bytes():gsub("\0", ""):len())
      b:upload(ones) -- leave non-zero memory behind for the next allocation
      b:free()
    end
  end)

  it("runs a program with host data bit-identically to the reference", function()
    local p = vyre.parse(SAXPY)
    local x, y = {}, {}
    for i = 1, 1000 do x[i], y[i] = i * 0.5, 1000 - i end
    H.parity_run(H.ref(), be, p, { x = x, y = y, a = 1.25 }, nil, "fake saxpy")
    local computed = F.control("launches")
    assert.truthy(computed:find("^computed=%d+"), computed)
  end)

  it("compiles to a kernel with ptx and info, and launches on resident buffers", function()
    local k = be:compile(vyre.parse(H.INC))
    assert.truthy(k.ptx:find(".entry inc", 1, true))
    local info = k:info()
    assert.is_true(info.registers > 0)
    assert.are.equal(64, info.max_threads) -- the PTX's .maxntid
    local v = be:buffer("u32", { 1, 2, 3 })
    for _ = 1, 10 do k:launch({ v = v }) end
    assert.are.same({ 11, 12, 13 }, v:download():totable())
    local t = k:launch_timed({ v = v })
    assert.is_true(t.wall_ns > 0 and t.device_ns > 0 and t.enqueue_ns >= 0)
    local ok, err = pcall(k.launch, k, { v = v, nope = 1 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown argument 'nope'", 1, true), err)
  end)

  it("hits the PTX and module caches on a second compile", function()
    local s0 = be:stats()
    local k1 = be:compile(vyre.parse(H.INC))
    local k2 = be:compile(vyre.parse(H.INC))
    local s1 = be:stats()
    assert.is_true(s1.ptx_hits >= s0.ptx_hits + 1)
    assert.is_true(s1.module_hits >= s0.module_hits + 1)
    k1:free()
    k2:free()
  end)

  it("a second process loads the cubin from disk without JIT", function()
    local dir = os.tmpname()
    os.remove(dir)
    local code = [[
      local vyre = require('vyre')
      local F = require('tests.fakecuda.harness')
      assert(F.available())
      local text = io.read('a')
      local be = F.device()
      local out = be:run(vyre.parse(text), {v = {1, 2, 3}})
      local s = be:stats()
      print(s.disk_hits, s.disk_misses, s.jit_compiles, table.concat(out.v:totable(), ','))]]
    local text = H.INC:gsub("1u32", "2u32")
    local env = string.format("VYRE_CACHE_DIR=%q", dir)
    assert.are.equal("0\t1\t1\t3,4,5\n", child(env, code, text))
    assert.are.equal("1\t0\t0\t3,4,5\n", child(env, code, text))
    os.execute("rm -rf " .. dir)
  end)

  it("on out of memory collects garbage once and retries, then fails with sizes and a Fix",
    function()
      collectgarbage()
      be:trim()
      local used = F.live().mem_bytes
      F.control("set memory " .. (used + (1 << 20)))
      local before = be:stats().oom_retries
      collectgarbage("stop")
      for _ = 1, 3 do assert.are.equal(100000, #be:buffer("u32", 100000)) end -- 400 KB each
      collectgarbage("restart")
      assert.is_true(be:stats().oom_retries > before)
      collectgarbage()
      local held = {}
      local ok, err = pcall(function()
        for i = 1, 3 do held[i] = be:buffer("u32", 100000) end
      end)
      F.control("set memory " .. (1 << 30))
      assert.is_false(ok)
      err = tostring(err)
      assert.truthy(err:find("out of device memory allocating 400000 bytes", 1, true), err)
      assert.truthy(err:find("Fix:", 1, true), err)
      for _, b in ipairs(held) do b:free() end
      assert.is_false(be:lost())
      assert.is_true(F.usable(be))
    end)

  it("binds arguments once: l:launch() and l() relaunch, a freed buffer is caught", function()
    local k = be:compile(vyre.parse(H.INC))
    local v = be:buffer("u32", { 1, 2, 3 })
    local l = k:bind({ v = v })
    local before = be:stats().launches
    for _ = 1, 5 do l:launch() end
    l()
    assert.are.same({ 7, 8, 9 }, v:download():totable())
    assert.are.equal(before + 6, be:stats().launches)
    v:free()
    local ok, err = pcall(l.launch, l)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("was freed", 1, true), err)
    l:free()
  end)

  it("runs sequences: a prefix once, a group N times, ranged readback, one sync", function()
    local iota = be:compile(vyre.parse(H.IOTA))
    local inc = be:compile(vyre.parse(H.INC))
    local v = be:buffer("u32", 100)
    local s0 = be:stats()
    local res = be:sequence({ { iota, { v = v } }, { inc, { v = v } } },
      { prefix = 1, times = 5, readback = { { v, 11, 3 }, v } })
    assert.are.same({ 15, 16, 17 }, res[1]:totable())
    assert.are.equal(99 + 5, res[2][100])
    local s1 = be:stats()
    assert.are.equal(s0.syncs + 1, s1.syncs)
    assert.are.equal(s0.launches + 6, s1.launches)
    local _, t = be:sequence({ { inc, { v = v } } }, { times = 3, timed = true })
    assert.is_true(t.wall_ns >= t.wait_ns and t.device_ns > 0)
  end)

  it("captures a sequence into a graph (arguments by value) and replays it", function()
    local inc = be:compile(vyre.parse(H.INC))
    local v = be:buffer("u32", { 0, 0, 0, 0 })
    local g = be:graph({ { inc, { v = v } }, { inc, { v = v } } })
    assert.are.same({ 0, 0, 0, 0 }, v:download():totable()) -- captured, not run
    g:launch(10)
    assert.are.same({ 20, 20, 20, 20 }, v:download():totable())
    local t = g:launch(5, true)
    assert.is_true(t.wall_ns > 0 and t.device_ns > 0)
    assert.are.same({ 30, 30, 30, 30 }, v:download():totable())
    g:free()
  end)

  it("refuses geometry beyond the device limits before launch, naming the limit", function()
    local k = be:compile(vyre.parse(H.INC))
    local v = be:buffer("u32", 4)
    local ok, err = pcall(k.launch, k, { v = v }, { grid = { 1, 70000, 1 } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("grid y", 1, true), err)
    local raw = be:load_ptx(".version 7.0\n.target sm_70\n.address_size 64\n"
      .. ".visible .entry nop()\n{\n  ret;\n}\n", "nop")
    ok, err = pcall(raw.launch_raw, raw, { 1 }, { 2048 }, {})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("workgroup x", 1, true), err)
    assert.is_false(be:lost())
  end)

  it("reports an error recorded during __gc at the next call", function()
    require("vyre.core").testing.defer_error(be, "cuMemFree failed: test")
    local ok, err = pcall(be.synchronize, be)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("earlier release", 1, true), err)
    assert.is_true(be:synchronize())
  end)

  it("follows the device's configuration: SM, cooperative launch, device count", function()
    local code = [[
      local cuda = require('vyre.cuda')
      local be = assert(cuda.device(0))
      local info = be:info()
      local k = be:compile(require('vyre').parse(io.read('a')))
      print(cuda.count(), info.sm, info.cooperative_launch, k.ptx:match('%.target (sm_%d+)'))]]
    local out = child("VYRE_FAKECUDA_SM=90 VYRE_FAKECUDA_COOPERATIVE=0 VYRE_FAKECUDA_DEVICES=3",
      code, H.INC)
    assert.are.equal("3\t90\tfalse\tsm_90\n", out)
  end)

  it("says it is the fake driver: be:info().fake (spec 51: `vyre info` too)", function()
    assert.is_true(be:info().fake)
    assert.is_false(vyre.backend("reference"):info().fake == true)
  end)

  it("refuses to launch foreign PTX, saying why, unless a test opts in", function()
    local raw = be:load_ptx(".version 7.0\n.target sm_70\n.address_size 64\n"
      .. ".visible .entry touch(.param .u64 p)\n{\n  ret;\n}\n", "touch")
    local v = be:buffer("u32", 4)
    local n0 = F.launches()
    local ok, err = pcall(raw.launch_raw, raw, { 1 }, { 32 }, { v })
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("CUDA_ERROR_NOT_SUPPORTED", 1, true), err)
    assert.truthy(err:find("cannot run kernel 'touch': its PTX has no '// vyre.program' block",
      1, true), err)
    assert.truthy(err:find("set foreign 1", 1, true), err)
    assert.are.equal(n0.refused + 1, F.launches().refused)
    assert.is_false(be:lost()) -- a refusal, not a fault
    F.foreign(true)
    finally(function() F.foreign(false) end)
    raw:launch_raw({ 1 }, { 32 }, { v })
    be:synchronize()
    assert.are.equal(n0.skipped + 1, F.launches().skipped)
    raw:free()
  end)

  it("loads vyre PTX whose program block is damaged only with the reason", function()
    local k = be:compile(vyre.parse(H.INC))
    local bad = k.ptx:gsub("%(buffer v u32 read_write%)", "(buffer v u33 read_write)")
    local ok, err = pcall(be.load_ptx, be, bad, "inc")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("vyre.program block cannot be read", 1, true), err)
  end)

  it("computes the vector entry (NAME_v4, vyre_vn) from the program the PTX carries", function()
    local p = vyre.parse(SAXPY)
    local k = be:compile(p)
    assert.truthy(k.ptx:find("// vyre.entry saxpy_v4 vector", 1, true))
    local n = 5000
    local x, y = {}, {}
    for i = 1, n do x[i], y[i] = i * 0.25, n - i end
    local s0 = be:stats()
    H.parity_run(H.ref(), be, p, { x = x, y = y, a = -2.5 }, nil, "fake saxpy_v4")
    assert.is_true(be:stats().vector_launches > s0.vector_launches)
  end)

  it("computes random programs as the reference does (the optimised text the PTX carries)",
    function()
      -- the fake interprets the program the emitter optimised, so this also checks the
      -- optimiser's passes against the reference through the runtime (spec 22 on a GPU).
      -- scripts/test.sh runs this spec again on six other SMs (VYRE_FAKECUDA_SM), where it
      -- checks each SM's target: there the first 30 seeds (VYRE_FULL=1: all 150).
      local other_sm = os.getenv("VYRE_FAKECUDA_SM") and os.getenv("VYRE_FULL") ~= "1"
      for seed = 1, other_sm and 30 or 150 do
        local p = vyre.random_program(seed, { allow_barriers = seed % 3 == 0,
          allow_subgroup = seed % 4 == 0 })
        H.parity_run(H.ref(), be, p, H.random_inputs(p, seed, 100), { n = 100 },
          "random_program(" .. seed .. ")")
      end
    end)

  it("computes the cooperative grid kernel and the host-split sections alike", function()
    local text = [[
(program countdown (workgroup 32)
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (param max u32)
  (converge flag max
    (let i (gid x))
    (if (lt i (len x))
      (then
        (if (gt (load x i) 0u32)
          (then
            (store x i (sub (load x i) 1u32))
            (store flag 0u32 1u32)))))))]]
    local p = vyre.parse(text)
    local args = { x = { 3, 0, 1, 5, 2, 0, 4, 1, 9, 7 }, flag = { 7 }, max = 100 }
    local want, wr = H.ref():run(p, args)
    finally(function() be:grid_sync("auto") end)
    for _, mode in ipairs({ "cooperative", "split", "graph" }) do
      be:grid_sync(mode)
      local got, gr = be:run(p, args)
      assert.are.equal(wr, gr, mode .. " rounds")
      assert.are.same(want.x:totable(), got.x:totable(), mode)
    end
    local k = be:compile(p)
    assert.truthy(k.ptx:find("// vyre.entry countdown grid", 1, true))
  end)
end)
