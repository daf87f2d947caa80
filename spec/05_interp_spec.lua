-- 05: whole programs on the reference interpreter: control flow, memory,
-- atomics, shared memory with barriers, launch geometry.
local vyre = require("vyre")
local H = require("spec.helpers")

describe("reference interpreter", function()
  local be = H.ref()

  it("runs saxpy", function()
    local out = be:run(H.saxpy(), { x = vyre.array("f32", { 1, 2, 3 }), y = { 10, 20, 30 },
      a = 2.0 })
    assert.are.same({ 12.0, 24.0, 36.0 }, out.y:totable())
  end)

  it("loads 0 out of bounds and drops out-of-bounds stores", function()
    local p = H.parse([[
(program oob (workgroup 1)
  (buffer x u32 read)
  (buffer y u32 read_write)
  (store y 0u32 (add (load x 5u32) 7u32))
  (store y 3u32 99u32)
  (store y 4294967295u32 99u32)
  (store y 1u32 (load x -1i32)))
]])
    local out = be:run(p, { x = { 1, 2 }, y = { 0, 0, 0 } }, { grid = { 1 } })
    assert.are.same({ 7, 0, 0 }, out.y:totable())
  end)

  it("treats shared arrays the same out of bounds", function()
    local p = H.parse([[
(program soob (workgroup 1)
  (buffer y i32 write 2)
  (shared s i32 4)
  (store s 4u32 5i32)
  (store s 3u32 6i32)
  (store y 0u32 (load s 4u32))
  (store y 1u32 (load s 3u32)))
]])
    assert.are.same({ 0, 6 }, be:run(p, {}, { grid = { 1 } }).y:totable())
  end)

  it("adds 1 atomically from 4096 invocations in 16 workgroups", function()
    local p = H.parse([[
(program count (workgroup 256)
  (buffer c u32 read_write)
  (atomic add c 0u32 1u32))
]])
    local out = be:run(p, { c = { 0 } }, { n = 4096 })
    assert.are.equal(4096, out.c[1])
    local k = be:compile(p)
    local buf = be:buffer("u32", 1)
    k:launch({ c = buf }, { grid = { 16 } })
    assert.are.equal(4096, buf:download()[1])
  end)

  it("returns the old value from atomics, and 0 with no effect out of bounds", function()
    local p = H.parse([[
(program olds (workgroup 1)
  (buffer c i32 read_write)
  (buffer o i32 write 4)
  (let a (atomic max c 0u32 5i32))
  (let b (atomic exchange c 0u32 -3i32))
  (let d (atomic cas c 0u32 -3i32 11i32))
  (let e (atomic add c 9u32 1i32))
  (store o 0u32 a)
  (store o 1u32 b)
  (store o 2u32 d)
  (store o 3u32 e))
]])
    -- one invocation: without a grid, 4 would run (o has 4 elements)
    local out = be:run(p, { c = { 2 } }, { grid = { 1 } })
    assert.are.same({ 2, 5, -3, 0 }, out.o:totable())
    assert.are.same({ 11 }, out.c:totable())
  end)

  it("reduces a workgroup through shared memory with barriers", function()
    local p = H.parse([[
(program reduce (workgroup 64)
  (buffer x u32 read)
  (buffer sums u32 write 4)
  (shared s u32 64)
  (let l (lid x))
  (store s l (load x (gid x)))
  (barrier)
  (for h 0u32 6u32 1u32
    (let stride (shr 32u32 h))
    (if (lt l stride)
      (then (store s l (add (load s l) (load s (add l stride))))))
    (barrier))
  (if (eq l 0u32)
    (then (store sums (wgid x) (load s 0u32)))))
]])
    local data = {}
    for i = 1, 256 do data[i] = i end
    local out = be:run(p, { x = data })
    local want = {}
    for g = 0, 3 do
      local s = 0
      for i = g * 64 + 1, g * 64 + 64 do s = s + i end
      want[g + 1] = s
    end
    assert.are.same(want, out.sums:totable())
  end)

  it("runs loops half-open with steps; a step <= 0 runs zero times; break and return",
    function()
      local p = H.parse([[
(program loops (workgroup 1)
  (param step i32)
  (buffer o i32 write 4)
  (let n 0i32)
  (for i 0i32 10i32 3i32
    (set n (add n 1i32)))
  (store o 0u32 n)
  (let m 0i32)
  (for j 0i32 10i32 step
    (set m (add m 1i32)))
  (store o 1u32 m)
  (let q 0i32)
  (for k 0i32 100i32 1i32
    (if (eq k 5i32)
      (then (break)))
    (set q (add q k)))
  (store o 2u32 q)
  (return)
  (store o 3u32 1i32))
]])
      assert.are.same({ 4, 0, 10, 0 }, be:run(p, { step = 0 }).o:totable())
      assert.are.same({ 4, 0, 10, 0 }, be:run(p, { step = -2 }).o:totable())
      assert.are.same({ 4, 5, 10, 0 }, be:run(p, { step = 2 }).o:totable())
    end)

  it("evaluates select both ways and if/else", function()
    local p = H.parse([[
(program sel (workgroup 4)
  (buffer o i32 write 4)
  (let i (gid x))
  (if (lt i 2u32)
    (then (store o i (select (eq i 0u32) 10i32 20i32)))
    (else (store o i -1i32))))
]])
    assert.are.same({ 10, 20, -1, -1 }, be:run(p, {}).o:totable())
  end)

  it("provides gid, lid, wgid, wgsize and ngroups per axis", function()
    local p = H.parse([[
(program ids (workgroup 2 2)
  (buffer o u32 write 16)
  (let flat (add (gid x) (mul (gid y) (mul (wgsize x) (ngroups x)))))
  (store o flat (add (mul (wgid y) 100u32) (add (mul (lid y) 10u32) (lid x)))))
]])
    local out = be:run(p, {}, { grid = { 2, 2 } })
    assert.are.same({ 0, 1, 0, 1, 10, 11, 10, 11, 100, 101, 100, 101, 110, 111, 110, 111 },
      out.o:totable())
  end)

  it("sizes the grid from n, else the largest bound buffer", function()
    local p = H.parse([[
(program cnt (workgroup 4)
  (buffer x u32 read)
  (buffer c u32 read_write 1)
  (atomic add c 0u32 1u32))
]])
    assert.are.equal(12, be:run(p, { x = vyre.array("u32", 10), c = { 0 } })[ "c" ][1])
    assert.are.equal(8, be:run(p, { x = vyre.array("u32", 10), c = { 0 } }, { n = 5 }).c[1])
    assert.are.equal(24, be:run(p, { x = {}, c = { 0 } }, { grid = { 3, 2 } }).c[1])
    assert.are.same({ 3, 1, 1 }, { vyre.core.grid(p, { 10, 1 }) })
    assert.are.same({ 2, 1, 1 }, { vyre.core.grid(p, { 10, 1 }, 5) })
  end)
end)
