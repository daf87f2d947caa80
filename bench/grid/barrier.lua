-- bench/grid/barrier.lua — the cost of one vyre grid barrier (cooperative kernel,
-- ptx_grid.c) at one block per SM and at full occupancy, as the difference between a
-- loop of K barriers and a loop of none, divided by K; the same for the host split
-- (one kernel per section) and for a host loop of launches with a flag readback.
-- Prints one line per measurement: `vyre_barrier,<mode>,<blocks>,<threads>,<ns>`.
-- Compare with cg_barrier.cu (CUDA C cooperative_groups::this_grid().sync()).
local vyre = require("vyre")
local gpu = assert(require("vyre.cuda").device(0))
local info = gpu:info()
local K = tonumber(arg[1] or "") or 2000
local THREADS = 256

local LOOP = [[
(program gb (workgroup %d)
  (buffer x u32 read_write)
  (param k u32)
  (for r 0u32 k 1u32
    (grid_barrier)
    (store x (gid x) r)))
]]
local p = vyre.parse(LOOP:format(THREADS))
local k = gpu:compile(p)

local function best(f, reps)
  local b = math.huge
  for _ = 1, reps do b = math.min(b, f()) end
  return b
end

local function per_barrier(mode, groups)
  gpu:grid_sync(mode)
  local x = gpu:buffer("u32", groups * THREADS)
  local function t(kk)
    return k:launch_timed({ x = x, k = kk }, { grid = { groups } }).device_ns
  end
  t(1)
  local reps = mode == "split" and 2 or 5
  local kk = mode == "split" and K // 10 or K
  local full, none = best(function() return t(kk) end, reps), best(function() return t(0) end, reps)
  return (full - none) / kk
end

local per_sm = k:occupancy() -- blocks per SM the driver allows for this kernel
local sms = info.sms
print(("# %s, %d SMs, %d blocks/SM at %d threads, K=%d"):format(info.name, sms, per_sm, THREADS, K))
for _, groups in ipairs({ sms, sms * per_sm }) do
  print(("vyre_barrier,cooperative,%d,%d,%.1f"):format(groups, THREADS,
    per_barrier("cooperative", groups)))
end
print(("vyre_barrier,split,%d,%d,%.1f"):format(sms, THREADS, per_barrier("split", sms)))
gpu:grid_sync("auto")

-- A converge round: one barrier with an action (read and zero the flag) per round,
-- against the host loop of launch + flag readback it replaces.
local DEC = vyre.parse(([[
(program dec (workgroup %d)
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (let i (gid x))
  (if (lt i (len x))
    (then (if (gt (load x i) 0u32)
      (then (store x i (sub (load x i) 1u32)) (store flag 0u32 1u32))))))
]]):format(THREADS))
local dk = gpu:compile(DEC)
local R = 1000
local init = {}
for i = 1, sms * THREADS do init[i] = R - 1 end
local function converge_ns(mode)
  local x, f = gpu:buffer("u32", init), gpu:buffer("u32", 1)
  local rounds, t = gpu:megakernel({ { dk, { x = x, flag = f } } },
    { converge = { flag = f, max = R + 5 }, grid_sync = mode, timed = true })
  return t.wall_ns / rounds, rounds
end
converge_ns("cooperative")
for _, mode in ipairs({ "cooperative", "split" }) do
  local ns, rounds = converge_ns(mode)
  print(("vyre_converge_round,%s,%d,%d,%.1f,rounds=%d"):format(mode, sms, THREADS, ns, rounds))
end
local x, f = gpu:buffer("u32", init), gpu:buffer("u32", 1)
local now_ns = require("vyre.core").now_ns
local rounds, start = 0, now_ns()
repeat
  f:upload({ 0 })
  dk:launch({ x = x, flag = f })
  rounds = rounds + 1
until f:download()[1] == 0
local host_ns = (now_ns() - start) / rounds
print(("host_loop_round,launch+readback,%d,%d,%.1f,rounds=%d")
  :format(sms, THREADS, host_ns, rounds))
