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
    assert.matches("73_nvtx_spec", err)
  end)
end)

-- On a GPU with the ranges on (NVTX built in) or off: every hooked path still computes
-- what the reference does (the debug mode on CUDA is spec 74).
describe("NVTX ranges on a GPU #gpu", function()
  local vyre = require("vyre")
  local INC = [[
(program inc (workgroup 64) (buffer v u32 read_write) (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]]
  local GSYNC = [[
(program gsync (workgroup 1) (buffer x u32 read_write)
  (store x 0u32 (add (load x 0u32) 1u32)) (grid_barrier) (store x 0u32 (mul (load x 0u32) 3u32)))]]

  it("computes as the reference on every hooked path with the ranges on", function()
    local be = assert(cuda.device(0))
    local _, built = cuda.nvtx()
    assert.are.equal(built, (cuda.nvtx(built)))
    local ref = vyre.reference.new()
    local p = vyre.parse(INC)
    local data = vyre.array("u32", { 1, 2, 3, 4, 5 })
    assert.are.equal(ref:run(p, { v = data }).v, be:run(p, { v = data }).v)
    local k = be:compile(p)
    local buf = be:buffer("u32", data)
    k:launch({ v = buf })
    k:bind({ v = buf })()
    be:sequence({ { k, { v = buf } } }, { times = 2 })
    be:graph({ { k, { v = buf } } }):launch(3)
    assert.are.same({ 8, 9, 10, 11, 12 }, buf:download():totable())
    local g = vyre.parse(GSYNC)
    local want = ref:run(g, { x = vyre.array("u32", { 4 }) }).x
    for _, mode in ipairs({ "split", "auto" }) do
      be:grid_sync(mode)
      assert.are.equal(want, be:run(g, { x = vyre.array("u32", { 4 }) }).x)
    end
    be:grid_sync("auto")
    cuda.nvtx(false)
  end)
end)
