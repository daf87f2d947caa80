-- vyre.egraph.extract — extraction and inspection (docs/EGRAPH.md).
--
-- Extraction computes, on the device, the least cost of every e-class by Bellman-Ford
-- sweeps to a fixed point (class cost = min over its rows of op cost + the children's
-- class costs, u64, saturating), then each class's best row (the smallest row index
-- among those of least cost). Op costs are positive integers, so a best row's children
-- are strictly cheaper than its class and the chosen rows form a DAG: the terms are
-- finite. The fixed point is unique, so costs and terms are the same on both backends.
-- Inspection (classes, nodes, dot) reads a host snapshot of the canonical graph.
local lib = require("vyre.lib")
local S = require("vyre.egraph.store")
local K = require("vyre.egraph.kernels")
local callback = require("vyre.callback")
local image = require("vyre.egraph.image")
local costfn = require("vyre.egraph.costfn")
local D = require("vyre.egraph.dag_extract")

local P = require("vyre.egraph.payload")
local M = {}

local SWEEPS = 8 -- Bellman-Ford sweeps per sequence (one readback each 8)
local INF = -1   -- u64 all ones, as a Lua integer

--- The per-op cost table (u64 Buffer) from a table name -> cost or a function
--- (name, arity) -> cost; every cost a positive integer.
local function op_costs(eg, fname, cost)
  local ops, list = eg.reg, {}
  if type(cost) ~= "table" and type(cost) ~= "function" then
    S.raise(fname, "argument 2 (cost) must be a table op name -> cost, a function or a "
      .. "cost expression string, got " .. type(cost), "pass e.g. {Add = 1, Num = 1}, "
      .. "function(name, arity) return 1 end or \"(+ 1 sum)\"")
  end
  for i, name in ipairs(ops.names) do
    local c
    if type(cost) == "table" then
      c = cost[name]
    else
      local ok, v = callback.call(("the cost function (for op '%s')"):format(name), cost, name,
        ops.arity[i])
      if not ok then
        S.raise(fname, v, "make the cost function(name, arity) return a positive integer "
          .. "for every registered op, without raising or yielding")
      end
      c = v
    end
    if math.type(c) ~= "integer" or c < 1 or c > (1 << 40) then
      S.raise(fname, ("the cost of op '%s' must be an integer in [1, 2^40], got %s"):format(
        name, tostring(c)), "give every registered op a positive integer cost")
    end
    list[i] = c
  end
  local b = S.exact(eg, "opcost", math.max(#list, 1), "u64")
  if #list > 0 then b:upload(list) end
  eg.opcost_list = list
  return b
end

local function payload(words, off)
  return words[off + 1] | (words[off + 2] << 32)
end

--- Builds the term of class c (and every class below it) into memo, iteratively.
local function build(eg, snap, best, c, memo)
  local names = eg.reg.names
  local stack = { c }
  while #stack > 0 do
    local x = stack[#stack]
    if memo[x] then
      stack[#stack] = nil
    else
      local r = best[x + 1]
      local op = snap.op[r + 1]
      local off, len = snap.off[r + 1], snap.len[r + 1]
      local ready = true
      if eg.reg.arity[op + 1] > 0 then
        for k = 1, len do
          local ch = snap.words[off + k]
          if not memo[ch] then
            ready = false
            stack[#stack + 1] = ch
          end
        end
      end
      if ready then
        stack[#stack] = nil
        local t = { op = names[op + 1] }
        local text
        if eg.reg.arity[op + 1] == 0 then
          local bits = payload(snap.words, off)
          t.payload = P.decode(eg, op, bits)
          text = ("(%s %s)"):format(t.op, P.text(eg, op, bits))
        else
          local parts = { "(" .. t.op }
          for k = 1, len do
            local sub = memo[snap.words[off + k]]
            t[k] = sub.term
            parts[#parts + 1] = sub.text
          end
          text = table.concat(parts, " ") .. ")"
        end
        memo[x] = { term = t, text = text }
      end
    end
  end
  return memo[c]
end

--- Host copies of the canonical graph (Arrays): parent, row columns, children words.
function M.snapshot(eg, fname)
  if eg.snap then return eg.snap end
  local g = image.groups(eg, fname)
  local n = eg.dev.nrows
  local function dl(b, count)
    if count == 0 then return {} end
    return b:download({ count = count })
  end
  eg.snap = {
    parent = dl(eg.parent, eg.dev.nids), class = dl(eg.row_class, n), op = dl(eg.row_op, n),
    off = dl(eg.row_off, n), len = dl(eg.row_len, n), words = dl(eg.children, eg.dev.nwords),
    gcls = dl(g.cls, g.count), goff = dl(g.off, g.count + 1), grows = dl(g.rows, n),
    ngroups = g.count,
  }
  return eg.snap
end

-- Bellman-Ford sweeps of kernel `k` (args with slot) until one changes nothing.
local function sweep(eg, fname, k, args, expr)
  local n = eg.dev.nrows
  local sweeps, done = 0, n == 0
  while not done do
    local steps = {}
    S.zero_stat(eg, SWEEPS, steps)
    for j = 0, SWEEPS - 1 do
      local a = {}
      for key, v in pairs(args) do a[key] = v end
      a.slot = j
      steps[#steps + 1] = { k, a, S.grid(n) }
    end
    local res = S.run(eg, fname, steps, { S.stat_readback(eg, SWEEPS) })
    for j = 1, SWEEPS do
      sweeps = sweeps + 1
      if res[1][j] == 0 then done = true end
    end
    if not done and sweeps > n + SWEEPS then
      if expr then
        S.raise(fname, ("the cost expressions did not reach a fixed point in %d sweeps")
          :format(sweeps), "make each e-node's cost grow with its children's costs "
          .. "(monotone) and exceed each of them, e.g. (+ 1 sum) or (+ 1 max)")
      end
      require("vyre.errors").raise("internal",
        "vyre.EGraph:extract internal: costs did not converge", 0)
    end
  end
end

--- Tree costs and choices on the device: ccost (u64 per id) and best (u32 per id), with
--- the op cost Buffer (nil for expressions).
local function tree(eg, fname, cost)
  local expr = costfn.is_expr(cost)
  local exprs = expr and costfn.compile(eg, fname, cost)
  local opcost = not expr and op_costs(eg, fname, cost) or nil
  if not eg.clean then eg:rebuild() end
  S.settle(eg)
  -- row_epoch's top bit marks subsumed rows, which extraction skips
  require("vyre.egraph.rebuild").epochs(eg, fname)
  local be, n, nids = eg.be, eg.dev.nrows, eg.dev.nids
  local ccost = S.exact(eg, "ccost", math.max(nids, 1), "u64")
  local best = S.exact(eg, "best", math.max(nids, 1))
  lib.fill(be, ccost, INF)
  lib.fill(be, best, S.MAXU32)
  local args = { row_epoch = eg.row_epoch, isleaf = eg.isleaf, opcost = opcost,
    children = eg.children, row_class = eg.row_class, row_op = eg.row_op,
    row_off = eg.row_off, row_len = eg.row_len, ccost = ccost, stat = eg.stat, n = n,
    slot = 0 }
  local kcost, kbest = K.cost(be), K.best(be)
  if expr then
    kcost, kbest = costfn.kernels(be, exprs, eg.reg.arity)
    args.opcost = nil
  end
  sweep(eg, fname, kcost, args, expr)
  if n > 0 then
    local a = {}
    for key, v in pairs(args) do a[key] = v end
    a.slot, a.best = nil, best
    if not expr then a.stat = nil end
    local steps = {}
    if expr then S.zero_stat(eg, 10, steps) end
    steps[#steps + 1] = { kbest, a, S.grid(n) }
    local res = S.run(eg, fname, steps, expr and { S.stat_readback(eg, 10) } or nil)
    if expr and res[1][9] > 0 then
      S.raise(fname, ("the cost expressions gave %d e-nodes a cost outside [1, 2^62]")
        :format(res[1][9]), "keep every e-node's cost a positive integer below 2^62 "
        .. "(arithmetic wraps at 64 bits)")
    end
    if expr and res[1][10] > 0 then
      S.raise(fname, ("the cost expressions gave %d e-nodes of their class's least cost "
        .. "a cost not greater than a child's, so the extracted term could be infinite")
        :format(res[1][10]),
        "make each e-node's cost exceed each child's cost, e.g. (+ 1 sum) or (+ 1 max)")
    end
  end
  return ccost, best, opcost
end

-- DAG extraction (dag_extract.lua): the greedy choice on the device, then the exact
-- one on the host when the classes reachable from the roots are at most exact_limit.
-- Returns the choice (per id + 1 -> row) and the report.
local function dag(eg, fname, opts, roots, opcost, ccost, best, snap, costv)
  local oplist, nids = eg.opcost_list, eg.dev.nids
  local uroots, seen, tree_cost = {}, {}, 0
  for _, c in ipairs(roots) do
    if not seen[c] then
      seen[c] = true
      uroots[#uroots + 1] = c
      tree_cost = tree_cost + costv[c + 1]
    end
  end
  local choice, greedy, d0, rounds = D.greedy(eg, fname, opcost, ccost, best, uroots)
  local gv = choice:download({ count = math.max(nids, 1) })
  local chosen = {}
  for i = 1, math.max(nids, 1) do chosen[i] = gv[i] end
  local report = { tree = tree_cost, tree_dag = d0, greedy = greedy, rounds = rounds,
    method = "greedy", dag = greedy, optimal = false }
  local epoch = eg.dev.nrows > 0 and eg.row_epoch:download({ count = eg.dev.nrows }) or {}
  local rows, nclasses = D.problem(eg, snap, uroots, oplist, costv, epoch)
  report.classes = nclasses
  if nclasses <= (opts.exact_limit or 1000) then
    local ub = {}
    for c in pairs(rows) do ub[c] = gv[c + 1] end
    local ch, cost, complete, nodes = D.exact(rows, uroots, greedy, ub, opts.budget or 100000)
    for c, r in pairs(ch) do chosen[c + 1] = r end
    report.method, report.dag, report.optimal, report.nodes = "exact", cost, complete, nodes
    report.exact = complete and cost or nil
  end
  local check = D.dag_cost(eg, snap, chosen, uroots, oplist)
  if check ~= report.dag then
    require("vyre.errors").raise("internal", ("vyre.EGraph:extract internal: the DAG "
      .. "choice costs %s, not %d"):format(tostring(check), report.dag), 0)
  end
  return chosen, report
end

local DAG_OPTS = { dag = true, exact_limit = true, budget = true }

--- eg:extract(roots, cost [, opts]): roots is an id or a list of ids; returns term,
--- text, cost for one id, or a list of {term =, text =, cost =} for a list. With
--- opts.dag, also the DAG report (4th result, or the list's `dag` field).
function M.extract(eg, fname, roots, cost, opts)
  local single = math.type(roots) == "integer"
  local list = single and { roots } or roots
  if type(list) ~= "table" then
    S.raise(fname, "argument 1 (roots) must be an e-class id or a list of ids, got "
      .. type(roots), "pass eg:add(...)'s id or a list of ids")
  end
  for i = 1, #list do S.check_id(eg, fname, list[i], ("root %d"):format(i)) end
  if opts ~= nil and type(opts) ~= "table" then
    S.raise(fname, "argument 3 (opts) must be a table", "pass {dag = true} or nothing")
  end
  opts = opts or {}
  for k in pairs(opts) do
    if not DAG_OPTS[k] then
      S.raise(fname, ("unknown option '%s'"):format(tostring(k)),
        "use dag = true, exact_limit = n (classes) or budget = n (search nodes)")
    end
  end
  if opts.dag and costfn.is_expr(cost) then
    S.raise(fname, "DAG extraction needs a cost per op (a table op name -> integer or a "
      .. "function(name, arity)), not cost expressions",
      "pass integer op costs with {dag = true}, or extract tree costs with expressions")
  end
  for _, k in ipairs({ "exact_limit", "budget" }) do
    local v = opts[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 0) then
      S.raise(fname, ("opts.%s must be a non-negative integer, got %s"):format(k,
        tostring(v)), "e.g. exact_limit = 1000, budget = 100000")
    end
  end
  local ccost, best, opcost = tree(eg, fname, cost)
  local nids = eg.dev.nids
  local snap = M.snapshot(eg, fname)
  local bestv = best:download({ count = math.max(nids, 1) })
  local costv = ccost:download({ count = math.max(nids, 1) })
  local canon = {}
  for i, root in ipairs(list) do
    local c = snap.parent[root + 1]
    if bestv[c + 1] == S.MAXU32 then
      S.raise(fname, ("e-class %d has no finite term (every e-node in it depends on "
        .. "itself)"):format(root), "extract a class that contains a term")
    end
    canon[i] = c
  end
  local report
  if opts.dag then
    bestv, report = dag(eg, fname, opts, canon, opcost, ccost, best, snap, costv)
  end
  local memo, out = {}, {}
  for i = 1, #list do
    local c = canon[i]
    local r = build(eg, snap, bestv, c, memo)
    local cst = report and D.dag_cost(eg, snap, bestv, { c }, eg.opcost_list) or costv[c + 1]
    out[i] = { term = r.term, text = r.text, cost = cst }
  end
  if single then return out[1].term, out[1].text, out[1].cost, report end
  out.dag = report
  return out
end

-- Inspection ---------------------------------------------------------------------------

--- The canonical e-class ids that have e-nodes, ascending.
function M.classes(eg, fname)
  local s = M.snapshot(eg, fname)
  local out = {}
  for i = 1, s.ngroups do out[i] = s.gcls[i] end
  return out
end

local function node_of(eg, s, r)
  local op = s.op[r + 1]
  local node = { op = eg.reg.names[op + 1] }
  local off, len = s.off[r + 1], s.len[r + 1]
  if eg.reg.arity[op + 1] == 0 then
    node.payload = P.decode(eg, op, payload(s.words, off))
  else
    for k = 1, len do node[k] = s.words[off + k] end
  end
  return node
end

--- The e-nodes of c's class: {op = name, child ids...} or {op = name, payload = n}.
function M.nodes(eg, fname, c)
  S.check_id(eg, fname, c, "argument 1 (e-class)")
  local s = M.snapshot(eg, fname)
  local root = s.parent[c + 1]
  local lo, hi = 1, s.ngroups
  while lo <= hi do
    local mid = (lo + hi) // 2
    local v = s.gcls[mid]
    if v == root then
      local out = {}
      for p = s.goff[mid], s.goff[mid + 1] - 1 do out[#out + 1] = node_of(eg, s, s.grows[p + 1]) end
      return out
    elseif v < root then lo = mid + 1 else hi = mid - 1 end
  end
  return {}
end

--- Graphviz text: one cluster per e-class, edges from e-nodes to their child classes.
function M.dot(eg, fname)
  local s = M.snapshot(eg, fname)
  if #s.op > 100000 then
    S.raise(fname, ("the e-graph has %d e-nodes, too many to draw"):format(#s.op),
      "draw small e-graphs (at most 100000 e-nodes)")
  end
  local L = { "digraph egraph {", "  compound=true;", "  node [shape=box];" }
  local first = {}
  for gi = 1, s.ngroups do
    local c = s.gcls[gi]
    L[#L + 1] = ("  subgraph cluster_%d {"):format(c)
    L[#L + 1] = ("    label=\"e%d\"; style=dotted;"):format(c)
    for p = s.goff[gi], s.goff[gi + 1] - 1 do
      local r = s.grows[p + 1]
      first[c] = first[c] or r
      local nd = node_of(eg, s, r)
      local op = s.op[r + 1]
      -- the payload as its type prints (payload.lua): f64 and sym are not integers
      local label = nd.payload ~= nil and ("%s %s"):format(nd.op,
        P.text(eg, op, payload(s.words, s.off[r + 1]))) or nd.op
      L[#L + 1] = ("    n%d [label=%q];"):format(r, label)
    end
    L[#L + 1] = "  }"
  end
  for r = 0, #s.op - 1 do
    local nd = node_of(eg, s, r)
    for k, ch in ipairs(nd) do
      local c = s.parent[ch + 1]
      L[#L + 1] = ("  n%d -> n%d [lhead=cluster_%d, label=\"%d\"];"):format(r, first[c], c, k)
    end
  end
  L[#L + 1] = "}"
  return table.concat(L, "\n") .. "\n"
end

return M
