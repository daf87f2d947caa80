-- 116: the warm start (issue 25 §6) on the fake CUDA driver (#fakecuda): a process
-- whose disk cache (VYRE_CACHE_DIR) a former process filled finds each program's PTX
-- there by its program key and emits none (be:stats().ptx_emits 0, disk_program_hits
-- one per program), through be:compile and be:compile_all, and its kernels are the
-- former's (same PTX, same results); so does the e-graph's math workload. Another code
-- generator build ($VYRE_TEST_BUILD_ID, for tests) emits again but JIT-compiles
-- nothing; debug-mode PTX has entries of its own. be:stats().open_*_ns say where
-- opening the device went. src/core/cuda/cache_disk.c; docs/RUNTIME.md "Caches".
-- The math workload's case runs on a GPU too (#gpu, run by the lead): iterations 1..12
-- twice in new processes, its figures printed (open split, setup, module loads).
local F = require("tests.fakecuda.harness")
local H = require("spec.helpers")

local available, why = F.available()

-- Runs code in a child process on cache directory dir (extra environment env); its
-- output.
local function child(dir, env, code)
  local cmd = string.format("VYRE_CACHE_DIR=%q %s LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q 2>&1",
    dir, env, package.path, package.cpath, code)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

local function tmpdir()
  local p = assert(io.popen("mktemp -d"))
  local dir = p:read("l")
  p:close()
  return dir
end

-- Four programs compiled one by one (or with compile_all when BATCH is set), run, and
-- the counters and a digest of their PTX printed. DEBUG turns the debug mode on first.
local CODE = [[
  local vyre = require('vyre')
  local F = require('tests.fakecuda.harness')
  assert(F.available())
  local be = F.device()
  if os.getenv('DEBUG') then be:debug(true) end
  local ps = {}
  for i = 1, 4 do
    ps[i] = vyre.parse(('(program cold%d (workgroup 64) (buffer v u32 read_write) '
      .. '(let j (gid x)) (if (lt j (len v)) (then (store v j (add (load v j) %du32)))))')
      :format(i, i))
  end
  local ks
  if os.getenv('BATCH') then
    ks = be:compile_all(ps)
  else
    ks = {}
    for i = 1, 4 do ks[i] = be:compile(ps[i]) end
  end
  local b = be:buffer('u32', {0, 0, 0})
  local digest = 0
  for _, k in ipairs(ks) do
    k:launch({v = b})
    for c in k.ptx:gmatch('.') do digest = (digest * 31 + c:byte()) % 1000000007 end
    assert(k:info().nbuffers == 1)
  end
  local s = be:stats()
  print(s.ptx_emits, s.disk_program_hits, s.disk_program_writes, s.jit_compiles,
    b:download()[1], digest)]]

-- The fields of a child's line.
local function fields(out)
  local v = {}
  for x in out:gmatch("[^\t\n]+") do v[#v + 1] = tonumber(x) or x end
  assert(#v == 6, "the child printed:\n" .. out)
  return v
end

describe("the warm start on the fake driver #fakecuda", function()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  it("a second process emits no PTX: one by one and batched, the same kernels", function()
    local dir = tmpdir()
    local cold = fields(child(dir, "", CODE))
    assert.are.same({ 4, 0, 4, 4, 10 }, { cold[1], cold[2], cold[3], cold[4], cold[5] })
    for _, env in ipairs({ "", "BATCH=1 VYRE_JIT_THREADS=4" }) do
      local warm = fields(child(dir, env, CODE))
      assert.are.same({ 0, 4, 0, 0, 10, cold[6] }, warm, env)
    end
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("another code generator build emits again (the cubins still come from disk)", function()
    local dir = tmpdir()
    fields(child(dir, "", CODE))
    local stale = fields(child(dir, "VYRE_TEST_BUILD_ID=some-other-emitter", CODE))
    assert.are.same({ 4, 0, 4, 0, 10 }, { stale[1], stale[2], stale[3], stale[4], stale[5] })
    local again = fields(child(dir, "", CODE))
    assert.are.same({ 0, 4 }, { again[1], again[2] })
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("debug-mode PTX does not alias release PTX", function()
    local dir = tmpdir()
    local rel = fields(child(dir, "", CODE))
    local dbg = fields(child(dir, "DEBUG=1", CODE))
    assert.are.same({ 4, 0, 4 }, { dbg[1], dbg[2], dbg[3] })
    assert.are_not.equal(rel[6], dbg[6])
    local dbg2 = fields(child(dir, "DEBUG=1 BATCH=1", CODE))
    assert.are.same({ 0, 4, 0, 0, 10, dbg[6] }, dbg2)
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("be:stats() says where opening the device went", function()
    local s = F.device():stats()
    assert.is_true(s.open_ns > 0)
    assert.is_true(s.open_ctx_ns + s.open_stream_ns + s.open_probe_ns <= s.open_ns)
    assert.is_true(s.open_dlopen_ns > 0)
    assert.is_true(s.open_init_ns >= 0)
  end)
end)

-- The math workload: a second process emits no PTX (fake driver: 1 iteration; GPU: 12,
-- with the figures printed for the record, not asserted).
local function whole(dir, iters)
  local cmd = ("VYRE_CACHE_DIR=%q LUA_PATH=%q LUA_CPATH=%q lua5.4 bench/eqsat/math.lua "
    .. "cuda %d --whole 2>&1"):format(dir, package.path, package.cpath, iters)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  local line = out:match("whole\t([^\n]*)")
  assert(line, "the child printed no summary line:\n" .. out)
  local v = {}
  for x in line:gmatch("[^\t]+") do v[#v + 1] = tonumber(x) end
  return { nodes = v[2], seconds = v[3], backend = v[4], setup = v[5], jit = v[7],
    disk_hits = v[8], emits = v[10], prog_hits = v[11], open = v[12], dlopen = v[13],
    init = v[14], ctx = v[15], stream = v[16], probe = v[17], loads = v[18] }
end

for _, kind in ipairs(H.cuda_kinds()) do
describe("the math workload's warm start on " .. kind.name .. " " .. kind.tag, function()
  it("a second process emits no PTX", function()
    local dir = tmpdir()
    local iters = kind.small and 1 or 12
    local cold = whole(dir, iters)
    local warm = whole(dir, iters)
    os.execute("rm -rf '" .. dir .. "'")
    assert.is_true(cold.jit > 10 and cold.emits >= cold.jit, "cold: " .. cold.emits)
    assert.are.same({ cold.nodes, 0, cold.jit, 0, cold.emits },
      { warm.nodes, warm.jit, warm.disk_hits, warm.emits, warm.prog_hits })
    if not kind.small then
      for _, r in ipairs({ { "empty", cold }, { "warm", warm } }) do
        local x = r[2]
        print(("\n# spec 116: math 1..%d, %s cache: %.3f s in the script; backend %.3f s "
          .. "(open %.3f: dlopen %.3f, cuInit %.3f, context %.3f, stream %.4f, probe %.4f); "
          .. "setup %.3f s; module loads %.3f s; %d PTX emitted"):format(iters, r[1], x.seconds,
          x.backend, x.open, x.dlopen, x.init, x.ctx, x.stream, x.probe, x.setup, x.loads,
          x.emits))
      end
    end
  end)
end)
end
