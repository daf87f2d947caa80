-- 109: be:compile_all(programs) — a batch compiled at once (issue 25 §6 cold start; CUDA:
-- the cubins the disk cache lacks JIT-compiled in worker threads, src/core/cuda/
-- compile_many.c). The kernels are those be:compile gives (same results, same PTX), an
-- error names the first failing program and leaves nothing, and the e-graph compiles a
-- rule set's kernels through it before iteration 1 (lua/vyre/egraph/precompile.lua):
-- on the fake driver (#fakecuda) a second process JIT-compiles nothing.
local vyre = require("vyre")
local F = require("tests.fakecuda.harness")
local H = require("spec.helpers")

-- Program i: v[j] = v[j] * (i + 2) + salt + i, each its own PTX.
local function program(salt, i)
  return vyre.parse(([[(program ca%d_%d (workgroup 64)
  (buffer v u32 read_write)
  (let j (gid x))
  (if (lt j (len v)) (then (store v j (add (mul (load v j) %du32) %du32)))))]]):format(salt, i,
    i + 2, salt + i))
end

local function results(be, ks)
  local out = {}
  for i, k in ipairs(ks) do
    local b = be:buffer("u32", { 1, 2, 3 })
    k:launch({ v = b })
    out[i] = table.concat(b:download():totable(), ",")
  end
  return out
end

local function checks(be, salt)
  it("gives the kernels be:compile gives, in order, repeats included", function()
    local ps = {}
    for i = 1, 10 do ps[i] = program(salt, i) end
    ps[11] = ps[4]
    local ks = be:compile_all(ps)
    assert.are.equal(11, #ks)
    local one = {}
    for i, p in ipairs(ps) do one[i] = be:compile(p) end
    assert.are.same(results(be, one), results(be, ks))
    local c = salt + 2 -- program 2: v * 4 + salt + 2 on {1, 2, 3}
    assert.are.equal(("%d,%d,%d"):format(4 + c, 8 + c, 12 + c), results(be, { ks[2] })[1])
    assert.are.same({}, be:compile_all({}))
  end)

  it("names the first failing program and leaves no kernel", function()
    collectgarbage()
    collectgarbage()
    local before = be:stats().live_kernels
    local bad = vyre.parse("(program ca_bad (workgroup 1) (buffer v u32 read) (store v 0u32 1u32))")
    local ok, err = pcall(be.compile_all, be, { program(salt, 1), bad, program(salt, 2) })
    assert.is_false(ok)
    assert.matches("programs%[2%] %('ca_bad'%)", tostring(err))
    assert.matches("Fix:", tostring(err))
    ok, err = pcall(be.compile_all, be, { program(salt, 1), 7 })
    assert.is_false(ok)
    assert.matches("programs%[2%] is a number, not a vyre.Program. Fix:", tostring(err))
    ok, err = pcall(be.compile_all, be, "p")
    assert.is_false(ok)
    assert.matches("must be a list of vyre.Program, got string. Fix:", tostring(err))
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, be:stats().live_kernels)
  end)
end

describe("be:compile_all on the reference", function()
  checks(vyre.backend("reference"), 10)
end)

describe("be:compile_all on the fake driver #fakecuda", function()
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end
  local be = F.device()
  checks(be, 20)

  -- Runs code in a child process (the same paths) with VYRE_CACHE_DIR=dir and env.
  local function child(dir, env, code)
    local cmd = ("VYRE_CACHE_DIR=%q %s LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q 2>&1"):format(dir,
      env, package.path, package.cpath, code)
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    p:close()
    return out
  end

  it("JIT-compiles each new cubin once in parallel, and a second process none", function()
    local dir = os.tmpname()
    os.remove(dir)
    local code = [[
      local vyre = require('vyre')
      local F = require('tests.fakecuda.harness')
      local be = F.device()
      local ps = {}
      for i = 1, 16 do
        ps[i] = vyre.parse(('(program cp%d (workgroup 64) (buffer v u32 read_write) '
          .. '(let j (gid x)) (if (lt j (len v)) (then (store v j (add (load v j) %du32)))))')
          :format(i, i))
      end
      local ks = be:compile_all(ps)
      local b = be:buffer('u32', {0, 0, 0})
      for _, k in ipairs(ks) do k:launch({v = b}) end
      local s = be:stats()
      print(s.jit_compiles, s.disk_hits, s.disk_writes, b:download()[1])]]
    assert.are.equal("16\t0\t16\t136\n", child(dir, "VYRE_JIT_THREADS=4", code))
    assert.are.equal("0\t16\t0\t136\n", child(dir, "VYRE_JIT_THREADS=4", code))
    os.execute("rm -rf " .. dir)
  end)

  it("a failing JIT in a worker is the program's error, with nothing left in the driver", function()
    local ps = {}
    for i = 1, 12 do ps[i] = program(30, i) end
    local live = F.live()
    F.control("fail cuLinkComplete:4:CUDA_ERROR_INVALID_PTX")
    local ok, err = pcall(be.compile_all, be, ps)
    F.control("clear")
    assert.is_false(ok)
    assert.matches("cuLinkComplete failed for program 'ca30_%d+'", tostring(err))
    assert.matches("JIT log:", tostring(err))
    collectgarbage()
    local now = F.live()
    assert.are.equal(live.modules, now.modules)
    assert.are.equal(0, now.links)
    assert.are.equal(12, #be:compile_all(ps)) -- the device stays usable
  end)

  it("compiles the e-graph's kernels in two batches; a warm process JITs nothing",
    function()
      local dir = os.tmpname()
      os.remove(dir)
      local code = [[
        package.path = 'lua/?.lua;lua/?/init.lua;' .. package.path
        local vyre = require('vyre')
        local U = require('vyre.lib.util')
        local F = require('tests.fakecuda.harness')
        local batch = 0
        local collect = U.collect
        U.collect = function(be, fn)
          local j0 = be:stats().jit_compiles
          local n = collect(be, fn)
          batch = batch + be:stats().jit_compiles - j0
          return n
        end
        local M = require('bench.eqsat.math')
        local be = F.device()
        local eg = vyre.egraph(be)
        M.setup(eg)
        eg:rebuild()
        local rep = eg:run({iterations = 3, scheduler = vyre.egraph.simple()})
        local s = be:stats()
        print(rep[#rep].nodes, batch, s.jit_compiles, s.disk_hits)]]
      -- (the child's code is one line once the shell has it: no comments in it)
      local cold = child(dir, "", code)
      local nodes, batch, jit = cold:match("^(%d+)\t(%d+)\t(%d+)\t0\n$")
      assert.are.equal("208", nodes, cold) -- egglog's count at iteration 3
      -- the fixed kernels when the e-graph is made, the rule set's before iteration 1:
      -- one small kernel (the moved count, run.lua) remains one by one
      assert.is_true(tonumber(batch) >= 60, cold)
      assert.is_true(tonumber(jit) - tonumber(batch) <= 1, cold)
      local warm = child(dir, "", code)
      assert.are.equal(("208\t0\t0\t%s\n"):format(jit), warm) -- every cubin from disk
      os.execute("rm -rf " .. dir)
    end)

  it("leaves nothing alive", function()
    be = nil
    assert.are.same({}, H.leftovers(F.device()))
    assert.are.equal(0, F.live().links)
    assert.are.equal(0, (F.misuse()))
  end)
end)
