-- bench/fuse/fuse.lua — launch fusion (issue 15): a chain of four elementwise ops over
-- N f32 (default 256 Mi): t1 = a*x, t2 = t1 + y, t3 = max(t2, 0), out = t3*t3. Unfused:
-- four kernels in one be:sequence with three intermediate buffers; fused: the one
-- program vyre.fuse makes with t1..t3 internal. Device time of the best of 5 after a
-- warm-up. Compare with bench/fuse/fuse_baseline.py (torch eager, same chain).
-- Usage: lua5.4 bench/fuse/fuse.lua [N]
local vyre = require("vyre")

local N = tonumber(arg and arg[1] or "") or 256 * 1024 * 1024
local REPS = 5

local common = require("bench.common")
local be = common.cuda()

local function stage(name, src, dst, expr, extra)
  return vyre.parse(([[(program %s (workgroup 256) (buffer %s f32 read) %s (buffer %s f32 write)
    (param a f32)
    (let i (gid x)) (if (lt i (len %s)) (then (store %s i %s))))]]):format(name, src,
    extra or "", dst, dst, dst, expr))
end

local chain = {
  stage("f_scale", "x", "t1", "(mul a (load x i))"),
  stage("f_addy", "t1", "t2", "(add (load t1 i) (load y i))", "(buffer y f32 read)"),
  stage("f_relu", "t2", "t3", "(max (load t2 i) 0.0f32)"),
  stage("f_square", "t3", "out", "(mul (load t3 i) (load t3 i))"),
}
local fused = vyre.fuse(chain, { internal = { "t1", "t2", "t3" } })

local x, y, out = be:buffer("f32", N), be:buffer("f32", N), be:buffer("f32", N)
local t1, t2, t3 = be:buffer("f32", N), be:buffer("f32", N), be:buffer("f32", N)
local fill = be:compile(vyre.parse([[(program fill_xy (workgroup 256) (buffer x f32 write)
  (buffer y f32 write) (let i (gid x)) (if (lt i (len x)) (then
  (store x i (cast f32 (rem i 1000u32))) (store y i (sub 500.0f32 (cast f32 (rem i 777u32)))))))]]))
fill:launch({ x = x, y = y })

local ks = {}
for i, p in ipairs(chain) do ks[i] = be:compile(p) end
local kf = be:compile(fused)
local unfused_steps = {
  { ks[1], { x = x, t1 = t1, a = 1.5 } },
  { ks[2], { t1 = t1, y = y, t2 = t2, a = 1.5 } },
  { ks[3], { t2 = t2, t3 = t3, a = 1.5 } },
  { ks[4], { t3 = t3, out = out, a = 1.5 } },
}
local fused_args = { x = x, y = y, out = out, a = 1.5, t1_len = N, t2_len = N, t3_len = N }
local fused_steps = { { kf, fused_args } }

local function best(steps)
  be:sequence(steps)
  local b = math.huge
  for _ = 1, REPS do
    local _, t = be:sequence(steps, { timed = true })
    b = math.min(b, t.device_ns > 0 and t.device_ns or t.wall_ns)
  end
  return b
end

local ns_unfused = best(unfused_steps)
local check_unfused = out:download({ count = math.min(N, 1024) })
local ns_fused = best(fused_steps)
local check_fused = out:download({ count = math.min(N, 1024) })
assert(check_unfused:bytes() == check_fused:bytes(), "fused and unfused results differ")
print(("fuse_unfused_ms %.3f ms"):format(ns_unfused / 1e6))
print(("fuse_fused_ms %.3f ms"):format(ns_fused / 1e6))
print(("fuse_speedup %.3f x"):format(ns_unfused / ns_fused))
print(("fuse_fused_gbps %.1f GB/s"):format(N * 12 / ns_fused)) -- x, y in; out
