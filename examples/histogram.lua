-- histogram.lua — 256-bin histogram of bytes with global atomics.
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local common = require("common")

local hist = vyre.parse([[
(program histogram (workgroup 128)
  (buffer data u32 read)
  (buffer bins u32 read_write 256)
  (let i (gid x))
  (if (lt i (len data))
    (then (atomic add bins (and (load data i) 255u32) 1u32))))
]])

local be = common.backend()
local n = 100000
local data = vyre.array("u32", n)
local want = {}
for b = 0, 255 do want[b] = 0 end
local seed = 12345
for i = 1, n do
  seed = (seed * 1103515245 + 12345) % 2147483648
  data[i] = seed % 1000
  local b = data[i] & 255
  want[b] = want[b] + 1
end

local out = be:run(hist, {data = data, bins = vyre.array("u32", 256)}, {n = n})
local total = 0
for b = 0, 255 do
  common.check(out.bins[b + 1] == want[b], "bin %d = %d, want %d", b, out.bins[b + 1], want[b])
  total = total + out.bins[b + 1]
end
common.check(total == n, "total %d, want %d", total, n)
print(("histogram: %d values into 256 bins on %s, bin[0] = %d, total = %d — matches"):format(
  n, be.name, out.bins[1], total))
