-- 95: convergence decided on the device (issue 23 §2, docs/GRID.md): a cooperative
-- megakernel's rounds come back with the run's one synchronisation (the completion wait,
-- outside the timed region, so the speedup gate's timed host syncs are 0); a converge
-- round costs one grid barrier beyond those its steps need; the grid barrier's PTX (one
-- release atomic per block, relaxed spin, one acquire) passes ptxas on every target; and
-- the device work-queue planner (vyre.planners.workqueue) sizes be:worklist.
local vyre = require("vyre")
local H = require("spec.helpers")

local DEC = [[
(program dec (workgroup 64)
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (let i (gid x))
  (if (lt i (len x))
    (then (if (gt (load x i) 0u32)
      (then (store x i (sub (load x i) 1u32)) (store flag 0u32 1u32))))))]]

local COPY = [[
(program copy (workgroup 64)
  (buffer x u32 read)
  (buffer y u32 write)
  (let i (gid x))
  (if (lt i (len y)) (then (store y i (load x (rem i (len x)))))))]]

-- BFS whose rounds converge on its worklist inside one dispatch: (converge front MAX ...)
-- advances `front` at every round's end on the device (issue 23 §2).
local BFS_CONVERGE = [[
(program bfs_conv (workgroup 32)
  (worklist front u32)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer level u32 read_write)
  (param maxr u32)
  (converge front maxr
    (let i (gid x))
    (if (lt i (len front))
      (then
        (let v (load front i))
        (let d (add (load level v) 1u32))
        (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
          (let u (load col e))
          (let old (atomic cas level u 4294967295u32 d))
          (if (eq old 4294967295u32) (then (push front u))))))))]]

-- The same round as a program of its own, for the host loop (be:sequence converge).
local BFS_ROUND = [[
(program bfs_round (workgroup 32)
  (worklist front u32)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer level u32 read_write)
  (let i (gid x))
  (if (lt i (len front))
    (then
      (let v (load front i))
      (let d (add (load level v) 1u32))
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (let u (load col e))
        (let old (atomic cas level u 4294967295u32 d))
        (if (eq old 4294967295u32) (then (push front u)))))))]]

local INF = 0xffffffff

-- A seeded graph in CSR (each vertex: its successor and two pseudo-random chords).
local function graph(n, seed)
  local rowptr, col = { 0 }, {}
  local s = seed
  for v = 0, n - 1 do
    s = (s * 1103515245 + 12345) % 2147483648
    for _, u in ipairs({ (v + 1) % n, s % n, (v * 7 + seed) % n }) do col[#col + 1] = u end
    rowptr[#rowptr + 1] = #col
  end
  return rowptr, col
end

-- Levels from vertex 0 in plain Lua, and the rounds a frontier BFS runs (max level + 1).
local function lua_bfs(n, rowptr, col)
  local lvl = { [0] = 0 }
  local q, h, top = { 0 }, 1, 0
  while h <= #q do
    local v = q[h]
    h = h + 1
    for e = rowptr[v + 1], rowptr[v + 2] - 1 do
      local u = col[e + 1]
      if lvl[u] == nil then
        lvl[u] = lvl[v] + 1
        if lvl[u] > top then top = lvl[u] end
        q[#q + 1] = u
      end
    end
  end
  local out = {}
  for i = 0, n - 1 do out[i + 1] = lvl[i] or INF end
  return out, top + 1
end

-- Runs BFS_CONVERGE on be: levels (a table), rounds, the worklist.
-- Runs BFS_CONVERGE on be: levels (a table), rounds, the worklist, the kernel, and the
-- synchronisations the launch and k:rounds() took.
local function run_converge(be, n, rowptr, col, max, cap)
  local k = be:compile(vyre.parse(BFS_CONVERGE))
  local init = {}
  for i = 1, n do init[i] = INF end
  init[1] = 0
  local lv = be:buffer("u32", init)
  local wl = be:worklist("u32", cap or n)
  wl:push({ 0 })
  local args = { front = wl, rowptr = be:buffer("u32", rowptr), col = be:buffer("u32", col),
    level = lv, maxr = max or 1000 }
  be:synchronize()
  local s0 = be:stats().syncs or 0
  k:launch(args, { grid = { (n + 31) // 32, 1, 1 } })
  local rounds = k:rounds()
  local syncs = (be:stats().syncs or 0) - s0
  return lv:download():totable(), rounds, wl, k, syncs
end

-- A second step of each round: counts the current items (reads the worklist, writes a
-- buffer of its own), so a round has two steps in one layer.
local COUNT = [[
(program count_items (workgroup 32)
  (worklist front u32)
  (buffer seen u32 read_write)
  (let i (gid x))
  (if (lt i (len front)) (then (atomic add seen 0u32 1u32))))]]

-- be:megakernel over BFS_ROUND (+ COUNT) sized by the worklist, converging on it.
local function run_mega(be, n, rowptr, col, mode, cap, with_count)
  local k = be:compile(vyre.parse(BFS_ROUND))
  local init = {}
  for i = 1, n do init[i] = INF end
  init[1] = 0
  local lv = be:buffer("u32", init)
  local wl = be:worklist("u32", cap or n)
  wl:push({ 0 })
  local seen = be:buffer("u32", 1)
  local steps = { { k, { front = wl, rowptr = be:buffer("u32", rowptr),
    col = be:buffer("u32", col), level = lv }, { n = wl } } }
  if with_count then
    steps[2] = { be:compile(vyre.parse(COUNT)), { front = wl, seen = seen }, { n = wl } }
  end
  local opts = { converge = { worklist = wl, max = 1000 }, grid_sync = mode, timed = true }
  local plan = be:plan(steps, opts)
  be:synchronize()
  local s0 = be:stats().syncs or 0
  local rounds, t = be:megakernel(steps, opts)
  local syncs = (be:stats().syncs or 0) - s0
  return { levels = lv:download():totable(), rounds = rounds, wl = wl, plan = plan,
    syncs = syncs, timing = t, seen = seen:download():totable()[1] }
end

-- A step with shared memory and a workgroup barrier, sized by its worklist: each round
-- halves the items (through a shared tile) and pushes the non-zero halves.
local HALVE_SHARED = [[
(program halve_sh (workgroup 8)
  (worklist w u32)
  (buffer seen u32 read_write)
  (shared tile u32 8)
  (let i (gid x))
  (let l (lid x))
  (if (lt i (len w)) (then (store tile l (load w i))))
  (barrier)
  (if (lt i (len w))
    (then
      (let v (shr (load tile l) 1u32))
      (atomic add seen 0u32 1u32)
      (if (gt v 0u32) (then (push w v))))))]]

-- rounds, items seen, items left: 40 7 1 100 3 halve in 7 rounds through 19 items
local function run_halve(be)
  local k = be:compile(vyre.parse(HALVE_SHARED))
  local wl = be:worklist("u32", 64)
  wl:push({ 40, 7, 1, 100, 3 })
  local seen = be:buffer("u32", 1)
  local r = be:megakernel({ { k, { w = wl, seen = seen }, { n = wl } } },
    { converge = { worklist = wl, max = 100 } })
  return { r, seen:download():totable()[1], wl:size() }
end

-- The grid barriers of a composed megakernel's PTX: "// grid barrier N" comments.
local function barriers(text)
  local n = 0
  for _ in text:gmatch("// grid barrier %d+") do n = n + 1 end
  return n
end

describe("device convergence: barriers per round (both backends' plans)", function()
  it("a converge round has one barrier beyond those its steps' layers need", function()
    local be = H.ref()
    local dec = be:compile(vyre.parse(DEC))
    local copy = be:compile(vyre.parse(COPY))
    local x, y, f = be:buffer("u32", 100), be:buffer("u32", 100), be:buffer("u32", 1)
    -- one layer per round: the round's own barrier is the only one in the loop
    local one = be:plan({ { dec, { x = x, flag = f } } }, { converge = { flag = f, max = 9 } })
    assert.are.equal(1, #one.layers)
    -- two dependent layers (dec writes x, copy reads it): one barrier between them, and
    -- the round's barrier closes the second layer
    local two = be:plan({ { dec, { x = x, flag = f } }, { copy, { x = x, y = y } } },
      { converge = { flag = f, max = 9 } })
    assert.are.equal(2, #two.layers)
    assert.are.equal(1, #two.barriers)
    -- in the PTX: the composed program's barriers are the entry barrier (prefix/rounds),
    -- the converge entry, one between the layers and the round's: no extra barrier for
    -- the flag test (it is the round barrier's action)
    local p1 = vyre.parse(one.text)
    local p2 = vyre.parse(two.text)
    local b1 = barriers(vyre.ptx(p1, { sm = 90 }))
    local b2 = barriers(vyre.ptx(p2, { sm = 90 }))
    assert.are.equal(1, b2 - b1)
  end)
end)

describe("converge on a worklist, on the reference", function()
  it("runs BFS rounds in one dispatch: plain Lua's levels, one round per level", function()
    for _, n in ipairs({ 1, 40, 300 }) do
      local rowptr, col = graph(n, n)
      local want, rounds = lua_bfs(n, rowptr, col)
      local got, r, wl = run_converge(H.ref(), n, rowptr, col)
      assert.are.same(want, got)
      assert.are.equal(rounds, r)
      assert.are.equal(0, wl:size()) -- the last round pushed nothing
    end
  end)

  it("gives the host loop's levels and rounds bit for bit (be:sequence converge)", function()
    local be = H.ref()
    local n = 500
    local rowptr, col = graph(n, 7)
    local got, r = run_converge(be, n, rowptr, col)
    local k = be:compile(vyre.parse(BFS_ROUND))
    local init = {}
    for i = 1, n do init[i] = INF end
    init[1] = 0
    local lv = be:buffer("u32", init)
    local wl = be:worklist("u32", n)
    wl:push({ 0 })
    local out = be:sequence({ { k, { front = wl, rowptr = be:buffer("u32", rowptr),
      col = be:buffer("u32", col), level = lv }, { n = wl } } },
      { converge = { worklist = wl, max = 1000 } })
    assert.are.equal(out.rounds, r)
    assert.are.same(lv:download():totable(), got)
  end)

  it("is spelled k:converge(k.frontier, max, fn) in the DSL", function()
    local P = vyre.program("halve", { workgroup = 4,
      vyre.worklist("w", "u32"), vyre.buffer("seen", "u32"), vyre.param("max", "u32") },
      function(k)
        k:converge(k.w, k.max, function()
          local i = k:let("i", k.gid.x)
          k:when(i:lt(k.w:len()), function()
            local v = k:let("v", k.w[i] >> 1)
            k:atomic("add", k.seen, 0, 1)
            k:when(v:gt(0), function() k.w:push(v) end)
          end)
        end)
      end)
    assert.truthy(tostring(P):find("(converge w max", 1, true), tostring(P))
    local be = H.ref()
    local k = be:compile(P)
    local wl = be:worklist("u32", 64)
    wl:push({ 40, 7, 1 })
    local seen = be:buffer("u32", 1)
    k:launch({ w = wl, seen = seen, max = 100 }, { grid = { 4, 1, 1 } })
    -- 40 20 10 5 2 1 | 7 3 1 | 1: the items of every round, 6 rounds
    assert.are.equal(6, k:rounds())
    assert.are.equal(10, seen:download():totable()[1])
    assert.are.equal(0, wl:size())
  end)

  it("refuses to size a program with grid statements by a worklist, with a Fix", function()
    local be = H.ref()
    local k = be:compile(vyre.parse(BFS_CONVERGE))
    local wl = be:worklist("u32", 8)
    local b = be:buffer("u32", 8)
    local e = H.error_of(k.launch, k, { front = wl, rowptr = b, col = b, level = b, maxr = 3 },
      { n = wl })
    assert.truthy(e:find("cannot be sized by a worklist", 1, true), e)
    assert.truthy(e:find("Fix: give it a grid", 1, true), e)
  end)

  it("stops at MAX rounds with the pushed items current", function()
    local n = 300
    local rowptr, col = graph(n, 3)
    local _, rounds = lua_bfs(n, rowptr, col)
    assert.is_true(rounds > 3)
    local got, r, wl = run_converge(H.ref(), n, rowptr, col, 3)
    assert.are.equal(3, r)
    local fresh = 0
    for i = 1, n do if got[i] == 3 then fresh = fresh + 1 end end
    assert.are.equal(fresh, wl:size()) -- level 3's vertices wait as the current items
  end)

  it("stops after a round that overflowed and reports the capacity needed", function()
    local n = 300
    local rowptr, col = graph(n, 5)
    local e = H.error_of(run_converge, H.ref(), n, rowptr, col, 1000, 2)
    assert.truthy(e:find("worklist overflow", 1, true), e)
    assert.truthy(e:find("worklist of capacity 2", 1, true), e)
    assert.truthy(e:find("Fix: create the worklist with a capacity of at least", 1, true), e)
  end)
end)

describe("megakernels converging on a worklist, on the reference", function()
  it("composes the rounds into one program: plain Lua's levels, the host loop's rounds",
    function()
    local n = 400
    local rowptr, col = graph(n, 13)
    local want, rounds = lua_bfs(n, rowptr, col)
    local be = H.ref()
    local r = run_mega(be, n, rowptr, col, nil, nil, true)
    assert.are.same(want, r.levels)
    assert.are.equal(rounds, r.rounds)
    assert.are.equal(0, r.wl:size())
    -- COUNT saw every vertex reached once, as a current item of some round
    local reached = 0
    for i = 1, n do if want[i] ~= INF then reached = reached + 1 end end
    assert.are.equal(reached, r.seen)
    -- the plan: one layer (worklists add no dependency inside a round), the converge on
    -- the composed worklist, the work-queue plan of the worklist, where rounds are decided
    local p = r.plan
    assert.are.equal(1, #p.layers)
    assert.are.same({ 1, 2 }, p.layers[1].steps)
    assert.truthy(p.text:find("(converge mg_w0 mg_max", 1, true), p.text)
    assert.truthy(p.text:find("(worklist mg_w0 u32)", 1, true))
    assert.are.equal(n, p.worklist.capacity)
    assert.are.equal("worklist", p.facts.converge_on)
    assert.truthy(p.reason:find("worklist rounds", 1, true), p.reason)
    -- the same steps as a host loop (be:sequence): bit for bit
    local k = be:compile(vyre.parse(BFS_ROUND))
    local init = {}
    for i = 1, n do init[i] = INF end
    init[1] = 0
    local lv = be:buffer("u32", init)
    local wl = be:worklist("u32", n)
    wl:push({ 0 })
    local out = be:sequence({ { k, { front = wl, rowptr = be:buffer("u32", rowptr),
      col = be:buffer("u32", col), level = lv }, { n = wl } } },
      { converge = { worklist = wl, max = 1000 } })
    assert.are.equal(out.rounds, r.rounds)
    assert.are.same(lv:download():totable(), r.levels)
  end)

  it("costs one barrier per round beyond its layers' (the advance is the round barrier's "
    .. "action)", function()
    local n = 64
    local rowptr, col = graph(n, 2)
    local one = run_mega(H.ref(), n, rowptr, col).plan
    local two = run_mega(H.ref(), n, rowptr, col, nil, nil, true).plan
    -- COUNT joins BFS_ROUND's layer: the same barriers
    assert.are.equal(barriers(vyre.ptx(vyre.parse(one.text), { sm = 90 })),
      barriers(vyre.ptx(vyre.parse(two.text), { sm = 90 })))
    -- prefix/rounds entry barrier, converge entry, the round's barrier: 3 in all
    assert.are.equal(3, barriers(vyre.ptx(vyre.parse(one.text), { sm = 90 })))
  end)

  it("sizes a step with shared memory and a barrier by the worklist", function()
    assert.are.same({ 7, 19, 0 }, run_halve(H.ref()))
  end)

  it("drains a sized step in windows of the work-queue plan (backpressure)", function()
    local n = 500
    local rowptr, col = graph(n, 21)
    local want, rounds = lua_bfs(n, rowptr, col)
    -- a drain window of 64 items: 2 workgroups of 32 loop over each round's items
    local r = run_mega(H.ref(), n, rowptr, col, nil, { capacity = n, drain_items = 64 })
    assert.are.same(want, r.levels)
    assert.are.equal(rounds, r.rounds)
    assert.are.equal(2, r.plan.grid.virtual_workgroups)
    assert.are.equal("chunked_resident_drain", r.plan.worklist.strategy)
    assert.truthy(r.plan.text:find("(for mg1_c mg1_v mg1_dgx", 1, true), r.plan.text)
    -- without a window the layer covers the capacity
    local whole = run_mega(H.ref(), n, rowptr, col)
    assert.are.equal((n + 31) // 32, whole.plan.grid.virtual_workgroups)
    assert.are.same(want, whole.levels)
  end)

  it("reports an overflow after the run, naming the capacity needed", function()
    local n = 300
    local rowptr, col = graph(n, 5)
    local e = H.error_of(run_mega, H.ref(), n, rowptr, col, nil, 2)
    assert.truthy(e:find("worklist overflow", 1, true), e)
    assert.truthy(e:find("Fix: create the worklist with a capacity of at least", 1, true), e)
  end)
end)

local function find_ptxas()
  for _, path in ipairs({ os.getenv("PTXAS") or "", "/usr/local/cuda/bin/ptxas" }) do
    if path ~= "" and io.open(path, "r") then return path end
  end
  local h = io.popen("command -v ptxas 2>/dev/null")
  local p = h and h:read("l")
  if h then h:close() end
  return p
end

describe("device convergence PTX", function()
  it("assembles with ptxas (sm_75, sm_80, sm_90): the converge program and the composed "
    .. "worklist megakernel", function()
    local ptxas = find_ptxas()
    if not ptxas or ptxas == "" then
      pending("no ptxas on this machine: set PTXAS or install the CUDA toolkit")
      return
    end
    local n = 64
    local rowptr, col = graph(n, 2)
    local texts = { BFS_CONVERGE, run_mega(H.ref(), n, rowptr, col, nil, nil, true).plan.text }
    local path = os.tmpname()
    for _, t in ipairs(texts) do
      for _, sm in ipairs({ 75, 80, 90 }) do
        local ptx = vyre.ptx(vyre.parse(t), { sm = sm })
        -- the barrier: one release atomic, a relaxed spin, one acquire; the advance
        assert.truthy(ptx:find("atom.release.gpu.global.add.u32", 1, true))
        assert.truthy(ptx:find("st.relaxed.gpu.global.u64", 1, true))
        local f = assert(io.open(path, "w"))
        f:write(ptx)
        f:close()
        local ok = os.execute(("%s -arch=sm_%d %s -o /dev/null"):format(ptxas, sm, path))
        assert.is_true(ok == true or ok == 0, ("ptxas sm_%d failed"):format(sm))
      end
    end
    os.remove(path)
  end)
end)

describe("vyre.planners.workqueue (the original's device work-queue planner)", function()
  local wq = require("vyre.planners").workqueue

  it("plans a final-only resident queue", function()
    local p = wq.plan({ initial_items = 256, capacity = 1024, entry_bytes = 16,
      control_bytes = 128, budget_bytes = 32768 })
    assert.are.same({ 1024, 16384, 128, 16512, 2500, true, "single_resident_drain", 1 },
      { p.capacity, p.queue_bytes, p.control_bytes, p.resident_bytes, p.initial_occupancy_bps,
        p.final_only_host_sync, p.strategy, p.chunks })
  end)

  it("uses the expansion headroom within the budget, never below the initial items", function()
    local p = wq.plan({ initial_items = 4, expansion_items = 12, entry_bytes = 8,
      control_bytes = 64, budget_bytes = 256 })
    assert.are.same({ 16, 128, 192, 2500 }, { p.capacity, p.queue_bytes, p.resident_bytes,
      p.initial_occupancy_bps })
    -- clamped: 100 asked, (96 - 16) / 8 = 10 fit
    p = wq.plan({ initial_items = 4, expansion_items = 100, entry_bytes = 8, control_bytes = 16,
      budget_bytes = 96 })
    assert.are.same({ 10, 80, 96, 4000 }, { p.capacity, p.queue_bytes, p.resident_bytes,
      p.initial_occupancy_bps })
    local e = H.error_of(wq.plan, { initial_items = 8, expansion_items = 100, entry_bytes = 16,
      control_bytes = 64, budget_bytes = 128 })
    assert.truthy(e:find("need 192 bytes but the budget is 128", 1, true), e)
    assert.truthy(e:find("Fix: raise budget_bytes to at least 192", 1, true), e)
  end)

  it("splits the capacity into drain windows (backpressure)", function()
    local p = wq.plan({ initial_items = 4096, capacity = 65536, entry_bytes = 16,
      control_bytes = 128, budget_bytes = 2 << 20, drain_items = 8192 })
    assert.are.same({ "chunked_resident_drain", 8192, 8, 1048704 },
      { p.strategy, p.items_per_chunk, p.chunks, p.resident_bytes })
    -- occupancy and windows exact at the top of the range
    p = wq.plan({ initial_items = math.maxinteger, capacity = math.maxinteger, entry_bytes = 1,
      drain_items = 65536 })
    assert.are.same({ 10000, 65536, (math.maxinteger - 1) // 65536 + 1 },
      { p.initial_occupancy_bps, p.items_per_chunk, p.chunks })
  end)

  it("refuses what the original refuses, with a Fix", function()
    local cases = {
      { { capacity = 8 }, "entry_bytes is 0" },
      { { entry_bytes = 4 }, "no capacity" },
      { { initial_items = 9, capacity = 8, entry_bytes = 16 }, "9 initial items exceed the "
        .. "capacity of 8" },
      { { initial_items = 1, capacity = 8, entry_bytes = 16, control_bytes = 64,
        budget_bytes = 128 }, "needs 192 resident bytes but the budget is 128" },
      { { capacity = 8, entry_bytes = 16, host_sync = "host_participates" }, "host loop" },
      { { capacity = 8, entry_bytes = 16, host_sync = "sometimes" }, "host_sync must be" },
      { { capacity = -1, entry_bytes = 16 }, "capacity must be an integer" },
      { { capacity = math.maxinteger, entry_bytes = 4 }, "passed 2^64" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(wq.plan, c[1])
      assert.truthy(e:find("vyre.planners.workqueue.plan: ", 1, true), e)
      assert.truthy(e:find(c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)

  it("sizes be:worklist without a capacity, and wl:plan() shows the plan", function()
    local be = H.ref()
    local wl = be:worklist("u32")
    local want = wq.plan(wq.worklist("u32", { expansion_items = 1 << 20, budget_bytes = 1 << 30 }))
    assert.are.equal(want.capacity, wl.capacity)
    assert.are.same(want, wl:plan())
    assert.are.equal(1 << 20, wl.capacity)
    -- the budget clamps the headroom: (32 + 2 * 8 * n <= 1000) -> 60 f64 items
    local small = be:worklist("f64", { expansion_items = 1000, budget_bytes = 1000 })
    assert.are.equal(60, small.capacity)
    assert.are.equal(992, small:plan().resident_bytes)
    -- an explicit capacity is the caller's own
    local fixed = be:worklist("u32", 100)
    assert.are.same({ 100, 800, 832 }, { fixed.capacity, fixed:plan().queue_bytes,
      fixed:plan().resident_bytes })
    -- the sized worklist works: push, advance, overflow reported with the capacity needed
    local k = be:compile(vyre.parse([[
(program twice (workgroup 8)
  (worklist w u32)
  (let i (gid x))
  (if (lt i (len w)) (then (push w (load w i)) (push w (add (load w i) 1u32)))))]]))
    small = be:worklist("u32", { expansion_items = 6, budget_bytes = 1 << 20 })
    assert.are.equal(6, small.capacity)
    small:push({ 1, 2, 3 })
    k:launch({ w = small }, { n = small })
    small:advance()
    assert.are.equal(6, small:size())
    local e = H.error_of(k.launch, k, { w = small }, { n = small })
    assert.truthy(e:find("capacity of at least 12", 1, true), e)
    local bad = H.error_of(be.worklist, be, "u32", { initial_items = 10, budget_bytes = 64 })
    assert.truthy(bad:find("vyre.Backend:worklist: ", 1, true) and bad:find("Fix: ", 1, true), bad)
  end)
end)

for _, kind in ipairs(H.cuda_kinds()) do
describe("device convergence on " .. kind.name .. " " .. kind.tag, function()
  local gpu
  setup(function() gpu = kind.open() end)

  it("a cooperative converge megakernel synchronises once; rounds need no second wait",
    function()
    local k = gpu:compile(vyre.parse(DEC))
    local init = {}
    for i = 1, 3000 do init[i] = (i * 37) % 19 end
    local x, f = gpu:buffer("u32", init), gpu:buffer("u32", 1)
    local steps = { { k, { x = x, flag = f } } }
    local opts = { converge = { flag = f, max = 1000 }, grid_sync = "cooperative", timed = true }
    gpu:synchronize()
    local s0 = gpu:stats()
    local rounds, t = gpu:megakernel(steps, opts)
    local s1 = gpu:stats()
    assert.are.equal(19, rounds)
    -- the completion wait is the only synchronisation, and it is outside the device
    -- events' interval (timing.device_ns): the gate's timed host syncs are 0
    assert.are.equal(1, s1.syncs - s0.syncs)
    assert.is_true(t.device_ns > 0 and t.device_ns <= t.wall_ns)
    local xs = x:download():totable()
    for i = 1, #xs do assert.are.equal(0, xs[i]) end
  end)

  for _, mode in ipairs({ "cooperative", "split", "graph" }) do
    it("converges on a worklist in one dispatch, " .. mode .. ": the reference's levels and "
      .. "rounds", function()
      local n = kind.small and 400 or 20000
      local rowptr, col = graph(n, 11)
      local want, rounds = lua_bfs(n, rowptr, col)
      local old = gpu:grid_sync(mode)
      local ok, got, r, wl, k, syncs = pcall(run_converge, gpu, n, rowptr, col)
      gpu:grid_sync(old)
      assert(ok, got)
      assert.are.same(want, got)
      assert.are.equal(rounds, r)
      assert.are.equal(0, wl:size())
      local occ = { k:occupancy() }
      assert.are.equal(mode, occ[3])
      if mode == "cooperative" then
        -- the rounds ran on the device: k:rounds()' one wait is the only sync
        assert.are.equal(1, syncs)
      else
        -- the split reads the worklist's header between rounds
        assert.is_true(syncs >= rounds)
      end
    end)
  end

  for _, mode in ipairs({ "cooperative", "split", "graph" }) do
    it("runs a megakernel converging on a worklist, " .. mode, function()
      local n = kind.small and 400 or 50000
      local rowptr, col = graph(n, 17)
      local want, rounds = lua_bfs(n, rowptr, col)
      local r = run_mega(gpu, n, rowptr, col, mode, nil, true)
      assert.are.same(want, r.levels)
      assert.are.equal(rounds, r.rounds)
      assert.are.equal(0, r.wl:size())
      assert.are.equal(mode, r.plan.mode)
      if mode == "cooperative" then
        -- rounds decided on the device: the completion wait is the call's one sync (the
        -- rounds and the worklist header come back with it), outside the device events
        assert.are.equal(1, r.syncs)
        assert.truthy(r.plan.reason:find("advanced and decided on the device", 1, true))
        assert.is_true(r.timing.device_ns > 0)
      else
        assert.is_true(r.syncs >= rounds)
        assert.truthy(r.plan.reason:find("a host loop", 1, true), r.plan.reason)
      end
    end)
  end

  it("sizes a megakernel step with shared memory and a barrier by the worklist", function()
    assert.are.same({ 7, 19, 0 }, run_halve(gpu))
  end)

  it("drains a sized megakernel step in windows, cooperatively", function()
    local n = kind.small and 500 or 50000
    local rowptr, col = graph(n, 21)
    local want, rounds = lua_bfs(n, rowptr, col)
    local r = run_mega(gpu, n, rowptr, col, "cooperative", { capacity = n, drain_items = 64 })
    assert.are.same(want, r.levels)
    assert.are.equal(rounds, r.rounds)
    assert.are.equal(2, r.plan.grid.virtual_workgroups)
    assert.are.equal(1, r.syncs)
  end)

  it("reports a megakernel's device-side overflow right after the run", function()
    local n = 300
    local rowptr, col = graph(n, 5)
    local e = H.error_of(run_mega, gpu, n, rowptr, col, "cooperative", 2)
    assert.truthy(e:find("vyre.Backend:megakernel: worklist overflow", 1, true), e)
    assert.truthy(e:find("capacity of at least", 1, true), e)
  end)

  it("refuses to size a program with grid statements by a worklist, with a Fix", function()
    local k = gpu:compile(vyre.parse(BFS_CONVERGE))
    local wl = gpu:worklist("u32", 8)
    local b = gpu:buffer("u32", 8)
    local e = H.error_of(k.launch, k, { front = wl, rowptr = b, col = b, level = b, maxr = 3 },
      { n = wl })
    assert.truthy(e:find("cannot be sized by a worklist", 1, true), e)
    assert.truthy(e:find("Fix: ", 1, true), e)
  end)

  it("reports a device-side overflow after the run, naming the capacity needed", function()
    local n = 300
    local rowptr, col = graph(n, 5)
    local e = H.error_of(function()
      local _, _, wl = run_converge(gpu, n, rowptr, col, 1000, 2)
      return wl:size()
    end)
    assert.truthy(e:find("worklist overflow", 1, true), e)
    assert.truthy(e:find("capacity of at least", 1, true), e)
  end)

  it("sizes be:worklist from the planner with the device's memory and resident grid",
    function()
    local info = gpu:info()
    local wq = require("vyre.planners").workqueue
    local wl = gpu:worklist("u32")
    local want = wq.plan(wq.worklist("u32", { expansion_items = 1 << 20,
      budget_bytes = info.memory_bytes // 4, drain_items = info.sms * info.max_threads_per_sm }))
    assert.are.same(want, wl:plan())
    assert.are.equal(info.sms * info.max_threads_per_sm, wl:plan().items_per_chunk)
    wl:push({ 5, 6, 7 })
    assert.are.equal(3, wl:size())
    wl:free()
  end)
end)
end
