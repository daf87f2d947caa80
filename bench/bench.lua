-- bench/bench.lua — the Lua side of the CUDA benchmarks (see bench/README.md).
-- Usage: lua5.4 bench/bench.lua OUT_DIR [N] [SAXPY_BYTES]
-- Writes OUT_DIR/inc.ptx and OUT_DIR/saxpy.ptx (the exact PTX the C baselines load)
-- and prints "name value unit" lines, like bench/baseline.c.
local vyre = require("vyre")
local cuda = require("vyre.cuda")

local out_dir = assert(arg[1], "usage: bench.lua OUT_DIR [N] [SAXPY_BYTES]")
local N = tonumber(arg[2] or "") or 100000
local SAXPY_BYTES = tonumber(arg[3] or "") or (1 << 30)

local be, why = cuda.device(0)
if not be then
  io.stderr:write("CUDA is not usable: " .. tostring(why) .. "\n")
  os.exit(2)
end

local INC = vyre.parse([[
(program inc (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]])
local SAXPY = vyre.parse([[
(program saxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y))
    (then (store y i (add (mul a (load x i)) (load y i))))))]])

local now_ns = require("vyre.core").now_ns

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

local k = be:compile(INC)
local ks = be:compile(SAXPY)
write(out_dir .. "/inc.ptx", k.ptx)
write(out_dir .. "/saxpy.ptx", ks.ptx)

local v = be:buffer("u32", 1024)
local args, opts = { v = v }, { n = 1024 }

-- Wall time of fn plus a final synchronize, in ns (monotonic clock).
local function wall(fn)
  local t0 = now_ns()
  fn()
  be:synchronize()
  return now_ns() - t0
end

-- CPU cost per launch at the driver's floor: batches of 128 launches (well under the
-- launch queue's depth, so the driver never waits for the GPU), each timed alone and
-- drained untimed before the next; the median batch, per launch. baseline.c's
-- "enqueue" mode measures the plain-C loop the same way.
local BATCH = 128
local function enqueue_ns(launch)
  local per = {}
  for b = 1, math.max(N // BATCH, 50) do
    local t0 = now_ns()
    for _ = 1, BATCH do launch() end
    per[b] = (now_ns() - t0) / BATCH
    be:synchronize()
  end
  table.sort(per)
  return per[#per // 2 + 1]
end

-- (a) launches of a compiled kernel on resident buffers
for _ = 1, 1000 do k:launch(args, opts) end
be:synchronize()
local t = wall(function()
  for _ = 1, N do k:launch(args, opts) end
end)
print(("lua_launch_ns %.1f ns"):format(t / N))

-- (a') the same launches through a bound launch: names resolved once by k:bind
local l = k:bind(args, opts)
for _ = 1, 1000 do l:launch() end
be:synchronize()
t = wall(function()
  for _ = 1, N do l:launch() end
end)
print(("lua_bound_launch_ns %.1f ns"):format(t / N))

print(("lua_enqueue_ns %.1f ns"):format(enqueue_ns(function() k:launch(args, opts) end)))
print(("lua_bound_enqueue_ns %.1f ns"):format(enqueue_ns(l)))

-- (b) 4 KiB upload + launch + download + sync
local host = vyre.array("u32", 1024)
local R = math.max(N // 10, 100)
t = wall(function()
  for _ = 1, R do
    v:upload(host)
    k:launch(args, opts)
    v:download()
  end
end)
print(("lua_roundtrip_ns %.1f ns"):format(t / R))

-- (c) graph replay: 100 launches captured once
local steps = {}
for i = 1, 100 do steps[i] = { k, args, opts } end
local g = be:graph(steps)
g:launch(1)
local reps = math.max(N // 100, 1)
local gt = g:launch(reps, true)
print(("lua_graph_ns %.1f ns"):format(gt.wall_ns / (reps * 100)))

-- (d) saxpy over SAXPY_BYTES per vector, device time from events (skipped when 0)
if SAXPY_BYTES == 0 then return end
local count = SAXPY_BYTES // 4
local x = be:buffer("f32", count)
local y = be:buffer("f32", count)
-- Real data, not zeros (zeros can hide unwritten outputs and run unrealistically fast).
local fill = be:compile(vyre.parse([[
(program fill (workgroup 256)
  (buffer v f32 write)
  (param s f32)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (mul s (cast f32 (and i 1023u32)))))))]]))
fill:launch({ v = x, s = 0.5 }, { n = count })
fill:launch({ v = y, s = -0.25 }, { n = count })
local sargs, sopts = { x = x, y = y, a = 2.0 }, { n = count }
ks:launch(sargs, sopts)
local _, st = be:sequence({ { ks, sargs, sopts } }, { times = 10, timed = true })
print(("lua_saxpy_gbps %.3f GB/s"):format(3.0 * SAXPY_BYTES * 10 / st.device_ns))
