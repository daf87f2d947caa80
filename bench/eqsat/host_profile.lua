-- bench/eqsat/host_profile.lua — the host's own cost of a small iteration of the math
-- workload, measured without a GPU (issue 25 §6). On the fake CUDA driver every launch
-- is computed on the CPU by the reference interpreter; the driver counts the time it
-- spends doing so (control "launches": exec_ns wall, exec_cpu_ns CPU), and this script
-- subtracts it:
--
--   VYRE_LIBCUDA=$PWD/build/fakecuda/libcuda.so.1 VYRE_CACHE_DIR=$(mktemp -d) \
--     lua5.4 bench/eqsat/host_profile.lua [iterations, default 8] [--sample] [--repeat N]
--
-- Steadier on a loaded machine (valgrind runs the process on one core, slowed evenly,
-- so two trees compare well; the µs are valgrind's, not native):
--   valgrind --tool=callgrind --instr-atstart=no \
--     lua5.4 bench/eqsat/host_profile.lua 6 --callgrind
--
-- Per iteration: e-nodes, wall µs, the fake's kernel execution µs (CPU), host µs (the
-- process's CPU time minus the execution's: Lua, the binding, the runtime, the fake's
-- driver-call bookkeeping; CPU time, so a loaded machine's preemption is left out), of which
-- inside be:sequence (binding + runtime + driver calls, execution excluded) and outside
-- it (the Lua of vyre.egraph and vyre.lib, and the C calls it makes besides sequences:
-- buffer allocations and views, the fake's host memory), and the sequences, steps and
-- launches. --repeat N runs the whole workload N times in the process (fresh e-graphs)
-- and prints the
-- per-iteration minimum of host µs. --sample then runs it once more under a
-- debug.sethook count hook (iterations 2.. only), each sample weighted by the host CPU
-- time since the last one, and prints the top functions (self, and inclusive through
-- the call stack) and lines: a C function's time (be:sequence's binding and runtime
-- work included) goes to the Lua line calling it. The hook slows everything down; the
-- shares are what it says, not the absolute µs.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
local vyre = require("vyre")
local math_wl = require("bench.eqsat.math")
local now = vyre.core.now_ns

local iters, sample, reps, cg = 8, false, 1, false
do
  local k = 1
  while arg[k] do
    if arg[k] == "--sample" then
      sample = true
    elseif arg[k] == "--callgrind" then
      cg = true
    elseif arg[k] == "--repeat" then
      k = k + 1
      reps = assert(math.tointeger(tonumber(arg[k])), "--repeat takes a count")
    else
      iters = assert(math.tointeger(tonumber(arg[k])), "iterations must be an integer")
    end
    k = k + 1
  end
end

-- the fake driver's control module sits beside the libcuda.so.1 that VYRE_LIBCUDA names
local lib = os.getenv("VYRE_LIBCUDA") or ""
local dir = lib:match("^(.*)/libcuda%.so%.1$")
if not dir then
  io.stderr:write("host_profile: needs the fake CUDA driver. Fix: run with "
    .. "VYRE_LIBCUDA=$PWD/build/fakecuda/libcuda.so.1\n")
  os.exit(1)
end
local open = assert(package.loadlib(dir .. "/fakecuda.so", "luaopen_fakecuda"))
local ctl = open().control
-- the fake's kernel execution so far, in this thread's CPU ns
local function exec_ns()
  return math.tointeger(tonumber(ctl("launches"):match("exec_cpu_ns=(%d+)")))
end
-- this process's CPU ns (os.clock: the process is one thread): preemption on a loaded
-- machine does not inflate it, as it does wall time
local function cpu_ns() return math.floor(os.clock() * 1e9) end

local be = vyre.backend("cuda")

-- time inside be:sequence and its count: the Backend type's __index (a C function) is
-- wrapped so that `sequence` answers a timing wrapper (other names go through unchanged)
local inseq, nseq, nsteps = 0, 0, 0
do
  local mt = getmetatable(be)
  local idx = mt.__index
  local raw = be.sequence
  local function seq(b, steps, ...)
    nseq, nsteps = nseq + 1, nsteps + #steps
    local t0 = cpu_ns()
    local r1, r2 = raw(b, steps, ...)
    inseq = inseq + (cpu_ns() - t0)
    return r1, r2
  end
  mt.__index = function(o, k)
    if k == "sequence" then return seq end
    return idx(o, k)
  end
end

-- --callgrind: under `valgrind --tool=callgrind --instr-atstart=no`, instrumentation is
-- switched on for iterations 2.. only (setup and iteration 1 run at full speed).
local function callgrind(on)
  if not cg then return end
  local pid = io.open("/proc/self/stat"):read("n")
  os.execute(("callgrind_control -i %s %d >/dev/null"):format(on and "on" or "off", pid))
end

local function workload(on_iter)
  local eg = vyre.egraph(be)
  math_wl.setup(eg)
  eg:rebuild()
  local sched = vyre.egraph.simple()
  for i = 1, iters do
    if i == 2 then callgrind(true) end
    local st = be:stats()
    local x0, s0, n0, q0, k0 = exec_ns(), inseq, nseq, nsteps, st.launches or 0
    local w0, t0 = now(), cpu_ns()
    local rep = eg:run({ iterations = 1, node_limit = 1e12, time_limit = 1e12,
      scheduler = sched })
    local t1, w1 = cpu_ns(), now()
    local x1 = exec_ns()
    local cpu, ex, sq = t1 - t0, x1 - x0, inseq - s0
    on_iter(i, { nodes = rep[1].nodes, wall = w1 - w0, exec = ex, host = cpu - ex,
      inseq = sq - ex, outseq = cpu - sq, seqs = nseq - n0, steps = nsteps - q0,
      launches = (be:stats().launches or 0) - k0 })
    if rep.stop == "saturated" then break end
  end
  callgrind(false)
  eg:free()
end

print(("# host cost per iteration, math workload on the fake CUDA driver (%s); µs; "
  .. "%d run(s), minimum host µs per iteration"):format(tostring(be), reps))
local best = {}
for _ = 1, reps do
  workload(function(i, r)
    if not best[i] or r.host < best[i].host then best[i] = r end
  end)
end
print("iter\tenodes\twall_us\texec_cpu_us\thost_cpu_us\tin_seq_us\tlua_us\tseqs\tsteps\tlaunches")
local sum, k = 0, 0
for i, r in ipairs(best) do
  print(("%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d"):format(i, r.nodes, r.wall // 1000,
    r.exec // 1000, r.host // 1000, r.inseq // 1000, r.outseq // 1000, r.seqs, r.steps,
    r.launches))
  if i > 1 then sum, k = sum + r.host, k + 1 end
end
if k > 0 then
  print(("# host: iterations 2..%d: mean %d us per iteration"):format(#best, sum // k // 1000))
end

if not sample then return end

-- The sampler: a count hook every 100 VM instructions. Each sample weighs the CPU time
-- since the previous one (so time in C functions called from Lua, the binding's and the
-- fake's included, goes to the Lua line that called them), less the fake's kernel
-- execution in between; the running function (self), every function on the stack
-- (inclusive, once per sample) and the line get it.
local self_, incl, lines, total = {}, {}, {}, 0
local last_cpu, last_exec
local function fname(info)
  local n = info.name or ("<%s:%d>"):format(info.short_src, info.linedefined)
  return ("%s (%s:%d)"):format(n, info.short_src, info.linedefined)
end
local function hook()
  local c, x = cpu_ns(), exec_ns()
  local w = (c - last_cpu) - (x - last_exec)
  if w < 0 then w = 0 end
  total = total + w
  local info = debug.getinfo(2, "Sln")
  if info then
    local f = fname(info)
    self_[f] = (self_[f] or 0) + w
    local l = ("%s:%d"):format(info.short_src, info.currentline)
    lines[l] = (lines[l] or 0) + w
    local seen = {}
    for lv = 2, 60 do
      local fi = debug.getinfo(lv, "Sn")
      if not fi then break end
      local g = fname(fi)
      if not seen[g] then
        seen[g] = true
        incl[g] = (incl[g] or 0) + w
      end
    end
  end
  -- the hook's own cost is left out: the clocks are read again at its end
  last_cpu, last_exec = cpu_ns(), exec_ns()
end
workload(function(i)
  if i == 1 then
    last_cpu, last_exec = cpu_ns(), exec_ns()
    debug.sethook(hook, "", 100)
  end
end)
debug.sethook()
local function top(t, n, title)
  local list = {}
  for key, v in pairs(t) do list[#list + 1] = { key, v } end
  table.sort(list, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
  print(("# %s (µs of %d µs host CPU, iterations 2..%d, sampled)"):format(title,
    total // 1000, iters))
  for j = 1, math.min(n, #list) do
    print(("%8d\t%5.1f%%\t%s"):format(list[j][2] // 1000, 100 * list[j][2] / total,
      list[j][1]))
  end
end
top(self_, 25, "top functions, self")
top(incl, 40, "top functions, inclusive")
top(lines, 25, "top lines")
