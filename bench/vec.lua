-- bench/vec.lua — the vector entry of elementwise programs (docs/ARCHITECTURE.md §5) on
-- the GPU, to compare with bench/lib_baseline.py (torch_saxpy_gbps, cupy_copy_u32_gbps,
-- cupy_sum_f32_gbps) run in the same call.
-- Usage: lua5.4 bench/vec.lua [SCALE]   (SCALE divides every size; default 1)
-- Prints "name value unit" lines:
--   vec_saxpy_gbps          saxpy over 1 GiB per vector through k:launch (the runtime's
--                           choice of entry and grid), device time of a timed sequence;
--   vec_saxpy_*_wall_gbps   the same PTX launched raw, wall time of REPS launches + sync:
--                           `launch` (k:launch), `scalar` (the program's own entry, one
--                           element per invocation), `full` (the vector entry, one step of
--                           4 per thread), `smK` (the vector entry on K blocks per SM, a
--                           grid-stride loop);
--   vec_copy_u32_gbps, vec_fill_u32_gbps, vec_sum_f32_gbps: vyre.lib over 1 GiB (copy and
--                           fill are elementwise; the sum is not, it is the regression
--                           check).
-- GB/s counts the bytes moved: saxpy reads x and y and writes y (12 bytes per element).
local vyre = require("vyre")
local lib = require("vyre.lib")
local now_ns = require("vyre.core").now_ns

local SCALE = tonumber(arg and arg[1] or "") or 1
local REPS, ROUNDS = 20, 5
local GiB = 1 << 30

local common = require("bench.common")
local be = common.cuda()
local out = common.out

local SAXPY = vyre.parse([[
(program saxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y))
    (then (store y i (add (mul a (load x i)) (load y i))))))]])

local n = (GiB // 4) // SCALE
local x, y = be:buffer("f32", n), be:buffer("f32", n)
lib.iota(be, x, 0.0, 1.0 / 1024)
lib.iota(be, y, 1.0, -1.0 / 2048)
local k = be:compile(SAXPY)
assert(k:info().vector, "saxpy has no vector entry")
local args, opts = { x = x, y = y, a = 2.0 }, { n = n }

-- runtime's choice, device time
do
  k:launch(args, opts)
  local b = math.huge
  for _ = 1, ROUNDS do
    local _, t = be:sequence({ { k, args, opts } }, { times = REPS, timed = true })
    b = math.min(b, t.device_ns)
  end
  out("vec_saxpy_gbps", n * 12.0 * REPS / b, "GB/s")
end

-- Best wall time (ns) of REPS calls of fn, then a sync.
local function wall(fn)
  fn()
  be:synchronize()
  local b = math.huge
  for _ = 1, ROUNDS do
    local t0 = now_ns()
    for _ = 1, REPS do fn() end
    be:synchronize()
    b = math.min(b, now_ns() - t0)
  end
  return b / REPS
end

local function row(name, ns) out("vec_saxpy_" .. name .. "_wall_gbps", n * 12.0 / ns, "GB/s") end

row("launch", wall(function() k:launch(args, opts) end))
local wg = 256
local vn = ((n + wg - 1) // wg) * wg -- the program's invocations (its grid x workgroup)
local scalar = be:load_ptx(k.ptx, "saxpy")
local vector = be:load_ptx(k.ptx, "saxpy_v4")
local base = { x:pointer(), y:pointer(), { "u32", n }, { "u32", n }, { "f32", 2.0 } }
row("scalar", wall(function() scalar:launch_raw({ vn // wg }, { wg }, base) end))
local vargs = { base[1], base[2], base[3], base[4], base[5], { "u32", vn } }
local threads = (vn + 3) // 4
row("full", wall(function() vector:launch_raw({ (threads + wg - 1) // wg }, { wg }, vargs) end))
local sms = be:info().sms
for _, per in ipairs({ 2, 4, 8, 16, 32 }) do
  row("sm" .. per, wall(function() vector:launch_raw({ sms * per }, { wg }, vargs) end))
end
scalar:free()
vector:free()

-- vyre.lib: copy and fill (elementwise), sum (not)
do
  local function best(fn)
    fn()
    local b = math.huge
    for _ = 1, ROUNDS do
      local _, t = fn()
      b = math.min(b, t.device_ns > 0 and t.device_ns or t.wall_ns)
    end
    return b
  end
  local src, dst = be:buffer("u32", n), be:buffer("u32", n)
  local ns = best(function() return lib.fill_timed(be, src, 3) end)
  out("vec_fill_u32_gbps", n * 4 / ns, "GB/s")
  ns = best(function() return lib.copy_timed(be, src, dst) end)
  out("vec_copy_u32_gbps", n * 8 / ns, "GB/s")
  ns = best(function() return lib.reduce_timed(be, x, "add") end)
  out("vec_sum_f32_gbps", n * 4 / ns, "GB/s")
  src:free()
  dst:free()
end
local s = be:stats()
out("vec_vector_launches", s.vector_launches, "launches")
