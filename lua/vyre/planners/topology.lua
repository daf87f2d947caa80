-- vyre.planners.topology — the frontier topology scheduler: how a frontier algorithm
-- (BFS, dataflow worklists) should lay out its next round, from the shape of the graph
-- and the frontier, memory pressure, launch pressure and fusion opportunity.
--   topo.choose(input) -> {topology, rule, measures, reason}
--   topo.choose_hysteresis(input, previous) -> the same + kept = bool
--   topo.memory_plan({nodes, edges, bytes_per_node, bytes_per_edge, frontier_bytes,
--                     scratch_bytes, output_bytes, budget_bytes}) -> {graph_bytes,
--                     required_bytes, budget_bytes, memory_bps, fits}
-- Topologies: "warp-sparse", "sparse", "block-dense", "dense", "hybrid", "fused-wave".
-- input: memory_bps (or required_bytes + budget_bytes, or memory = a memory plan),
-- degree (or edges + nodes), density (or frontier_nodes + nodes), launch_bps (or
-- launch_overhead_ns + dispatch_ns), fusion in [0, 1], readback_bytes.
-- Rules (first that holds), margins and why: docs/PLANNERS.md §3.4.
local check = require("vyre.planners.check")

local M = {}

M.TOPOLOGIES = { "warp-sparse", "sparse", "block-dense", "dense", "hybrid", "fused-wave" }

-- Hysteresis margins: a threshold must be crossed by this much to leave a topology.
M.MARGINS = { memory_bps = 250, density = 0.025, fusion = 0.10 }

-- The rules in order: each {name, topology, {measure, ">=" | "<=", threshold}...}.
M.RULES = {
  { "memory_pressure", "sparse", { "memory_bps", ">=", 9000 } },
  { "fused_wave", "fused-wave", { "fusion", ">=", 0.70 }, { "launch_bps", ">=", 1500 },
    { "readback_bytes", ">=", 4096 }, { "memory_bps", "<=", 8500 } },
  { "warp_sparse", "warp-sparse", { "density", "<=", 1 / 32 }, { "degree", "<=", 8 } },
  { "sparse_frontier", "sparse", { "density", "<=", 0.125 } },
  { "block_dense", "block-dense", { "density", ">=", 0.85 }, { "degree", ">=", 2 } },
  { "dense", "dense", { "density", ">=", 0.70 }, { "degree", ">=", 2 } },
  { "hybrid", "hybrid" },
}

local known = {}
for _, t in ipairs(M.TOPOLOGIES) do known[t] = true end

-- Does rule hold for measures m? shift +1 loosens every threshold by its margin
-- (staying), -1 tightens it (leaving), 0 is the plain rule.
local function holds(rule, m, shift)
  for i = 3, #rule do
    local c = rule[i]
    local x, t = m[c[1]], c[3]
    local margin = (M.MARGINS[c[1]] or 0) * shift
    if c[2] == ">=" then
      if x < t - margin then return false end
    elseif x > t + margin then
      return false
    end
  end
  return true
end

-- The measures from input, checked: each given directly or derived from raw counts.
local function measures(input, fname)
  check.table(input, "input", fname, "pass {memory_bps =, degree =, density =, launch_bps =, "
    .. "fusion =, readback_bytes =}")
  local m = {}
  if input.memory_bps ~= nil then
    m.memory_bps = check.num(input, "memory_bps", 0, nil, fname)
  elseif input.memory ~= nil then
    check.table(input.memory, "input.memory", fname, "pass the result of topology.memory_plan")
    m.memory_bps = check.num(input.memory, "memory_bps", 0, nil, fname, nil, "input.memory")
  elseif input.budget_bytes ~= nil then
    local req = check.int(input, "required_bytes", 0, fname)
    local budget = check.int(input, "budget_bytes", 1, fname)
    m.memory_bps = req * 10000 / budget
  else
    m.memory_bps = 0
  end
  if input.degree ~= nil then
    m.degree = check.num(input, "degree", 0, nil, fname)
  elseif input.edges ~= nil then
    local nodes = check.int(input, "nodes", 1, fname)
    m.degree = check.int(input, "edges", 0, fname) / nodes
  else
    check.fail(fname, "input.degree is missing", "give degree = edges / nodes, or edges and nodes")
  end
  if input.density ~= nil then
    m.density = check.num(input, "density", 0, 1, fname)
  elseif input.frontier_nodes ~= nil then
    local nodes = check.int(input, "nodes", 1, fname)
    local f = check.int(input, "frontier_nodes", 0, fname)
    if f > nodes then
      check.fail(fname, ("input.frontier_nodes (%d) exceeds input.nodes (%d)"):format(f, nodes),
        "the frontier is a subset of the nodes")
    end
    m.density = f / nodes
  else
    check.fail(fname, "input.density is missing",
      "give density = frontier nodes / nodes, or frontier_nodes and nodes")
  end
  if input.launch_bps ~= nil then
    m.launch_bps = check.num(input, "launch_bps", 0, nil, fname)
  elseif input.dispatch_ns ~= nil then
    local d = check.num(input, "dispatch_ns", 0, nil, fname)
    if d == 0 then
      check.fail(fname, "input.dispatch_ns is 0", "give the measured dispatch cost (> 0 ns)")
    end
    m.launch_bps = check.num(input, "launch_overhead_ns", 0, nil, fname) * 10000 / d
  else
    m.launch_bps = 0
  end
  m.fusion = check.num(input, "fusion", 0, 1, fname, 0)
  m.readback_bytes = check.num(input, "readback_bytes", 0, nil, fname, 0)
  return m
end

local function fmt(m)
  return ("memory %.0f bps, degree %.3g, density %.4g, launch %.0f bps, fusion %.2f, "
    .. "readback %d B"):format(m.memory_bps, m.degree, m.density, m.launch_bps, m.fusion,
      math.floor(m.readback_bytes))
end

local function decide(m)
  for _, r in ipairs(M.RULES) do
    if holds(r, m, 0) then return r end
  end
end

--- choose(input) -> {topology, rule, measures, reason}: the first rule that holds.
function M.choose(input)
  local m = measures(input, "vyre.planners.topology.choose")
  local r = decide(m)
  return { topology = r[2], rule = r[1], measures = m,
    reason = ("rule %s: %s"):format(r[1], fmt(m)) }
end

--- choose_hysteresis(input, previous) -> as choose, plus kept: previous stays unless
--- some rule for another topology holds with its thresholds tightened by the margins
--- before any rule for previous holds with them loosened (or previous's rules stop
--- holding by more than the margins). previous = nil is choose.
function M.choose_hysteresis(input, previous)
  local fname = "vyre.planners.topology.choose_hysteresis"
  local m = measures(input, fname)
  if previous ~= nil and not known[previous] then
    check.fail(fname, ("previous must be a topology name (got %s)"):format(tostring(previous)),
      "pass one of " .. table.concat(M.TOPOLOGIES, ", ") .. ", or nil")
  end
  local plain = decide(m)
  if previous == nil or plain[2] == previous then
    return { topology = plain[2], rule = plain[1], measures = m, kept = previous ~= nil,
      previous = previous, reason = ("rule %s: %s"):format(plain[1], fmt(m)) }
  end
  for _, r in ipairs(M.RULES) do
    if r[2] == previous and holds(r, m, 1) then
      return { topology = previous, rule = r[1], measures = m, kept = true, previous = previous,
        reason = ("kept %s (rule %s within the margins; plainly %s): %s"):format(previous,
          r[1], plain[2], fmt(m)) }
    elseif r[2] ~= previous and holds(r, m, -1) then
      break
    end
  end
  return { topology = plain[2], rule = plain[1], measures = m, kept = false, previous = previous,
    reason = ("left %s by more than the margins, rule %s: %s"):format(previous, plain[1], fmt(m)) }
end

--- memory_plan(input) -> graph = nodes x bytes_per_node + edges x bytes_per_edge;
--- required = graph + frontier + scratch + output; fits = required <= budget;
--- memory_bps = required x 10000 / budget. Errors: a zero budget, negative sizes,
--- sizes past 2^53 bytes.
function M.memory_plan(input)
  local fname = "vyre.planners.topology.memory_plan"
  check.table(input, "input", fname, "pass {nodes =, edges =, bytes_per_node =, "
    .. "bytes_per_edge =, budget_bytes =}")
  local budget = check.int(input, "budget_bytes", 0, fname)
  if budget == 0 then
    check.fail(fname, "budget_bytes is 0", "give the device memory the graph may use, e.g. "
      .. "profile.memory_bytes * 3 // 4")
  end
  local nodes = check.int(input, "nodes", 0, fname)
  local edges = check.int(input, "edges", 0, fname)
  local graph = check.add(
    check.mul(nodes, check.int(input, "bytes_per_node", 0, fname, 4), "nodes x bytes_per_node",
      fname),
    check.mul(edges, check.int(input, "bytes_per_edge", 0, fname, 4), "edges x bytes_per_edge",
      fname), "graph bytes", fname)
  local req = graph
  for _, k in ipairs({ "frontier_bytes", "scratch_bytes", "output_bytes" }) do
    req = check.add(req, check.int(input, k, 0, fname, 0), "required bytes", fname)
  end
  return { graph_bytes = graph, required_bytes = req, budget_bytes = budget,
    memory_bps = req * 10000 / budget, fits = req <= budget }
end

return M
