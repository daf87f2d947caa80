-- 82: worklists (issue 23 §1; ARCHITECTURE.md §2, §3, §5): the text form and its round
-- trip, the validator's rules with their Fix, the DSL, the host object (be:worklist),
-- launches sized by a worklist ({n = wl}), overflow reported with the capacity needed,
-- and BFS levels by worklist checked bit for bit against plain Lua on the reference,
-- on the fake CUDA driver (#fakecuda) and on a GPU (#gpu). The items of a round are a
-- multiset: the checks never depend on their order.
local vyre = require("vyre")
local H = require("spec.helpers")

local INF = 0xffffffff

-- One BFS round: every current vertex visits its neighbours; a neighbour first reached
-- (the cas wins) gets the next level and is pushed for the next round.
local BFS = [[
(program bfs_round (workgroup 64)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer level u32 read_write)
  (worklist frontier u32)
  (param depth u32)
  (let i (gid x))
  (if (lt i (len frontier))
    (then
      (let v (load frontier i))
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (let w (load col e))
        (let old (atomic cas level w 4294967295u32 (add depth 1u32)))
        (if (eq old 4294967295u32)
          (then (push frontier w)))))))
]]

-- The same round without a per-round param: a vertex's neighbours get its level + 1 (all
-- vertices of one frontier share a level, so the result does not depend on item order).
local BFS_NEXT = [[
(program bfs_next (workgroup 64)
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
]]

-- Counts its invocations and records ngroups.x; pushes every invocation's gid.
local COUNT = [[
(program wl_count (workgroup 32)
  (buffer hits u32 read_write)
  (worklist items u32)
  (atomic add hits 0u32 1u32)
  (store hits 1u32 (ngroups x))
  (push items (gid x)))
]]

-- Loads past the current items (debug mode counts them; each reads 0).
local OOB = [[
(program wl_oob (workgroup 32)
  (buffer o u32 read_write)
  (worklist f u32)
  (store o (gid x) (load f (add (gid x) 3u32)))
  (push f (gid x)))
]]

-- Two worklist declarations; the host may bind one worklist to both.
local TWO = [[
(program wl_two (workgroup 32)
  (worklist a u32)
  (worklist b u32)
  (push a (gid x))
  (push b (add (gid x) 1000u32)))
]]

-- A random undirected graph as CSR.
local function graph(seed, n, m)
  local r0 = H.rng(seed)
  local function r(k) return ((r0() >> 1) % k) end
  local adj = {}
  for v = 1, n do adj[v] = {} end
  for _ = 1, m do
    local a, b = r(n) + 1, r(n) + 1
    adj[a][#adj[a] + 1] = b - 1
    adj[b][#adj[b] + 1] = a - 1
  end
  local rowptr, col = { 0 }, {}
  for v = 1, n do
    for _, w in ipairs(adj[v]) do col[#col + 1] = w end
    rowptr[#rowptr + 1] = #col
  end
  if #col == 0 then col[1] = 0 end
  return rowptr, col, adj
end

-- Plain Lua BFS levels from vertex 0.
local function lua_levels(adj)
  local lv = {}
  for v = 1, #adj do lv[v] = INF end
  lv[1] = 0
  local q, h = { 1 }, 1
  while q[h] do
    local v = q[h]
    h = h + 1
    for _, w in ipairs(adj[v]) do
      if lv[w + 1] == INF then
        lv[w + 1] = lv[v] + 1
        q[#q + 1] = w + 1
      end
    end
  end
  return lv
end

-- BFS by worklist on backend be: one launch sized by the worklist per round.
local function device_levels(be, k, rowptr, col, n, cap)
  local lv = {}
  for v = 1, n do lv[v] = INF end
  lv[1] = 0
  local bR = be:buffer("u32", #rowptr):upload(rowptr)
  local bC = be:buffer("u32", #col):upload(col)
  local bL = be:buffer("u32", n):upload(lv)
  local wl <close> = be:worklist("u32", cap)
  wl:push({ 0 })
  local depth = 0
  while wl:size() > 0 do
    k:launch({ rowptr = bR, col = bC, level = bL, frontier = wl, depth = depth }, { n = wl })
    wl:advance()
    depth = depth + 1
  end
  return bL:download():totable(), depth
end

-- The checks every backend runs.
local function backend_suite(get_be, prepare)
  local be
  setup(function()
    be = get_be()
    if prepare then prepare() end
  end)

  it("pushes tables, Arrays and Buffers, advances, clears and frees", function()
    local wl = be:worklist("i32", 8)
    assert.are.equal("i32", wl.type)
    assert.are.equal(8, wl.capacity)
    assert.is_false(wl.freed)
    assert.matches("vyre.Worklist(i32, capacity 8)", tostring(wl), 1, true)
    wl:push({ -1, 2 }):push(vyre.array("i32", { 3 })):push(be:buffer("i32", 2):upload({ 4, 5 }))
    assert.are.equal(5, wl:size())
    assert.are.same({ -1, 2, 3, 4, 5 }, wl:items():totable())
    assert.are.equal(0, wl:pushed())
    wl:advance() -- nothing pushed: no current items
    assert.are.equal(0, wl:size())
    wl:push({ 7 }):clear()
    assert.are.equal(0, wl:size())
    wl:free()
    assert.is_true(wl.freed)
    assert.matches("was freed", H.error_of(wl.size, wl), 1, true)
    do
      local closed <close> = be:worklist("u32", 1)
      closed:push({ 1 })
    end
  end)

  it("BFS levels by worklist equal plain Lua BFS, bit for bit", function()
    local k = be:compile(vyre.parse(BFS))
    for seed = 1, 6 do
      local n = 20 + seed * 7
      local rowptr, col, adj = graph(seed, n, n + seed * 3)
      local got = device_levels(be, k, rowptr, col, n, 4 * n)
      assert.are.same(lua_levels(adj), got, "seed " .. seed)
    end
  end)

  -- The number of BFS rounds until one pushes nothing: the deepest level + 1.
  local function bfs_rounds(levels)
    local deepest = 0
    for _, l in ipairs(levels) do
      if l ~= INF and l > deepest then deepest = l end
    end
    return deepest + 1
  end

  it("converges be:sequence and be:megakernel on a worklist, returning the rounds", function()
    local k = be:compile(vyre.parse(BFS_NEXT))
    for seed = 1, 3 do
      local n = 30 + seed * 5
      local rowptr, col, adj = graph(seed + 10, n, n + 4)
      local want = lua_levels(adj)
      for _, how in ipairs({ "sequence", "megakernel" }) do
        local lv = {}
        for v = 1, n do lv[v] = INF end
        lv[1] = 0
        local bL = be:buffer("u32", n):upload(lv)
        local wl = be:worklist("u32", 4 * n):push({ 0 })
        local steps = { { k, { rowptr = be:buffer("u32", #rowptr):upload(rowptr),
          col = be:buffer("u32", #col):upload(col), level = bL, frontier = wl }, { n = wl } } }
        local opts = { converge = { worklist = wl, max = 1000 } }
        local rounds, got
        if how == "sequence" then
          opts.readback = { bL }
          local res = be:sequence(steps, opts)
          rounds, got = res.rounds, res[1]:totable()
        else
          rounds = be:megakernel(steps, opts)
          got = bL:download():totable()
        end
        assert.are.same(want, got, how .. " seed " .. seed)
        assert.are.equal(bfs_rounds(want), rounds, how .. " seed " .. seed)
        assert.are.equal(0, wl:size())
      end
    end
    -- max bounds the rounds
    local rowptr, col = graph(5, 40, 44)
    local wl = be:worklist("u32", 400):push({ 0 })
    local lv = {}
    for v = 1, 40 do lv[v] = INF end
    lv[1] = 0
    local res = be:sequence({ { k, { rowptr = be:buffer("u32", #rowptr):upload(rowptr),
      col = be:buffer("u32", #col):upload(col), level = be:buffer("u32", 40):upload(lv),
      frontier = wl }, { n = wl } } }, { converge = { worklist = wl, max = 1 } })
    assert.are.equal(1, res.rounds)
    assert.matches("exclude each other", H.error_of(be.sequence, be, {},
      { times = 2, converge = { worklist = wl, max = 3 } }), 1, true)
    assert.matches("converge.max", H.error_of(be.megakernel, be, {},
      { converge = { worklist = wl } }), 1, true)
    -- a megakernel converging on a worklist has a composed plan (spec 95)
    assert.matches("no steps", H.error_of(be.plan, be, {},
      { converge = { worklist = wl, max = 3 } }), 1, true)
  end)

  it("replays a graph sized by a worklist across advances", function()
    local k = be:compile(vyre.parse(BFS_NEXT))
    local n = 50
    local rowptr, col, adj = graph(21, n, n + 10)
    local lv = {}
    for v = 1, n do lv[v] = INF end
    lv[1] = 0
    local bL = be:buffer("u32", n):upload(lv)
    local wl = be:worklist("u32", 4 * n):push({ 0 })
    local g = be:graph({ { k, { rowptr = be:buffer("u32", #rowptr):upload(rowptr),
      col = be:buffer("u32", #col):upload(col), level = bL, frontier = wl }, { n = wl } } })
    while wl:size() > 0 do
      g:launch()
      wl:advance()
    end
    assert.are.same(lua_levels(adj), bL:download():totable())
    g:free()
  end)

  it("runs len invocations for {n = wl}: ngroups covers ceil(len / workgroup)", function()
    local k = be:compile(vyre.parse(COUNT))
    for _, len in ipairs({ 0, 1, 31, 32, 33, 100 }) do
      local hits = be:buffer("u32", 2):upload({ 0, 0 })
      local wl = be:worklist("u32", 200)
      local seed = {}
      for i = 1, len do seed[i] = i end
      if len > 0 then wl:push(seed) end
      k:launch({ hits = hits, items = wl }, { n = wl })
      local h = hits:download():totable()
      local groups = (len + 31) // 32
      assert.are.equal(groups * 32, h[1], "len " .. len) -- every invocation of those groups
      assert.are.equal(len > 0 and groups or 0, h[2], "len " .. len)
      assert.are.equal(len, wl:size())
      assert.are.equal(groups * 32, wl:pushed())
      wl:advance()
      local items = wl:items():totable()
      table.sort(items)
      for i = 1, groups * 32 do assert.are.equal(i - 1, items[i]) end
      wl:free()
    end
  end)

  it("one worklist bound to two declarations receives both pushes", function()
    local k = be:compile(vyre.parse(TWO))
    local wl = be:worklist("u32", 200)
    k:launch({ a = wl, b = wl }, { n = 64 })
    assert.are.equal(128, wl:pushed())
    wl:advance()
    local items = wl:items():totable()
    table.sort(items)
    for i = 1, 64 do
      assert.are.equal(i - 1, items[i])
      assert.are.equal(999 + i, items[64 + i])
    end
  end)

  it("k:bind sized by a worklist reads the count at each launch", function()
    local k = be:compile(vyre.parse(COUNT))
    local hits = be:buffer("u32", 2):upload({ 0, 0 })
    local wl = be:worklist("u32", 1000):push({ 1, 2, 3 })
    local l = k:bind({ hits = hits, items = wl }, { n = wl })
    l()
    assert.are.equal(32, wl:pushed())
    wl:advance()
    l:launch()
    assert.are.same({ 64, 1 }, hits:download():totable())
    wl:free()
    assert.matches("worklist 1 was freed", H.error_of(l.launch, l), 1, true)
  end)

  it("counts out-of-bounds worklist loads in debug mode, reading typed zeros", function()
    be:debug(true)
    local k = be:compile(vyre.parse(OOB))
    local o = be:buffer("u32", 32)
    local wl = be:worklist("u32", 64):push({ 1, 2, 3, 4, 5 })
    k:launch({ o = o, f = wl }, { n = wl })
    local report = be:oob_report()
    be:debug(false)
    assert.are.same({ loads = 30, stores = 0 }, report.f)
    local got = o:download():totable()
    assert.are.same({ 4, 5, 0, 0 }, { got[1], got[2], got[3], got[32] })
    assert.are.equal(32, wl:pushed())
  end)

  it("reports an overflow after the launch, naming the capacity needed", function()
    local k = be:compile(vyre.parse(COUNT))
    local hits = be:buffer("u32", 2)
    local wl = be:worklist("u32", 40)
    -- 64 pushes into 40 slots: the reference raises after the launch, CUDA (launches are
    -- asynchronous) at the next host read of the worklist
    local launched, e = pcall(k.launch, k, { hits = hits, items = wl }, { n = 64 })
    if launched then e = H.error_of(function() return wl:size() end) end
    e = tostring(e)
    assert.matches("worklist overflow", e, 1, true)
    assert.matches("capacity of at least 64", e, 1, true)
    assert.matches("Fix:", e, 1, true)
    -- it stays reported until cleared
    assert.matches("capacity of at least 64", H.error_of(function() return wl:items() end), 1, true)
    wl:clear()
    assert.are.equal(0, wl:size())
    k:launch({ hits = hits, items = wl }, { n = 32 })
    assert.are.equal(32, wl:pushed())
  end)
end

describe("worklists: text and validator", function()
  it("round-trips the canonical text and keeps the hash", function()
    local p = vyre.parse(BFS)
    local q = vyre.parse(tostring(p))
    assert.are.equal(tostring(p), tostring(q))
    assert.are.equal(p:hash(), q:hash())
    assert.matches("(worklist frontier u32)", tostring(p), 1, true)
    assert.matches("(push frontier w)", tostring(p), 1, true)
  end)

  local function problems(text)
    local ok, probs = vyre.validate(vyre.parse(text))
    assert.is_false(ok)
    return probs
  end

  it("rejects each misuse with a code, a path and a Fix", function()
    local cases = {
      { "(program w (workgroup 1) (worklist f u32) (push g 1u32))", "undeclared-name",
        "(worklist NAME TYPE)" },
      { "(program w (workgroup 1) (buffer o u32 write) (push o 1u32))", "not-a-worklist",
        "(store BUF i v)" },
      { "(program w (workgroup 1) (worklist f u32) (push f 1.0f32))", "type-mismatch",
        "(cast u32 ...)" },
      { "(program w (workgroup 1) (worklist f u32) (let x (load f 1.0f32)))", "index-type",
        "(cast u32 ...)" },
      { "(program w (workgroup 1) (worklist f bool))", "worklist-type", "numeric item type" },
      { "(program w (workgroup 1) (worklist f u32) (store f 0u32 1u32))", "not-a-buffer",
        "(push NAME v)" },
      -- a worklist in a program with grid statements is fine (issue 23 §2, spec 95); its
      -- len is not grid-uniform
      { "(program w (workgroup 1) (worklist f u32) (for k 0u32 (len f) (grid_barrier)))",
        "grid-nonuniform", "converge" },
    }
    for _, c in ipairs(cases) do
      local pr = problems(c[1])[1]
      assert.are.equal(c[2], pr.code, c[1])
      assert.matches(c[3], pr.fix, 1, true)
    end
  end)

  it("emits PTX with a warp-aggregated push and the NAME_wl entry", function()
    local ptx = vyre.ptx(vyre.parse(BFS), { sm = 80 })
    assert.matches(".param .u64 w_frontier", ptx, 1, true)
    assert.matches("activemask.b32", ptx, 1, true)
    assert.matches("atom.global.add.u32", ptx, 1, true)
    assert.matches("shfl.sync.idx.b32", ptx, 1, true)
    assert.matches(".visible .entry bfs_round_wl(", ptx, 1, true)
    assert.matches(".param .u64 vyre_wn", ptx, 1, true)
    assert.is_nil(ptx:find("bfs_round_v4", 1, true))
    -- (len f) is the header's min(cur_count, capacity), in both entries
    local lp = vyre.ptx(vyre.parse("(program l (workgroup 1) (buffer o u32 read_write) "
      .. "(worklist f u32) (store o 0u32 (len f)))"), { sm = 80 })
    local entries = 0
    for body in lp:gmatch("%.entry [%w_]+%((.-)\n}") do
      entries = entries + 1
      local stored = body:match("st%.global%.u32 %[[^%]]+%], (%%r%d+);")
      local mins = {}
      for reg in body:gmatch("min%.u32 (%%r%d+),") do mins[reg] = true end
      assert.is_truthy(stored and mins[stored], "the stored len is no min(cur_count, capacity)")
    end
    assert.are.equal(2, entries)
  end)
end)

describe("worklists: DSL", function()
  it("builds the same program as the text", function()
    local p = vyre.program("bfs_round", { workgroup = 64,
      vyre.buffer("rowptr", "u32", "read"), vyre.buffer("col", "u32", "read"),
      vyre.buffer("level", "u32"), vyre.worklist("frontier", "u32"), vyre.param("depth", "u32") },
      function(k)
        local i = k:let("i", k.gid.x)
        k:when(i:lt(k.frontier:len()), function()
          local v = k:let("v", k.frontier[i])
          k:for_("e", k.rowptr[v], k.rowptr[v + 1], function(e)
            local w = k:let("w", k.col[e])
            local old = k:let("old", k:atomic("cas", k.level, w, INF, k.depth + 1))
            k:when(old:eq(INF), function() k.frontier:push(w) end)
          end)
        end)
      end)
    assert.are.equal(tostring(vyre.parse(BFS)), tostring(p))
  end)

  it("raises with a Fix on misuse", function()
    local decls = { workgroup = 1, vyre.worklist("f", "u32"), vyre.buffer("o", "u32") }
    assert.matches("k.f:push", H.error_of(vyre.program, "a", decls, function(k) k.f[0] = 1 end),
      1, true)
    assert.matches("not a worklist", H.error_of(vyre.program, "b", decls,
      function(k) k.o:push(1) end), 1, true)
    assert.matches("Fix:", H.error_of(vyre.worklist, "w", "bool"), 1, true)
    assert.matches("type-mismatch", H.error_of(vyre.program, "c", decls,
      function(k) k.f:push(vyre.lit(1.5, "f32")) end) .. " type-mismatch", 1, true)
  end)
end)

describe("worklists: the host object on the reference", function()
  local be = vyre.reference.new()

  it("raises with a Fix on bad use", function()
    assert.matches("bool", H.error_of(be.worklist, be, "bool", 4), 1, true)
    assert.matches("capacity", H.error_of(be.worklist, be, "u32", 0), 1, true)
    local wl = be:worklist("u32", 2)
    assert.matches("capacity 3", H.error_of(wl.push, wl, { 1, 2, 3 }), 1, true)
    assert.matches("the worklist holds u32", H.error_of(wl.push, wl, vyre.array("f32", { 1 })),
      1, true)
    local k = be:compile(vyre.parse(BFS))
    local b = be:buffer("u32", 4)
    local args = { rowptr = b, col = b, level = b, depth = 0 }
    assert.matches("missing worklist 'frontier'", H.error_of(k.launch, k, args), 1, true)
    args.frontier = be:worklist("i32", 4)
    assert.matches("declared u32 but the worklist holds i32", H.error_of(k.launch, k, args), 1,
      true)
    args.frontier = be:buffer("u32", 4)
    assert.matches("needs a vyre.Worklist", H.error_of(k.launch, k, args), 1, true)
    local plain = be:compile(H.saxpy())
    assert.matches("declares none", H.error_of(plain.launch, plain, {
      x = be:buffer("f32", 4), y = be:buffer("f32", 4), a = 1.0 }, { n = wl }), 1, true)
    assert.matches("be:run takes none", H.error_of(be.run, be, vyre.parse(BFS), {}), 1, true)
    args.frontier = wl
    args.rowptr, args.col, args.level = be:buffer("u32", 4), be:buffer("u32", 4), b
    -- a megakernel may hold worklist steps (issue 23 §2): one round, nothing advanced
    assert.are.equal(1, be:megakernel({ { k, args, { n = wl } } }))
  end)

  backend_suite(function() return be end)
end)

describe("worklists on the fake CUDA driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end
  -- The fake computes every kernel from the program text its PTX carries (NAME_wl and
  -- the advance step too): nothing is registered.
  backend_suite(function() return F.device() end)

  it("leaves nothing alive and misuses no driver handle", function()
    collectgarbage()
    collectgarbage()
    assert.are.same({}, H.leftovers(F.device()))
    assert.are.equal(0, (F.misuse()))
  end)
end)

describe("worklists on a GPU #gpu", function()
  local ok, cuda = pcall(require, "vyre.cuda")
  if not ok or not cuda.available() then
    it("needs CUDA", function() pending("CUDA is not usable here") end)
    return
  end
  backend_suite(function() return assert(cuda.device(0)) end)

  it("BFS on a larger graph matches plain Lua (warp-aggregated pushes under contention)",
    function()
      local be = assert(cuda.device(0))
      local k = be:compile(vyre.parse(BFS))
      local n = 20000
      local rowptr, col, adj = graph(99, n, 8 * n)
      local got = device_levels(be, k, rowptr, col, n, 2 * n)
      assert.are.same(lua_levels(adj), got)
    end)
end)
