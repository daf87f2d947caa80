-- vyre.egraph.dag_extract — DAG-aware extraction (docs/EGRAPH.md, "DAG extraction"):
-- a choice of one e-node per needed e-class whose cost counts every chosen e-node once,
-- however many parents share it.
--
-- Greedy, on the device: start from the tree-optimal choice; mark the classes it
-- reaches from the roots (sweeps to a fixed point) and sum their e-nodes' op costs (the
-- DAG cost); then let every class re-choose the row of least marginal cost, its op cost
-- plus the tree costs of the children not already marked (a child used anyway costs
-- nothing more), among the rows whose children all come before the class in the
-- order of (tree cost, id): a strict total order, so any such choice is acyclic, and
-- the tree choice is among them (its children are strictly cheaper).
-- Keep the new choice while its DAG cost drops. So greedy <= DAG cost of the tree
-- choice <= tree cost.
--
-- Exact, on the host: the ILP of DAG extraction (pick one row per needed class, a picked
-- row needs its children's classes, no cycle, least total op cost) by branch and bound
-- over the classes reachable from the roots: depth first, the most constrained needed
-- class first, its rows in increasing op cost, a lower bound of the costs so far plus the
-- cheapest row of every needed class not yet picked, the greedy result as the first upper
-- bound. The search is exponential in the worst case, so it stops after a node budget and
-- then says the result is the best found, not proved optimal.
local U = require("vyre.lib.shared")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)
local S = require("vyre.egraph.store")

local M = {}

local INF = "18446744073709551615u64"
local SWEEPS = 8

local function kernel(be, name, text)
  return U.kernel(be, "egraph:" .. name, function() return SC.expand(text) end)
end

local MARK_ROOTS = [[
(program eg_dag_roots (workgroup 256)
  (buffer roots u32 read)
  (buffer mark u32 read_write)
  (param k u32)
  (let i (gid x))
  (if (lt i k) (then (store mark (load roots i) 1u32))))
]]

-- One sweep of reachability: a marked class marks its chosen row's children.
local REACH = [[
(program eg_dag_reach (workgroup 256)
  (buffer choice u32 read)
  (columns read isleaf row_op row_off row_len children)
  (buffer mark u32 read_write)
  (columns read_write stat)
  (param n u32)
  (param slot u32)
  (let c (gid x))
  (if (lt c n)
    (then
      (let r (load choice c))
      (if (land (ne (load mark c) 0u32) (ne r 4294967295u32))
        (then
          (if (eq (load isleaf (load row_op r)) 0u32)
            (then
              (let o (load row_off r))
              (for k 0u32 (load row_len r) 1u32
                (let ch (load children (add o k)))
                (if (eq (load mark ch) 0u32)
                  (then
                    (store mark ch 1u32)
                    (atomic add stat slot 1u32)))))))))))
]]

-- The DAG cost: the op costs of the marked classes' chosen rows.
local DAGSUM = [[
(program eg_dag_sum (workgroup 256)
  (buffer choice u32 read)
  (buffer mark u32 read)
  (columns read row_op)
  (buffer opcost u64 read)
  (buffer total u64 read_write)
  (param n u32)
  (let c (gid x))
  (if (lt c n)
    (then
      (if (ne (load mark c) 0u32)
        (then (atomic add total 0u32 (load opcost (load row_op (load choice c)))))))))
]]

-- The marginal cost m of row r (INF when the row may not be chosen) and its class.
local MARGINAL = [[
      (let cls (load row_class r))
      (let op (load row_op r))
      (let cc (load ccost cls))
      (let m (load opcost op))
      (let okf (select (land (ne cc $INF) (eq (and (load row_epoch r) 2147483648u32) 0u32))
        1u32 0u32))
      (if (eq (load isleaf op) 0u32)
        (then
          (let o (load row_off r))
          (for k 0u32 (load row_len r) 1u32
            (let ch (load children (add o k)))
            (let chc (load ccost ch))
            (if (lnot (lor (lt chc cc) (land (eq chc cc) (lt ch cls)))) (then (set okf 0u32)))
            (let seen 0u32)
            (for j 0u32 k 1u32
              (if (eq (load children (add o j)) ch) (then (set seen 1u32))))
            (if (land (eq seen 0u32) (land (eq (load mark ch) 0u32) (ne chc $INF)))
              (then (set m (add m chc)))))))
      (let ok (ne okf 0u32))]]

local MARGIN_MIN = [[
(program eg_dag_margin (workgroup 256)
  (columns read row_epoch isleaf)
  (buffer opcost u64 read)
  (columns read children row_class row_op row_off row_len)
  (buffer ccost u64 read)
  (buffer mark u32 read)
  (buffer mcost u64 read_write)
  (param n u32)
  (let r (gid x))
  (if (lt r n)
    (then
$MARGINAL
      (if ok (then (atomic min mcost cls m))))))
]]

local PICK = [[
(program eg_dag_pick (workgroup 256)
  (columns read row_epoch isleaf)
  (buffer opcost u64 read)
  (columns read children row_class row_op row_off row_len)
  (buffer ccost u64 read)
  (buffer mark u32 read)
  (buffer mcost u64 read)
  (buffer choice u32 read_write)
  (param n u32)
  (let r (gid x))
  (if (lt r n)
    (then
$MARGINAL
      (if (land ok (eq m (load mcost cls))) (then (atomic min choice cls r))))))
]]

local function marginal()
  return U.fill(MARGINAL, { INF = INF })
end

-- Marks the classes the choice reaches from the roots and returns their DAG cost.
local function reach(eg, fname, choice, mark, roots, opcost)
  local be, nids = eg.be, eg.dev.nids
  local total = S.exact(eg, "dag_total", 1, "u64")
  mark:zero()
  S.run(eg, fname, { { kernel(be, "dag_roots", MARK_ROOTS), { roots = roots, mark = mark,
    k = roots.count }, S.grid(roots.count) } })
  local sweeps = 0
  while true do
    local steps = {}
    S.zero_stat(eg, SWEEPS, steps)
    for k = 0, SWEEPS - 1 do
      steps[#steps + 1] = { kernel(be, "dag_reach", REACH), { choice = choice,
        isleaf = eg.isleaf, row_op = eg.row_op, row_off = eg.row_off, row_len = eg.row_len,
        children = eg.children, mark = mark, stat = eg.stat, n = nids, slot = k },
        S.grid(nids) }
    end
    local res = S.run(eg, fname, steps, { S.stat_readback(eg, SWEEPS) })
    sweeps = sweeps + SWEEPS
    if res[1][SWEEPS] == 0 then break end
    if sweeps > nids + 2 * SWEEPS then
      require("vyre.errors").raise("internal",
        "vyre.EGraph:extract internal: DAG reachability did not converge", 0)
    end
  end
  total:zero()
  local res = S.run(eg, fname, { { kernel(be, "dag_sum", DAGSUM), { choice = choice,
    mark = mark, row_op = eg.row_op, opcost = opcost, total = total, n = nids },
    S.grid(nids) } }, { { total, 1, 1 } })
  return res[1][1]
end

--- The greedy DAG heuristic on the device. best: the tree choice (u32 Buffer per id),
--- ccost: tree costs, roots: canonical root ids (Lua list). Returns the choice (a u32
--- Buffer, per id), its DAG cost and the DAG cost of the tree choice and rounds taken.
function M.greedy(eg, fname, opcost, ccost, best, roots)
  local be, n, nids = eg.be, eg.dev.nrows, eg.dev.nids
  local rbuf = S.exact(eg, "dag_roots", #roots)
  rbuf:upload(roots)
  local mark = S.exact(eg, "dag_mark", nids)
  local cur = S.exact(eg, "dag_choice", nids)
  local nxt = S.exact(eg, "dag_next", nids)
  local mcost = S.exact(eg, "dag_mcost", nids, "u64")
  S.run(eg, fname, { { require("vyre.egraph.kernels").copy_range(be), { src = best, dst = cur,
    n = nids, src0 = 0, dst0 = 0 }, S.grid(nids) } })
  local d0 = reach(eg, fname, cur, mark, rbuf, opcost)
  local dcur, rounds = d0, 0
  local args = { row_epoch = eg.row_epoch, isleaf = eg.isleaf, opcost = opcost,
    children = eg.children, row_class = eg.row_class, row_op = eg.row_op,
    row_off = eg.row_off, row_len = eg.row_len, ccost = ccost, mark = mark, n = n }
  for _ = 1, 16 do
    rounds = rounds + 1
    require("vyre.lib").fill(be, mcost, -1)
    require("vyre.lib").fill(be, nxt, S.MAXU32)
    local pick = {}
    for k, v in pairs(args) do pick[k] = v end
    pick.mcost, pick.choice = mcost, nxt
    local margin = {}
    for k, v in pairs(args) do margin[k] = v end
    margin.mcost = mcost
    S.run(eg, fname, {
      { kernel(be, "dag_margin", U.fill(MARGIN_MIN, { MARGINAL = marginal() })), margin,
        S.grid(n) },
      { kernel(be, "dag_pick", U.fill(PICK, { MARGINAL = marginal() })), pick, S.grid(n) },
    })
    -- classes no row may be chosen for (no finite cost) keep no choice (MAXU32)
    local mark2 = S.exact(eg, "dag_mark2", nids)
    local d = reach(eg, fname, nxt, mark2, rbuf, opcost)
    if d >= dcur then break end
    dcur = d
    cur, nxt = nxt, cur
    eg.x_dag_choice, eg.x_dag_next = cur, nxt
    mark:zero()
    S.run(eg, fname, { { require("vyre.egraph.kernels").copy_range(be), { src = mark2,
      dst = mark, n = nids, src0 = 0, dst0 = 0 }, S.grid(nids) } })
    args.mark = mark
  end
  return cur, dcur, d0, rounds
end

--- The DAG cost of a choice (Lua table class+1 -> row) from the roots, on the host, or
--- nil when the choice has a cycle or misses a class. snap: extract.snapshot.
function M.dag_cost(eg, snap, choice, roots, opcost)
  local state, total = {}, 0
  local arity = eg.reg.arity
  local function visit(c)
    if state[c] == 2 then return true end
    if state[c] == 1 then return false end
    state[c] = 1
    local r = choice[c + 1]
    if not r or r == S.MAXU32 then return false end
    local op = snap.op[r + 1]
    total = total + opcost[op + 1]
    if arity[op + 1] > 0 then
      for k = 1, snap.len[r + 1] do
        if not visit(snap.words[snap.off[r + 1] + k]) then return false end
      end
    end
    state[c] = 2
    return true
  end
  for _, c in ipairs(roots) do
    if not visit(c) then return nil end
  end
  return total
end

--- The rows of the classes reachable from roots: {class -> {{row, cost, kids}, ...}}
--- (rows that are subsumed or have a child without finite tree cost left out), and the
--- count of classes. costv: tree costs per id (u64, -1 = none); epoch: row_epoch.
function M.problem(eg, snap, roots, opcost, costv, epoch)
  local byclass = {}
  for gi = 1, snap.ngroups do byclass[snap.gcls[gi]] = gi end
  local rows, order, seen = {}, {}, {}
  local stack = {}
  for _, c in ipairs(roots) do
    if not seen[c] then seen[c] = true stack[#stack + 1] = c end
  end
  while #stack > 0 do
    local c = table.remove(stack)
    order[#order + 1] = c
    local list = {}
    local gi = byclass[c]
    if gi then
      for p = snap.goff[gi], snap.goff[gi + 1] - 1 do
        local r = snap.grows[p + 1]
        local op = snap.op[r + 1]
        local ok = epoch[r + 1] & 0x80000000 == 0
        local kids, kset = {}, {}
        if ok and eg.reg.arity[op + 1] > 0 then
          for k = 1, snap.len[r + 1] do
            local ch = snap.words[snap.off[r + 1] + k]
            if costv[ch + 1] == -1 then ok = false break end
            if not kset[ch] then kset[ch] = true kids[#kids + 1] = ch end
          end
        end
        if ok then list[#list + 1] = { row = r, cost = opcost[op + 1], kids = kids } end
      end
    end
    table.sort(list, function(a, b)
      if a.cost ~= b.cost then return a.cost < b.cost end
      return a.row < b.row
    end)
    rows[c] = list
    for _, e in ipairs(list) do
      for _, ch in ipairs(e.kids) do
        if not seen[ch] then seen[ch] = true stack[#stack + 1] = ch end
      end
    end
  end
  return rows, #order
end

-- The mandatory closure of every class: the classes any solution holding it must hold
-- too (itself, and, transitively, the children common to all of its rows).
local function mandatory(rows)
  local common = {}
  for c, list in pairs(rows) do
    local cnt, out = {}, {}
    for _, e in ipairs(list) do
      for _, ch in ipairs(e.kids) do cnt[ch] = (cnt[ch] or 0) + 1 end
    end
    for ch, k in pairs(cnt) do
      if k == #list then out[#out + 1] = ch end
    end
    table.sort(out)
    common[c] = out
  end
  local out = {}
  for c in pairs(rows) do
    local seen, list, stack = { [c] = true }, { c }, { c }
    while #stack > 0 do
      local x = table.remove(stack)
      for _, d in ipairs(common[x] or {}) do
        if not seen[d] then
          seen[d] = true
          list[#list + 1] = d
          stack[#stack + 1] = d
        end
      end
    end
    out[c] = list
  end
  return out
end

--- Branch and bound for the least DAG cost. rows: M.problem's; ub: a known solution's
--- cost (choice ubchoice, class -> row) or nil; budget: search nodes. Returns the best
--- choice (class -> row), its cost, whether it is proved optimal and the nodes searched.
--- The bound: the cost of the rows picked so far plus the cheapest row of every class
--- that is not picked but is mandatory for a needed class (counted once).
function M.exact(rows, roots, ub, ubchoice, budget)
  local best, bestchoice = ub or math.huge, {}
  for c, r in pairs(ubchoice or {}) do bestchoice[c] = r end
  local minrow = {}
  for c, list in pairs(rows) do minrow[c] = list[1] and list[1].cost or math.huge end
  local mand = mandatory(rows)
  local pick = {}        -- class -> chosen entry
  local need = {}        -- class -> number of chosen parents (or roots) needing it
  local cover = {}       -- class -> number of unpicked needed classes it is mandatory for
  local lbx = 0          -- sum of minrow over covered, unpicked classes
  local nodes, complete = 0, true
  local function add_open(c)
    for _, d in ipairs(mand[c]) do
      local k = (cover[d] or 0) + 1
      cover[d] = k
      if k == 1 and not pick[d] then lbx = lbx + minrow[d] end
    end
  end
  local function remove_open(c)
    for _, d in ipairs(mand[c]) do
      local k = cover[d] - 1
      cover[d] = k
      if k == 0 and not pick[d] then lbx = lbx - minrow[d] end
    end
  end
  for _, c in ipairs(roots) do
    if not need[c] then
      need[c] = 0
      add_open(c)
    end
    need[c] = need[c] + 1
  end
  -- true when class `to` reaches class `from` through picked rows (a cycle if picked)
  local function reaches(to, from, mark)
    if to == from then return true end
    if mark[to] then return false end
    mark[to] = true
    local e = pick[to]
    if not e then return false end
    for _, ch in ipairs(e.kids) do
      if reaches(ch, from, mark) then return true end
    end
    return false
  end
  local function search(cost)
    nodes = nodes + 1
    if nodes > budget then complete = false return end
    if cost + lbx >= best then return end
    -- the needed, unpicked class with the fewest rows
    local c, nrows = nil, math.huge
    for x in pairs(need) do
      if not pick[x] and (#rows[x] < nrows or (#rows[x] == nrows and x < c)) then
        c, nrows = x, #rows[x]
      end
    end
    if not c then
      best = cost
      bestchoice = {}
      for x, e in pairs(pick) do bestchoice[x] = e.row end
      return
    end
    for _, e in ipairs(rows[c]) do
      local cyc = false
      for _, ch in ipairs(e.kids) do
        if reaches(ch, c, {}) then cyc = true break end
      end
      if not cyc then
        pick[c] = e
        if (cover[c] or 0) > 0 then lbx = lbx - minrow[c] end
        local added = {}
        for _, ch in ipairs(e.kids) do
          if not need[ch] then
            need[ch] = 0
            added[#added + 1] = ch
            if not pick[ch] then add_open(ch) end
          end
          need[ch] = need[ch] + 1
        end
        remove_open(c)
        search(cost + e.cost)
        add_open(c)
        for _, ch in ipairs(e.kids) do need[ch] = need[ch] - 1 end
        for _, ch in ipairs(added) do
          need[ch] = nil
          if not pick[ch] then remove_open(ch) end
        end
        pick[c] = nil
        if (cover[c] or 0) > 0 then lbx = lbx + minrow[c] end
        if not complete then break end
      end
    end
  end
  search(0)
  return bestchoice, best, complete, nodes
end

return M
