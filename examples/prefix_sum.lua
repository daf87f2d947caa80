-- prefix_sum.lua — inclusive prefix sum of up to 1024 values in one workgroup
-- (Hillis–Steele scan in shared memory, double-buffered, barriers between steps).
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local common = require("common")

local scan = vyre.parse([[
(program scan (workgroup 1024)
  (buffer data i32 read)
  (buffer out i32 write)
  (shared a i32 1024)
  (shared b i32 1024)
  (let l (lid x))
  (store a l (load data l))
  (barrier)
  (for step 0u32 10u32 1u32
    (let d (shl 1u32 step))
    (let even (eq (and step 1u32) 0u32))
    (let src (select even (load a l) (load b l)))
    (let add_in (select (ge l d) (select even (load a (sub l d)) (load b (sub l d))) 0i32))
    (if even
      (then (store b l (add src add_in)))
      (else (store a l (add src add_in))))
    (barrier))
  (store out l (load a l)))
]])

local be = common.backend()
local n = 1000
local data = vyre.array("i32", n)
for i = 1, n do data[i] = (i % 7) - 3 end

local out = be:run(scan, {data = data, out = vyre.array("i32", n)}, {grid = {1, 1, 1}})
local acc = 0
for i = 1, n do
  acc = acc + data[i]
  common.check(out.out[i] == acc, "out[%d] = %d, want %d", i, out.out[i], acc)
end
print(("prefix_sum: %d values in one workgroup on %s, last = %d — matches")
  :format(n, be.name, out.out[n]))
