-- 51: loading and probing the driver, on the fake (#fakecuda): every way a driver can
-- be unusable (too old, the toolkit's stub, cuInit failing, no device, a required entry
-- missing, cuDeviceGetCount failing) gives available() == false and a reason with a Fix;
-- a missing optional entry (stream capture) only disables graphs, with a clear error;
-- VYRE_FAKECUDA_FAIL arms faults from the environment. Each case runs in a child
-- process, since the driver is loaded once per process.
local F = require("tests.fakecuda.harness")

local available, why = F.available()

-- Output of Lua code run in a child process with extra environment.
local function child(env, code)
  local cmd = string.format("env %s LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q 2>&1", env,
    package.path, package.cpath, code)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

local PROBE = "local c = require('vyre.cuda'); local ok, w = c.available(); "
  .. "print(ok, w, c.count())"

describe("driver probing on the fake driver #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  local function unusable(env, needle)
    local out = child(env, PROBE)
    assert.truthy(out:find("^false\t"), out)
    assert.truthy(out:find(needle, 1, true), out)
    assert.truthy(out:find("Fix:", 1, true), out)
    return out
  end

  it("refuses a driver older than CUDA 12.0", function()
    unusable("VYRE_FAKECUDA_VERSION=11080", "the NVIDIA driver is too old: it supports CUDA 11.8")
  end)

  it("refuses the toolkit's stub library", function()
    unusable("VYRE_FAKECUDA_FAIL=cuDriverGetVersion:1:CUDA_ERROR_STUB_LIBRARY",
      "stub library (CUDA_ERROR_STUB_LIBRARY)")
    unusable("VYRE_FAKECUDA_FAIL=cuInit:1:CUDA_ERROR_STUB_LIBRARY", "stub library")
  end)

  it("reports cuInit failures: no device, or another result", function()
    unusable("VYRE_FAKECUDA_DEVICES=0", "found no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)")
    unusable("VYRE_FAKECUDA_FAIL=cuInit:1:CUDA_ERROR_INVALID_VALUE",
      "cuInit failed with CUresult 1")
  end)

  it("names a required entry point the driver lacks", function()
    unusable("VYRE_FAKECUDA_MISSING=cuMemAlloc", "lacks cuMemAlloc (ABI of CUDA 3020)")
    -- cuGetProcAddress failing for the 5th entry (cuDeviceGetName)
    unusable("VYRE_FAKECUDA_FAIL=cuGetProcAddress:5:CUDA_ERROR_NOT_FOUND", "lacks cuDeviceGetName")
  end)

  it("reports a failing cuDeviceGetCount", function()
    unusable("VYRE_FAKECUDA_FAIL=cuDeviceGetCount:1:CUDA_ERROR_INVALID_VALUE",
      "reports no CUDA device (cuDeviceGetCount: result 1")
  end)

  it("without the optional stream-capture entries, graphs say so and sequences work", function()
    local out = child("VYRE_FAKECUDA_MISSING=cuStreamBeginCapture,cuGraphLaunch", [[
      local vyre = require('vyre')
      local F = require('tests.fakecuda.harness')
      assert(F.available())
      local be = F.device()
      local k = be:compile(vyre.parse(F.INC))
      local v = be:buffer('u32', {1, 2})
      local ok, err = pcall(be.graph, be, {{k, {v = v}}})
      print(ok, err)
      local res = be:sequence({{k, {v = v}}}, {times = 2, readback = {v}})
      print(table.concat(res[1]:totable(), ','))]])
    assert.truthy(out:find("^false\t"), out)
    assert.truthy(out:find("graph: this NVIDIA driver lacks the stream-capture entry points. "
      .. "Fix: update the driver, or use sequences.", 1, true), out)
    assert.truthy(out:find("\n3,4\n$"), out)
  end)

  it("an ordinal past the device count is an error that says how many there are", function()
    local out = child("VYRE_FAKECUDA_DEVICES=2",
      "print(pcall(require('vyre.cuda').device, 2))")
    assert.truthy(out:find("device 2 does not exist: this machine has 2 CUDA devices "
      .. "(ordinals 0..1). Fix:", 1, true), out)
  end)

  it("arms faults from VYRE_FAKECUDA_FAIL (versioned names, 'always')", function()
    local out = child("VYRE_FAKECUDA_FAIL=cuMemAlloc_v2:2:CUDA_ERROR_INVALID_VALUE", [[
      local be = assert(require('vyre.cuda').device(0))
      local a = be:buffer('u32', 4)
      print(pcall(be.buffer, be, 'u32', 4))
      print(#be:buffer('u32', 4))]])
    assert.truthy(out:find("^false\tvyre.Backend:buffer: cuMemAlloc failed: "
      .. "CUDA_ERROR_INVALID_VALUE"), out)
    assert.truthy(out:find("\n4\n$"), out)
    out = child("VYRE_FAKECUDA_FAIL='cuMemAlloc:first:OUT_OF_MEMORY'", PROBE)
    assert.truthy(out:find("VYRE_FAKECUDA_FAIL: 'cuMemAlloc:first:OUT_OF_MEMORY': N must be",
      1, true), out) -- a bad fault is named on stderr
    out = child("VYRE_FAKECUDA_FAIL=cuMemHostAlloc:1:OUT_OF_MEMORY:always", [[
      local be = assert(require('vyre.cuda').device(0))
      local b = be:buffer('u32', {5, 6})
      print(table.concat(b:download():totable(), ','), be:stats().pinned_bytes)]])
    assert.are.equal("5,6\t0\n", out) -- no pinned staging: straight to pageable memory
  end)

  it("bin/vyre info describes the fake device and says it is the fake driver", function()
    local p = assert(io.popen("env -u LUA_PATH -u LUA_CPATH lua5.4 bin/vyre info 2>&1"))
    local out = p:read("a")
    p:close()
    local sm = F.control("config"):match("sm=(%d+)")
    assert.truthy(out:find("vyre fakecuda 0 (sm_" .. sm .. ")", 1, true), out)
    assert.truthy(out:find("the fake driver of tests/fakecuda)", 1, true), out)
    assert.truthy(out:find("fake driver (tests/fakecuda): kernels run on the reference", 1, true),
      out)
  end)
end)
