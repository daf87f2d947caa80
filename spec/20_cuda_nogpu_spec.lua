-- 20: the CUDA backend without a GPU: availability with a reason, clean nil + reason
-- from every environmental entry point, fallback to the reference backend, driver
-- probing of the toolkit stub, the cache location rules and `bin/vyre info`.
-- On a machine where CUDA works, the same file checks the positive answers instead.
local vyre = require("vyre")
local cuda = require("vyre.cuda")

local available, reason = cuda.available()

-- Runs a Lua snippet in a fresh lua5.4 with extra environment; returns its output.
local function lua_out(env, code)
  local cmd = string.format("env %s lua5.4 -e %q 2>&1", env, code)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

local function paths()
  return string.format("LUA_PATH=%q LUA_CPATH=%q", package.path, package.cpath)
end

describe("vyre.cuda without a usable GPU", function()
  if available then
    it("reports CUDA usable with no reason, and backend() picks it", function()
      assert.is_true(available)
      assert.is_nil(reason)
      assert.are.equal("cuda", vyre.backend().name)
      assert.is_true(cuda.count() >= 1)
    end)
    return
  end

  it("available() returns false and a reason that says how to fix it", function()
    assert.is_false(available)
    assert.are.equal("string", type(reason))
    assert.truthy(reason:find("Fix:", 1, true))
  end)

  it("count() and device() return nil and the same reason", function()
    local n, why = cuda.count()
    assert.is_nil(n)
    assert.are.equal(reason, why)
    local be, why2 = cuda.device(0)
    assert.is_nil(be)
    assert.are.equal(reason, why2)
  end)

  it("vyre.backend('cuda') returns nil, reason", function()
    local be, why = vyre.backend("cuda")
    assert.is_nil(be)
    assert.are.equal(reason, why)
  end)

  it("vyre.backend() falls back to the reference backend, which runs programs", function()
    local be = vyre.backend()
    assert.are.equal("reference", be.name)
    local p = vyre.parse([[
(program twice (workgroup 4)
  (buffer x u32 read_write)
  (let i (gid x))
  (if (lt i (len x)) (then (store x i (mul (load x i) 2u32)))))]])
    local out = be:run(p, { x = { 1, 2, 3 } })
    assert.are.same({ 2, 4, 6 }, out.x:totable())
  end)

  it("core functions of the runtime are there and fail cleanly", function()
    local core = require("vyre.core")
    local ok, why = core.cuda_available()
    assert.is_false(ok)
    assert.are.equal(reason, why)
    assert.are.equal(0, core.cuda_driver_version())
    local dev, why2 = core.cuda_open(0)
    assert.is_nil(dev)
    assert.are.equal(reason, why2)
  end)
end)

describe("vyre.cuda driver probing", function()
  it("rejects the CUDA toolkit's stub library with a reason", function()
    local stub = "/usr/local/cuda/lib64/stubs/libcuda.so"
    local f = io.open(stub, "rb")
    if not f then
      pending("no toolkit stub at " .. stub)
      return
    end
    f:close()
    local out = lua_out(paths() .. " VYRE_LIBCUDA=" .. stub,
      "local c = require('vyre.cuda'); local ok, why = c.available(); print(ok, why)")
    assert.truthy(out:find("^false"), out)
    assert.truthy(out:find("stub", 1, true), out)
  end)

  it("names a missing driver file in the reason", function()
    local out = lua_out(paths() .. " VYRE_LIBCUDA=/nonexistent/libcuda.so.1",
      "local c = require('vyre.cuda'); local ok, why = c.available(); print(ok, why)")
    assert.truthy(out:find("^false"), out)
    assert.truthy(out:find("/nonexistent/libcuda.so.1", 1, true), out)
  end)
end)

describe("vyre.cuda cubin cache location", function()
  it("uses VYRE_CACHE_DIR, else XDG_CACHE_HOME/vyre, else ~/.cache/vyre", function()
    local code = "print(require('vyre.cuda').cache().dir)"
    assert.are.equal("/tmp/vyre-x\n", lua_out(paths() .. " VYRE_CACHE_DIR=/tmp/vyre-x "
      .. "XDG_CACHE_HOME=/tmp/xdg", code))
    assert.are.equal("/tmp/xdg/vyre\n", lua_out("-u VYRE_CACHE_DIR " .. paths()
      .. " XDG_CACHE_HOME=/tmp/xdg", code))
    assert.are.equal("/home/u/.cache/vyre\n", lua_out("-u VYRE_CACHE_DIR -u XDG_CACHE_HOME "
      .. paths() .. " HOME=/home/u", code))
  end)

  it("reports size, file count and cap", function()
    local c = cuda.cache()
    assert.are.equal("number", type(c.bytes))
    assert.are.equal("number", type(c.files))
    assert.is_true(c.cap > 0)
  end)
end)

describe("bin/vyre info", function()
  it("says whether CUDA is usable and where the cache is", function()
    local p = assert(io.popen("env -u LUA_PATH -u LUA_CPATH lua5.4 bin/vyre info 2>&1"))
    local out = p:read("a")
    local ok = p:close()
    assert.is_true(ok, out)
    assert.truthy(out:find("CUDA: ", 1, true), out)
    if not available then assert.truthy(out:find("not usable", 1, true), out) end
    assert.truthy(out:find("cubin cache: ", 1, true), out)
  end)
end)
