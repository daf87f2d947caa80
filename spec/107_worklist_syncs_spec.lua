-- 107: worklist rounds cost no host synchronisation (issue 21 §2, issue 23 §2): the
-- worklist's host side goes through the backend interface (vyre_backend_worklist_*),
-- and its advance is enqueued on the device's stream, so host-driven rounds (a launch
-- sized by the worklist, then wl:advance()) count no `syncs` on the fake CUDA driver,
-- and a sequence converging on a worklist waits once per round for the round and once
-- to read the count, plus one (the counts as of 2026-11-26, before and after the move).
-- The same rounds on the reference give the same levels.
local vyre = require("vyre")
local H = require("spec.helpers")

-- A vertex's unreached neighbours get its level + 1 and are pushed for the next round.
local BFS_NEXT = H.parse([[
(program bfs_syncs (workgroup 64)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer level u32 read_write)
  (worklist frontier u32)
  (let i (gid x))
  (if (lt i (len frontier))
    (then
      (let v (load frontier i))
      (let d (add (load level v) 1u32))
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (let w (load col e))
        (let old (atomic cas level w 4294967295u32 d))
        (if (eq old 4294967295u32)
          (then (push frontier w)))))))
]])

local NV = 24 -- a path 0 - 1 - ... - 23: 23 rounds push, the 24th pushes nothing

local function graph(be)
  local rowptr, col = {}, {}
  for v = 0, NV - 1 do
    rowptr[#rowptr + 1] = #col
    if v + 1 < NV then col[#col + 1] = v + 1 end
  end
  rowptr[#rowptr + 1] = #col
  local level = {}
  for i = 1, NV do level[i] = 0xffffffff end
  level[1] = 0
  return be:buffer("u32", #rowptr):upload(rowptr), be:buffer("u32", #col):upload(col),
    be:buffer("u32", NV):upload(level)
end

-- The counters' change over f, after a synchronisation on each side.
local function counted(be, f)
  be:synchronize()
  local s0 = be:stats()
  f()
  be:synchronize()
  local s1 = be:stats()
  return (s1.syncs or 0) - (s0.syncs or 0) - 1, (s1.launches or 0) - (s0.launches or 0)
end

local function suite(open)
  local be
  before_each(function() be = open() end)

  it("host-driven rounds: a sized launch and an advance, no sync", function()
    local k = be:compile(BFS_NEXT)
    local bR, bC, bL = graph(be)
    local wl = be:worklist("u32", 64):push({ 0 })
    local syncs, launches = counted(be, function()
      for _ = 1, 10 do
        k:launch({ rowptr = bR, col = bC, level = bL, frontier = wl }, { n = wl })
        wl:advance()
      end
    end)
    assert.are.equal(0, syncs)
    if be:info().backend == "cuda" then assert.are.equal(20, launches) end -- round + advance
    assert.are.equal(1, wl:size())
    assert.are.equal(10, bL:download()[11])
  end)

  it("a sequence converging on a worklist: a wait and a count read per round", function()
    local k = be:compile(BFS_NEXT)
    local bR, bC, bL = graph(be)
    local wl = be:worklist("u32", 64):push({ 0 })
    local res
    local syncs, launches = counted(be, function()
      res = be:sequence({ { k, { rowptr = bR, col = bC, level = bL, frontier = wl }, { n = wl } } },
        { converge = { worklist = wl, max = 1000 } })
    end)
    local rounds = res.rounds
    assert.are.equal(NV, rounds)
    if be:info().backend == "cuda" then
      assert.are.equal(2 * rounds + 1, syncs)
      assert.are.equal(2 * rounds, launches)
    end
    local want = {}
    for i = 1, NV do want[i] = i - 1 end
    assert.are.same(want, bL:download():totable())
  end)
end

describe("worklist rounds on the reference", function()
  suite(function() return vyre.reference.new() end)
end)

describe("worklist rounds on the fake CUDA driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end
  suite(function() return F.device() end)
end)
