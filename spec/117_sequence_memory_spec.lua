-- Spec 117: be:sequence keeps its step memory between calls (lsequence.c, one block per
-- Lua state, not zeroed; issue 25 §6). What must still hold: a sequence run while another
-- reads its steps (here from an opts table's __index) gets memory of its own, a sequence
-- that raises leaves the block free for the next, lists longer than the kept block and
-- lists of other kernels after them run right, and every step reads only its own
-- arguments (no slot left over from an earlier, wider step).
local vyre = require("vyre")

local ADD = [[
(program seqmem_add (workgroup 64)
  (buffer v u32 read_write)
  (param k u32)
  (param n u32)
  (let i (gid x))
  (if (lt i n) (then (store v i (add (load v i) k)))))]]

-- six buffers and two params: a wider layout than ADD's
local WIDE = [[
(program seqmem_wide (workgroup 64)
  (buffer a u32 read)
  (buffer b u32 read)
  (buffer c u32 read)
  (buffer d u32 read)
  (buffer e u32 read)
  (buffer out u32 write)
  (param k u32)
  (param n u32)
  (let i (gid x))
  (if (lt i n)
    (then (store out i (add k (add (load a i) (add (load b i) (add (load c i)
      (add (load d i) (load e i))))))))))]]

local function values(arr)
  local t = {}
  for i = 1, #arr do t[i] = arr[i] end
  return t
end

describe("be:sequence's kept step memory", function()
  local be, add, wide
  setup(function()
    be = vyre.backend("reference")
    add = be:compile(vyre.parse(ADD))
    wide = be:compile(vyre.parse(WIDE))
  end)
  teardown(function() be:free() end)

  it("gives a sequence run while another reads its steps memory of its own", function()
    local outer, inner = be:buffer("u32", { 1, 2, 3, 4 }), be:buffer("u32", { 10, 20, 30, 40 })
    local inner_res
    -- the outer's second step reads opts.n through __index, which runs a whole sequence
    local opts = setmetatable({}, { __index = function(_, key)
      if key ~= "n" then return nil end
      inner_res = be:sequence({ { add, { v = inner, k = 5, n = 4 }, { n = 4 } },
        { add, { v = inner, k = 1, n = 4 }, { n = 4 } } }, { readback = { inner } })
      return 4
    end })
    local res = be:sequence({ { add, { v = outer, k = 100, n = 4 }, { n = 4 } },
      { add, { v = outer, k = 1000, n = 4 }, opts } }, { readback = { outer } })
    assert.same({ 1101, 1102, 1103, 1104 }, values(res[1]))
    assert.same({ 16, 26, 36, 46 }, values(inner_res[1]))
  end)

  it("is free again after a sequence that raises", function()
    local v = be:buffer("u32", { 0, 0 })
    for round = 1, 3 do
      local ok, err = pcall(be.sequence, be, { { add, { v = v, k = 1, n = 2 }, { n = 2 } },
        { add, { v = v, k = 1, nope = 2 }, { n = 2 } } })
      assert.is_false(ok)
      assert.matches("unknown argument 'nope'", tostring(err), 1, true)
      local res = be:sequence({ { add, { v = v, k = round, n = 2 }, { n = 2 } } },
        { readback = { v } })
      -- the raising call launched nothing: only the good calls added
      assert.same({ round * (round + 1) // 2, round * (round + 1) // 2 }, values(res[1]))
    end
  end)

  it("runs lists longer than the kept block, and narrower steps after wider ones", function()
    local bufs = {}
    for j = 1, 5 do bufs[j] = be:buffer("u32", { j, j, j }) end
    local out = be:buffer("u32", 3)
    local v = be:buffer("u32", { 0, 0, 0 })
    -- 1200 steps: more than the 4 MiB block holds (a step's memory is ~4.5 KiB)
    local steps = {}
    for i = 1, 1200 do steps[i] = { add, { v = v, k = 1, n = 3 }, { n = 3 } } end
    local res = be:sequence(steps, { readback = { v } })
    assert.same({ 1200, 1200, 1200 }, values(res[1]))
    for _ = 1, 2 do
      res = be:sequence({ { wide, { a = bufs[1], b = bufs[2], c = bufs[3], d = bufs[4],
        e = bufs[5], out = out, k = 7, n = 3 }, { n = 3 } },
        { add, { v = out, k = 1, n = 3 }, { n = 3 } } }, { readback = { out } })
      assert.same({ 23, 23, 23 }, values(res[1])) -- 1+2+3+4+5 + 7, then + 1
    end
    -- a missing param is still reported after a wider step filled more slots
    local ok, err = pcall(be.sequence, be, { { wide, { a = bufs[1], b = bufs[2],
      c = bufs[3], d = bufs[4], e = bufs[5], out = out, k = 7, n = 3 }, { n = 3 } },
      { add, { v = v, n = 3 }, { n = 3 } } })
    assert.is_false(ok)
    assert.matches("missing param 'k'", tostring(err), 1, true)
  end)
end)
