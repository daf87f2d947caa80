-- 53: fault injection over the fake driver (#fakecuda) for compiling and loading code:
-- compile through the JIT (cuLink*), compile from the disk cubin cache, compile on a
-- module-cache hit, raw PTX (load_ptx), kernel info and freeing a raw kernel. Each
-- driver call is failed in turn (tests/fakecuda/harness.lua, F.sweep), the JIT calls
-- also with CUDA_ERROR_INVALID_PTX, CUDA_ERROR_JIT_COMPILER_NOT_FOUND and
-- CUDA_ERROR_UNSUPPORTED_PTX_VERSION, cuModuleGetFunction with CUDA_ERROR_NOT_FOUND.
-- Then the JIT's own errors: the log and the failing PTX line in the message.
local F = require("tests.fakecuda.harness")
local vyre = require("vyre")

local available, why = F.available()

-- Launching k on {1, 2, 3} gives {1+add, 2+add, 3+add}.
local function computes(be, k, add)
  local b = be:buffer("u32", { 1, 2, 3 })
  k:launch({ v = b })
  assert.are.same({ 1 + add, 2 + add, 3 + add }, b:download():totable())
  b:free()
end

local RAW = [[
.version 7.0
.target sm_70
.address_size 64
.visible .entry touch(.param .u64 p)
{
  ret;
}
]]

describe("fault injection: compiling and loading code #fakecuda", function()
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

  it("compile through the JIT (every cache level misses)", function()
    sweep({
      name = "compile(jit)",
      prep = function() local p, k = F.fresh_program(); return { p = p, add = k } end,
      run = function(be, st) return be:compile(st.p) end,
      check = function(be, st, k) computes(be, k, st.add) end,
    }, { "cuLinkCreate", "cuLinkAddData", "cuLinkComplete", "cuLinkDestroy",
      "cuModuleLoadDataEx", "cuModuleGetFunction", "cuFuncGetAttribute" })
  end)

  it("compile from the disk cubin cache (a refused cubin is a miss: JIT instead)", function()
    sweep({
      name = "compile(disk)",
      prep = function(be)
        local p, add = F.fresh_program()
        be:compile(p):free()
        be:trim() -- the module is unloaded; its cubin stays on disk
        return { p = p, add = add, hits = be:stats().disk_hits }
      end,
      run = function(be, st) return be:compile(st.p) end,
      check = function(be, st, k) computes(be, k, st.add) end,
    }, { "cuModuleLoadDataEx", "cuModuleGetFunction" })
    local be = F.device()
    local p = F.fresh_program()
    be:compile(p):free()
    be:trim()
    local s0 = be:stats()
    be:compile(p):free()
    local s1 = be:stats()
    assert.are.equal(s0.disk_hits + 1, s1.disk_hits)
    assert.are.equal(s0.jit_compiles, s1.jit_compiles)
  end)

  it("compile on a module-cache hit", function()
    sweep({
      name = "compile(cached)",
      prep = function(be)
        local p, add = F.fresh_program()
        return { p = p, add = add, keep = be:compile(p) }
      end,
      run = function(be, st) return be:compile(st.p) end,
      check = function(be, st, k) computes(be, k, st.add) end,
      release = function(st) st.keep:free() end,
    }, { "cuCtxGetCurrent" })
  end)

  it("load_ptx (raw PTX through cuModuleLoadDataEx)", function()
    F.foreign(true) -- RAW is foreign PTX: its launch only tests the plumbing
    finally(function() F.foreign(false) end)
    sweep({
      name = "load_ptx",
      run = function(be) return be:load_ptx(RAW, "touch") end,
      check = function(be, _, k) k:launch_raw({ 1 }, { 1 }, { be:buffer("u32", 1) }) end,
    }, { "cuModuleLoadDataEx", "cuModuleGetFunction", "cuFuncGetAttribute" })
  end)

  it("kernel info (cuFuncGetAttribute)", function()
    sweep({
      name = "kernel:info",
      prep = function(be) return { k = be:compile(vyre.parse(F.INC)) } end,
      run = function(_, st) return st.k:info() end,
      check = function(_, _, info) assert.is_true(info.registers > 0) end,
      release = function(st) st.k:free() end,
    }, { "cuFuncGetAttribute" })
  end)

  it("freeing a raw kernel unloads its module (a failure is reported next)", function()
    sweep({
      name = "kernel:free",
      prep = function(be) return { k = be:load_ptx(RAW, "touch") } end,
      run = function(_, st) st.k:free() end,
    }, { "cuModuleUnload" })
  end)

  it("a JIT failure quotes the log, and the failing PTX line when the log names one", function()
    local be = F.device()
    local ok, err = pcall(be.load_ptx, be, ".version 7.0\n.visible .entry x()\n{\n ret;\n}\n", "x")
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("^vyre.Backend:load_ptx: cuModuleLoadDataEx failed for program 'x': "
      .. "CUDA_ERROR_INVALID_PTX"), err)
    assert.truthy(err:find("JIT log: ", 1, true) and err:find("Fix:", 1, true), err)
    assert.truthy(err:find("PTX line 1: `.version 7.0`", 1, true), err)
    -- An injected JIT failure carries the fake's log.
    F.control("fail cuLinkAddData:1:CUDA_ERROR_JIT_COMPILER_NOT_FOUND")
    ok, err = pcall(be.compile, be, (F.fresh_program()))
    F.control("clear")
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("cuLinkAddData failed for program 'add", 1, true), err)
    assert.truthy(err:find("CUDA_ERROR_JIT_COMPILER_NOT_FOUND", 1, true), err)
    assert.truthy(err:find("JIT log: vyre fakecuda: injected", 1, true), err)
    assert.truthy(err:find("Fix: the driver's PTX JIT compiler", 1, true), err)
    assert.is_true(F.usable(be))
  end)

  it("ptxas (when present) checks the PTX: an error names its line", function()
    F.control("set ptxas 1")
    local cfg = F.control("config")
    if cfg:find("ptxas=(none)", 1, true) then
      F.control("set ptxas 0")
      pending("no ptxas on this machine: PTX is checked for structure only")
      return
    end
    local be = F.device()
    local bad = RAW:gsub("ret;", "bogus.op %%r1;\n  ret;")
    local ok, err = pcall(be.load_ptx, be, bad, "touch")
    F.control("set ptxas 0")
    assert.is_false(ok)
    assert.truthy(tostring(err):find("PTX line 6: `  bogus.op %r1;`", 1, true), err)
  end)

  it("an entry that is not in the module: cuModuleGetFunction, CUDA_ERROR_NOT_FOUND", function()
    local be = F.device()
    local ok, err = pcall(be.load_ptx, be, RAW, "nope")
    assert.is_false(ok)
    err = tostring(err)
    assert.truthy(err:find("cuModuleGetFunction failed for program 'nope': CUDA_ERROR_NOT_FOUND",
      1, true), err)
    assert.truthy(err:find("Fix: the kernel entry point was not found", 1, true), err)
    local n = F.misuse()
    assert.are.equal(0, n)
  end)
end)
