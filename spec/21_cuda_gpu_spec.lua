-- 21: the CUDA runtime on a GPU (#gpu: excluded where CUDA is not usable, and then
-- reported as not run, never as passed): device info, buffers and byte ranges,
-- run / compile / launch, the three cache levels (the disk level across processes),
-- sequences, graphs, timing, limits, device loss and recovery, deferred __gc errors,
-- and no live buffers/kernels/modules after collectgarbage() at the end.
local vyre = require("vyre")
local H = require("spec.helpers")

local SAXPY = [[
(program saxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y))
    (then (store y i (add (mul a (load x i)) (load y i))))))]]

local INC, IOTA = H.INC, H.IOTA

-- An out-of-range write on purpose: stores to address 0 (the device faults).
local BAD_PTX = [[
.version 7.0
.target sm_70
.address_size 64
.visible .entry bad(.param .u64 p)
{
  .reg .u64 %rd<2>;
  .reg .u32 %r<2>;
  mov.u64 %rd1, 0;
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
]]

local function cuda_mod() return require("vyre.cuda") end

describe("cuda runtime #gpu", function()
  local cuda, be

  setup(function()
    cuda = cuda_mod()
    be = assert(cuda.device(0))
  end)

  teardown(function()
    be = nil
    assert.are.same({}, H.leftovers(cuda.device(0)))
  end)

  it("reports device capabilities", function()
    local info = be:info()
    assert.are.equal("cuda", be.name)
    assert.is_true(#info.name > 0)
    assert.is_true(info.sm >= 70)
    assert.is_true(info.sms > 0)
    assert.is_true(info.memory_bytes > 0)
    assert.is_true(info.max_threads_per_block >= 1024)
    assert.are.equal(3, #info.max_block)
    assert.is_true(info.max_grid[1] >= 65535)
    assert.is_true(info.l2_bytes > 0)
    assert.is_true(info.driver_version >= 12000)
    assert.are.equal("boolean", type(info.cooperative_launch))
  end)

  it("uploads and downloads whole buffers and ranges", function()
    local b <close> = be:buffer("u32", 8)
    assert.are.equal(8, #b)
    assert.are.equal("u32", b.type)
    b:upload({ 1, 2, 3, 4, 5, 6, 7, 8 })
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, b:download():totable())
    b:upload(vyre.array("u32", { 70, 80 }), { first = 3 })
    assert.are.same({ 70, 80, 5 }, b:download({ first = 3, count = 3 }):totable())
    assert.are.same({ 70, 80 }, b:download({ byte_offset = 8, nbytes = 8 }):totable())
    local f = be:buffer("f64", { 1.5, -2.25 })
    assert.are.same({ 1.5, -2.25 }, f:download():totable())
    f:free()
    f:free() -- idempotent
    assert.has_error(function() f:download() end)
  end)

  it("refuses byte ranges outside the buffer with a clear error", function()
    local b = be:buffer("u32", 4)
    local ok, err = pcall(b.upload, b, { 1, 2 }, { byte_offset = 12 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("outside", 1, true), err)
    assert.truthy(tostring(err):find("Fix:", 1, true), err)
    ok, err = pcall(b.download, b, { byte_offset = 8, nbytes = 16 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("outside", 1, true), err)
    b:free()
  end)

  it("runs a program with host data (one sync) like the reference", function()
    local p = H.parse(SAXPY, "cuda saxpy")
    local x, y = {}, {}
    for i = 1, 1000 do x[i], y[i] = i * 0.5, 1000 - i end
    local got = be:run(p, { x = x, y = y, a = 1.25 })
    local want = vyre.backend("reference"):run(p, { x = x, y = y, a = 1.25 })
    assert.are.equal(want.y:bytes(), got.y:bytes())
  end)

  it("compiles to a kernel with ptx and info, and launches on resident buffers", function()
    local p = H.parse(INC, "cuda inc")
    local k = be:compile(p)
    assert.truthy(k.ptx:find(".entry", 1, true))
    local info = k:info()
    assert.is_true(info.registers > 0)
    assert.is_true(info.max_threads >= 64)
    local v = be:buffer("u32", { 1, 2, 3 })
    for _ = 1, 10 do k:launch({ v = v }) end
    assert.are.same({ 11, 12, 13 }, v:download():totable())
    local t = k:launch_timed({ v = v })
    assert.is_true(t.wall_ns > 0 and t.device_ns >= 0 and t.enqueue_ns >= 0)
    assert.are.same({ 12, 13, 14 }, v:download():totable())
    local ok, err = pcall(k.launch, k, { v = v, nope = 1 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown argument 'nope'", 1, true), err)
  end)

  it("hits the PTX and module caches on a second compile", function()
    local p = vyre.parse(INC)
    local s0 = be:stats()
    local k1 = be:compile(p)
    local k2 = be:compile(vyre.parse(INC))
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
      local be = assert(require('vyre.cuda').device(0))
      local p = vyre.parse(io.read('a'))
      local out = be:run(p, {v = {1, 2, 3}})
      local s = be:stats()
      print(s.disk_hits, s.disk_misses, s.jit_compiles, table.concat(out.v:totable(), ','))]]
    local function run()
      local tmp = os.tmpname()
      local f = assert(io.open(tmp, "w"))
      f:write(INC .. "\n; unique " .. dir .. "\n")
      f:close()
      local cmd = string.format("LUA_PATH=%q LUA_CPATH=%q VYRE_CACHE_DIR=%q lua5.4 -e %q < %q",
        package.path, package.cpath, dir, code, tmp)
      local p = assert(io.popen(cmd))
      local out = p:read("a")
      p:close()
      os.remove(tmp)
      return out
    end
    local first = run()
    assert.are.equal("0\t1\t1\t2,3,4\n", first)
    local second = run()
    assert.are.equal("1\t0\t0\t2,3,4\n", second)
    os.execute("rm -rf " .. dir)
  end)

  it("on out of memory collects garbage once and retries, then fails with sizes "
    .. "and a Fix", function()
    local n = 0xffffffff -- the most elements a buffer may hold: 32 GiB of f64
    local count = math.ceil(be:info().memory_bytes / (n * 8)) + 1
    local before = be:stats().oom_retries
    -- Dropped without free(): only the out-of-memory protocol's full GC reclaims them. The
    -- collector is stopped so that no ordinary step reclaims them first (the protocol's
    -- explicit full collection still runs).
    collectgarbage("stop")
    for _ = 1, count do
      local b = be:buffer("f64", n)
      assert.are.equal(n, #b)
    end
    collectgarbage("restart")
    assert.is_true(be:stats().oom_retries > before)
    collectgarbage()
    local held = {}
    local ok, err = pcall(function()
      for i = 1, count do held[i] = be:buffer("f64", n) end
    end)
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("out of device memory", 1, true), err)
    assert.truthy(err:find("bytes", 1, true) and err:find("Fix:", 1, true), err)
    for _, b in ipairs(held) do b:free() end
    held = nil -- luacheck: ignore 331 (drops the last references before collectgarbage())
    collectgarbage()
    assert.is_false(be:lost())
    assert.are.same({ 2, 3 }, be:run(vyre.parse(INC), { v = { 1, 2 } }).v:totable())
  end)

  it("runs the out-of-memory collection on the main thread, whichever coroutine allocated "
    .. "last (regression: a collected coroutine's state was used)", function()
    local n = 0xffffffff -- 32 GiB of f64
    local count = math.ceil(be:info().memory_bytes / (n * 8)) + 1
    -- A coroutine allocates (and keeps nothing), then is collected.
    local co = coroutine.create(function() return #be:buffer("u32", 16) end)
    assert.is_true((coroutine.resume(co)))
    co = nil -- luacheck: ignore 311
    collectgarbage()
    collectgarbage()
    local before = be:stats().oom_retries
    -- Now run out of memory from the main thread and from a new coroutine: the
    -- collection reclaims the dropped buffers, and nothing touches the dead coroutine.
    -- (The collector is stopped so that only the out-of-memory protocol reclaims them.)
    collectgarbage("stop")
    for _ = 1, count do
      local b = be:buffer("f64", n)
      assert.are.equal(n, #b)
    end
    local co2 = coroutine.wrap(function()
      for _ = 1, count do assert.are.equal(n, #be:buffer("f64", n)) end
      return true
    end)
    assert.is_true(co2())
    collectgarbage("restart")
    assert.is_true(be:stats().oom_retries > before)
    collectgarbage()
    assert.is_false(be:lost())
  end)

  it("starts a buffer made from a count zeroed, as the reference backend does", function()
    for _ = 1, 3 do
      local b = be:buffer("u32", 1000)
      assert.are.equal(0, b:download():bytes():gsub("\0", ""):len())
      local ones = {}
      for i = 1, 1000 do ones[i] = 0xffffffff end
      b:upload(ones) -- leave non-zero memory behind for the next allocation
      b:free()
    end
  end)

  it("binds arguments once: l:launch() and l() relaunch, a freed buffer is caught", function()
    local k = be:compile(vyre.parse(INC))
    local v = be:buffer("u32", { 1, 2, 3 })
    local l = k:bind({ v = v })
    local before = be:stats().launches
    for _ = 1, 5 do l:launch() end
    l()
    assert.are.same({ 7, 8, 9 }, v:download():totable())
    assert.are.equal(before + 6, be:stats().launches)
    assert.truthy(tostring(l):find("vyre.Launch(cuda", 1, true))
    v:free()
    local ok, err = pcall(l.launch, l)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("was freed", 1, true), err)
    l:free()
    l:free() -- idempotent
  end)

  it("runs sequences: a prefix once, a group N times, ranged readback, one sync", function()
    local iota = be:compile(vyre.parse(IOTA))
    local inc = be:compile(vyre.parse(INC))
    local v = be:buffer("u32", 100)
    local s0 = be:stats()
    local res = be:sequence({ { iota, { v = v } }, { inc, { v = v } } },
      { prefix = 1, times = 5, readback = { { v, 11, 3 }, v } })
    assert.are.same({ 15, 16, 17 }, res[1]:totable())
    assert.are.equal(100, #res[2])
    assert.are.equal(99 + 5, res[2][100])
    local s1 = be:stats()
    assert.are.equal(s0.syncs + 1, s1.syncs)
    assert.are.equal(s0.launches + 6, s1.launches)
    local _, t = be:sequence({ { inc, { v = v } } }, { times = 3, timed = true })
    assert.is_true(t.wall_ns >= t.wait_ns)
  end)

  it("captures a sequence into a CUDA graph and replays it", function()
    local inc = be:compile(vyre.parse(INC))
    local v = be:buffer("u32", { 0, 0, 0, 0 })
    local g = be:graph({ { inc, { v = v } }, { inc, { v = v } } })
    g:launch(10)
    assert.are.same({ 20, 20, 20, 20 }, v:download():totable())
    local t = g:launch(5, true)
    assert.is_true(t.wall_ns > 0)
    assert.are.same({ 30, 30, 30, 30 }, v:download():totable())
    g:free()
  end)

  it("refuses geometry beyond the device limits before launch, naming the limit", function()
    local k = be:compile(vyre.parse(INC))
    local v = be:buffer("u32", 4)
    local ok, err = pcall(k.launch, k, { v = v }, { grid = { 1, 70000, 1 } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("grid y", 1, true), err)
    local raw = be:load_ptx(BAD_PTX, "bad")
    ok, err = pcall(raw.launch_raw, raw, { 1 }, { 2048 }, { 0 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("workgroup x", 1, true) or
      tostring(err):find("threads per workgroup", 1, true), err)
    assert.is_false(be:lost())
  end)

  it("reports an error recorded during __gc at the next call", function()
    require("vyre.core").testing.defer_error(be, "cuMemFree failed: test")
    local ok, err = pcall(be.synchronize, be)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("earlier release", 1, true), err)
    assert.is_true(be:synchronize()) -- reported once
  end)

  it("marks the device lost after a fault, raises the cause on every later call, "
    .. "and a new process works", function()
    -- The fault runs in a child process: the driver keeps an illegal-address fault
    -- sticky for the whole process (cuDevicePrimaryCtxReset does not clear it, as
    -- measured on an H200 with driver 580), so it must not poison this busted run.
    local code = [=[
      local vyre = require('vyre')
      local cuda = require('vyre.cuda')
      local be = assert(cuda.device(0))
      local raw = be:load_ptx(io.read('a'), 'bad')
      raw:launch_raw({1}, {1}, {0})
      local ok, err = pcall(be.synchronize, be)
      print('sync', ok, tostring(err):find('CUDA_ERROR_ILLEGAL_ADDRESS', 1, true) ~= nil)
      print('lost', be:lost())
      ok, err = pcall(be.buffer, be, 'u32', 4)
      print('later', ok, tostring(err):find('CUDA_ERROR_ILLEGAL_ADDRESS', 1, true) ~= nil)
      ok, err = pcall(be.run, be,
        vyre.parse('(program z (workgroup 1) (buffer v u32 write 1))'), {})
      print('run', ok, tostring(err):find('CUDA_ERROR_ILLEGAL_ADDRESS', 1, true) ~= nil)
      local again, why = cuda.device(0)
      print('reopen', again == nil, tostring(why):find('restart the process', 1, true) ~= nil)
    ]=]
    local function child(src, stdin)
      local tmp = os.tmpname()
      local f = assert(io.open(tmp, "w")); f:write(stdin); f:close()
      local cmd = string.format("LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q < %q 2>&1",
        package.path, package.cpath, src, tmp)
      local h = assert(io.popen(cmd))
      local out = h:read("a")
      h:close()
      os.remove(tmp)
      return out
    end
    local out = child(code, BAD_PTX)
    assert.are.equal("sync\tfalse\ttrue\nlost\ttrue\nlater\tfalse\ttrue\n" ..
      "run\tfalse\ttrue\nreopen\ttrue\ttrue\n", out)
    -- A new process opens the device and computes correctly.
    local fresh = child([=[
      local vyre = require('vyre')
      local be = assert(require('vyre.cuda').device(0))
      local out = be:run(vyre.parse(io.read('a')), { v = { 1, 2 } })
      print(table.concat(out.v:totable(), ','), be:lost())
    ]=], INC)
    assert.are.equal("2,3\tfalse\n", fresh)
    -- And this process's device was never affected.
    assert.is_false(be:lost())
    assert.are.same({ 2, 3 }, be:run(vyre.parse(INC), { v = { 1, 2 } }).v:totable())
  end)

  -- A sticky fault that lands while a cooperative megakernel runs (vyre's IR cannot
  -- fault: every access is bounds-checked, so the fault comes from a raw kernel queued
  -- just before it on the same stream): the megakernel's call raises the driver's cause,
  -- the device is lost, and every later call says so (issue 26's GPU sweep).
  it("surfaces a sticky fault during a cooperative megakernel, and the device stays lost",
    function()
    local code = [=[
      local vyre = require('vyre')
      local be = assert(require('vyre.cuda').device(0))
      local k = be:compile(vyre.parse([[
(program dec (workgroup 256)
  (buffer x u32 read_write) (buffer changed u32 read_write) (let i (gid x))
  (if (lt i (len x)) (then (if (gt (load x i) 0u32)
    (then (store x i (sub (load x i) 1u32)) (store changed 0u32 1u32))))))]]))
      local x, changed = be:buffer('u32', 4096), be:buffer('u32', 1)
      x:upload((function() local t = {} for i = 1, 4096 do t[i] = 3 end return t end)())
      local ok0, r0 = pcall(be.megakernel, be, { { k, { x = x, changed = changed } } },
        { converge = { flag = changed, max = 10 }, grid_sync = 'cooperative' })
      print('before', ok0, r0)
      local raw = be:load_ptx(io.read('a'), 'bad')
      raw:launch_raw({1}, {1}, {0})
      local ok, err = pcall(be.megakernel, be, { { k, { x = x, changed = changed } } },
        { converge = { flag = changed, max = 10 }, grid_sync = 'cooperative' })
      print('mega', ok, tostring(err):find('CUDA_ERROR_ILLEGAL_ADDRESS', 1, true) ~= nil)
      print('lost', be:lost())
      ok, err = pcall(be.megakernel, be, { { k, { x = x, changed = changed } } },
        { converge = { flag = changed, max = 10 } })
      print('later', ok, tostring(err):find('CUDA_ERROR_ILLEGAL_ADDRESS', 1, true) ~= nil)
    ]=]
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "w")); f:write(BAD_PTX); f:close()
    local h = assert(io.popen(string.format("LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q < %q 2>&1",
      package.path, package.cpath, code, tmp)))
    local out = h:read("a")
    h:close()
    os.remove(tmp)
    assert.are.equal("before\ttrue\t4\nmega\tfalse\ttrue\nlost\ttrue\nlater\tfalse\ttrue\n",
      out)
    assert.is_false(be:lost())
  end)
end)
