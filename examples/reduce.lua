-- reduce.lua — sum of u32 values: each workgroup reduces its slice in shared memory with
-- a barrier per tree level, then one atomic add per workgroup into the result.
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local common = require("common")

local reduce = vyre.parse([[
(program reduce (workgroup 256)
  (buffer data u32 read)
  (buffer sum u32 read_write 1)
  (shared tile u32 256)
  (let l (lid x))
  (let i (gid x))
  (store tile l (load data i))
  (barrier)
  (for s 0u32 8u32 1u32
    (let half (shr 128u32 s))
    (if (lt l half)
      (then (store tile l (add (load tile l) (load tile (add l half))))))
    (barrier))
  (if (eq l 0u32)
    (then (atomic add sum 0u32 (load tile 0u32)))))
]])

local be = common.backend()
local n = 50000
local data = vyre.array("u32", n)
local want = 0
for i = 1, n do data[i] = (i * 7919) % 1000; want = want + data[i] end

local out = be:run(reduce, {data = data, sum = vyre.array("u32", 1)}, {n = n})
common.check(out.sum[1] == want, "sum = %d, want %d", out.sum[1], want)
print(("reduce: sum of %d values on %s = %d — matches"):format(n, be.name, out.sum[1]))
