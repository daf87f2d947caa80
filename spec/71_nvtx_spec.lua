-- 71: the NVTX switch of vyre.cuda (docs/RUNTIME.md "Profiler ranges"). No GPU needed:
-- the switch is process-wide and only decides whether the runtime opens ranges; that
-- every hooked path opens and closes them in balance is tests/c/test_fake_trace.c.
local cuda = require("vyre.cuda")

local function lua_with_env(env, code)
  local cmd = string.format(
    "%s lua5.4 -e 'package.path=\"lua/?.lua;lua/?/init.lua;\"..package.path; " ..
    "package.cpath=\"build/?.so;\"..package.cpath' -e '%s' 2>&1", env, code)
  local p = io.popen(cmd)
  local out = p:read("a")
  p:close()
  return out
end

describe("vyre.cuda.nvtx", function()
  after_each(function() cuda.nvtx(false) end)

  it("reads the switch without changing it", function()
    local on, built = cuda.nvtx()
    assert.is_false(on)
    assert.is_boolean(built)
    assert.are.equal(on, (cuda.nvtx()))
  end)

  it("turns ranges on and off, or says NVTX is not built in", function()
    local _, built = cuda.nvtx()
    local on, why = cuda.nvtx(true)
    if built then
      assert.is_true(on)
      assert.is_true((cuda.nvtx()))
      assert.is_false((cuda.nvtx(false)))
      assert.is_false((cuda.nvtx()))
    else
      assert.is_false(on)
      assert.matches("not built in", why)
      assert.matches("Fix:", why)
    end
  end)

  it("starts as $VYRE_NVTX says", function()
    local _, built = cuda.nvtx()
    local code = "print((require(\"vyre.cuda\").nvtx()))"
    assert.are.equal(tostring(built) .. "\n", lua_with_env("VYRE_NVTX=1", code))
    assert.are.equal("false\n", lua_with_env("VYRE_NVTX=0", code))
  end)

  it("refuses a switch that is not a boolean, pointing at the caller", function()
    local ok, err = pcall(cuda.nvtx, 1)
    assert.is_false(ok)
    assert.matches("vyre.cuda.nvtx: on must be a boolean %(got number%)%. Fix:", err)
    ok, err = pcall(function() cuda.nvtx("yes") end)
    assert.is_false(ok)
    assert.matches("71_nvtx_spec", err)
  end)
end)
