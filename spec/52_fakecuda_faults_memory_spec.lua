-- 52: fault injection over the fake driver (#fakecuda; docs/RUNTIME.md "Fake driver"):
-- opening a device, buffers (alloc from a count or from data, upload, download staged
-- and unstaged, zero, free), synchronize, trim and stats. For each operation every
-- driver call it makes is failed in turn with out-of-memory, invalid-value and a sticky
-- illegal address (tests/fakecuda/harness.lua, F.sweep): a clear error naming the call
-- with a Fix (or an absorbed failure, or one reported by the next call), nothing
-- leaked, the device usable afterwards — after a sticky fault lost, and reopened.
local F = require("tests.fakecuda.harness")

local available, why = F.available()

describe("fault injection: devices and memory #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  setup(function()
    F.control("set ptxas 0") -- hundreds of throwaway programs: structural checks only
  end)

  teardown(function()
    F.control("set ptxas 1")
  end)

  local sweep = F.sweep_covers -- the sweep, and that it covered the listed calls

  local function release_all(st)
    for _, v in pairs(st) do
      if type(v) == "userdata" and v.free then v:free() end
    end
  end

  it("opening a device object", function()
    sweep({
      name = "open",
      run = function()
        -- core.cuda_open: a new object each time, not cached by vyre.cuda.device
        local be, reason = require("vyre.core").cuda_open(0)
        if not be then error("vyre.cuda.device: " .. reason, 0) end
        return be
      end,
      check = function(_, _, be2) assert.are.equal("cuda", be2.name) end,
    }, { "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuStreamCreate", "cuEventCreate",
      "cuDeviceGetName", "cuDeviceTotalMem", "cuDeviceGetAttribute" })
  end)

  it("a buffer from a count (allocated and zeroed)", function()
    sweep({
      name = "buffer(count)",
      run = function(be) return be:buffer("u32", 1000) end,
      check = function(_, _, b)
        assert.are.equal(0, b:download():bytes():gsub("\0", ""):len())
      end,
    }, { "cuMemAlloc", "cuMemsetD8Async" })
  end)

  it("a buffer from data (allocated and uploaded)", function()
    sweep({
      name = "buffer(data)",
      run = function(be) return be:buffer("f64", { 1.5, -2.25, 3 }) end,
      check = function(_, _, b) assert.are.same({ 1.5, -2.25, 3 }, b:download():totable()) end,
    }, { "cuMemAlloc", "cuMemcpyHtoDAsync" })
  end)

  it("upload into a byte range", function()
    sweep({
      name = "upload",
      prep = function(be) return { b = be:buffer("u32", 8) } end,
      run = function(_, st) st.b:upload({ 7, 8, 9 }, { byte_offset = 4 }) end,
      check = function(_, st)
        assert.are.same({ 7, 8, 9 }, st.b:download({ first = 2, count = 3 }):totable())
      end,
      release = release_all,
    }, { "cuMemcpyHtoDAsync" })
  end)

  it("download through pinned staging", function()
    sweep({
      name = "download(staged)",
      prep = function(be) return { b = be:buffer("u32", { 4, 5, 6 }) } end,
      run = function(_, st) return st.b:download() end,
      check = function(_, _, a) assert.are.same({ 4, 5, 6 }, a:totable()) end,
      release = release_all,
    }, { "cuMemHostAlloc", "cuMemcpyDtoHAsync", "cuStreamSynchronize" })
  end)

  it("download of more than 4 MiB (pageable, no staging)", function()
    local n = (4 << 20) // 4 + 16
    sweep({
      name = "download(large)",
      prep = function(be)
        local b = be:buffer("u32", n)
        b:upload({ 11, 12 }, { first = n - 1 })
        return { b = b }
      end,
      run = function(_, st) return st.b:download() end,
      check = function(_, _, a) assert.are.equal(12, a[n]) end,
      release = release_all,
    }, { "cuMemcpyDtoHAsync", "cuStreamSynchronize" })
  end)

  it("zero", function()
    sweep({
      name = "zero",
      prep = function(be) return { b = be:buffer("u32", { 1, 2 }) } end,
      run = function(_, st) st.b:zero() end,
      check = function(_, st) assert.are.same({ 0, 0 }, st.b:download():totable()) end,
      release = release_all,
    }, { "cuMemsetD8Async" })
  end)

  it("free (the failure is reported by the next call)", function()
    sweep({
      name = "free",
      prep = function(be) return { b = be:buffer("u32", 64) } end,
      run = function(_, st) st.b:free() end,
    }, { "cuMemFree" })
  end)

  it("synchronize", function()
    sweep({
      name = "synchronize",
      run = function(be) return be:synchronize() end,
    }, { "cuStreamSynchronize" })
  end)

  it("trim (pools and unused modules)", function()
    sweep({
      name = "trim",
      prep = function(be)
        -- a run fills the transient and pinned pools and caches a module
        be:run(require("vyre").parse(F.INC), { v = { 1, 2, 3 } })
        return {}
      end,
      run = function(be) return be:trim() end,
    }, { "cuStreamSynchronize", "cuMemFree", "cuMemFreeHost", "cuModuleUnload" })
  end)

  it("stats makes no driver call and cannot fail", function()
    local be = F.device()
    local calls, s = F.trace(be.stats, be)
    assert.are.same({}, calls)
    assert.are.equal("number", type(s.live_buffers))
  end)

  it("a failure while naming a failure still gives a clear error", function()
    local be = F.device()
    F.control("fail cuMemAlloc:1:CUDA_ERROR_INVALID_VALUE,cuGetErrorName:1:1,cuGetErrorString:1:1")
    local ok, err = pcall(be.buffer, be, "u32", 4)
    F.control("clear")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("vyre.Backend:buffer: cuMemAlloc failed: "
      .. "CUDA_ERROR_UNKNOWN_CODE (no description from the driver). Fix:", 1, true), err)
    assert.is_true(F.usable(be))
  end)

  it("a persistent out of memory: the protocol collects, trims, retries once, then says "
    .. "how much was asked and what is free, with a Fix", function()
    local be = F.device()
    local before = be:stats().oom_retries
    F.control("fail cuMemAlloc:1:CUDA_ERROR_OUT_OF_MEMORY:always")
    local ok, err = pcall(be.buffer, be, "u32", 1000)
    F.control("clear")
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("^vyre.Backend:buffer: out of device memory allocating 4000 bytes"), err)
    assert.truthy(err:find("cuMemAlloc", 1, true) and err:find("Fix:", 1, true), err)
    assert.are.equal(before + 1, be:stats().oom_retries)
    assert.is_true(F.usable(be))
  end)
end)
