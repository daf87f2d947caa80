-- bench/nvtx/workload.lua — a small program that opens every kind of vyre NVTX range
-- (docs/RUNTIME.md "Profiler ranges"), for looking at them in Nsight: compile, launch,
-- prepared launch, sequence, graph replay, run, megakernel (cooperative) and the host
-- split's round sections. bench/nvtx/run.sh runs it under Nsight Compute (ncu --nvtx),
-- which prints the NVTX range stack of every kernel it profiles, and Nsight Systems
-- where it can make a report. Prints the ranges it expects, one per line after "expect".
local vyre = require("vyre")
local cuda = require("vyre.cuda")

local on, why = cuda.nvtx(true)
assert(on, why)
local be = assert(cuda.device(0))

local INC = vyre.parse([[
(program nv_inc (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]])

-- Two sections: a grid barrier between them (megakernel and round-section ranges).
local GRID = vyre.parse([[
(program nv_grid (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32))))
  (grid_barrier)
  (let j (gid x))
  (if (lt j (len v)) (then (store v j (mul (load v j) 2u32)))))]])

local v = be:buffer("u32", 4096)
local k = be:compile(INC)
k:launch({ v = v })
k:bind({ v = v }):launch()
be:sequence({ { k, { v = v } } }, { times = 2 })
local g = be:graph({ { k, { v = v } } })
g:launch(2)
be:run(INC, { v = vyre.array("u32", 100) })
local gk = be:compile(GRID)
be:grid_sync("cooperative")
gk:launch({ v = v })
be:grid_sync("split")
gk:launch({ v = v })
be:grid_sync("auto")
be:synchronize()
-- v started undefined; only the ranges matter here.
g:free()
print("expect")
for _, r in ipairs({ "vyre compile nv_inc", "vyre launch nv_inc", "vyre prepared launch nv_inc",
  "vyre sequence", "vyre graph replay", "vyre run nv_inc", "vyre megakernel nv_grid",
  "vyre round section nv_grid_s0", "vyre round section nv_grid_s1" }) do
  print(r)
end
