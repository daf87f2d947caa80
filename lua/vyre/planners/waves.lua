-- vyre.planners.waves — the barrier planner over a wave DAG: Kahn layering into groups
-- of mutually independent waves, one global barrier between consecutive groups. The
-- layering is libvyre's vyre_mega_layers (through vyre.core.mega_layers), the one
-- be:plan and be:megakernel execute; be:plan derives its edges from the memory steps
-- read and write, this one takes the edges as data, as the original's does.
--   waves.plan({waves = {id, ...} | n, edges = {{before, after}, ...}})
--     -> {groups = {{id, ...}, ...}, barriers = #groups - 1}
-- With waves given as {id =, frontier_bytes =, scratch_bytes =, output_bytes =} tables
-- (the frontier variant), each group also reports the bytes its waves hold together
-- and the plan the peak over groups. Errors (the original's names in brackets): an edge
-- naming an unknown wave or a repeated wave id [InvalidWave], an edge from a wave to
-- itself [SelfDependency], a cycle [Cycle], naming the waves left unscheduled.
-- docs/PLANNERS.md §3.6.
local check = require("vyre.planners.check")
local core = require("vyre.core")

local M = {}

local BYTES = { "frontier_bytes", "scratch_bytes", "output_bytes" }

local function idstr(id)
  return type(id) == "string" and ("'%s'"):format(id) or tostring(id)
end

function M.plan(input)
  local fname = "vyre.planners.waves.plan"
  check.table(input, "input", fname, "pass {waves = {...}, edges = {{before, after}, ...}}")
  local list = input.waves
  if math.type(list) == "integer" and list >= 0 then
    local n = list
    list = {}
    for i = 1, n do list[i] = i end
  end
  check.table(list, "input.waves", fname, "waves = {1, 2, 3} or a count")
  local ids, index, info = {}, {}, {}
  for i, w in ipairs(list) do
    local id = w
    if type(w) == "table" then
      id = w.id
      info[i] = {}
      for _, k in ipairs(BYTES) do
        info[i][k] = check.int(w, k, 0, fname, 0, ("waves[%d]"):format(i))
      end
    end
    if (type(id) ~= "string" and math.type(id) ~= "integer") or index[id] then
      check.fail(fname, ("waves[%d] has %s id %s [InvalidWave]"):format(i,
        index[id] and "a repeated" or "an invalid", idstr(id)),
        "give every wave a distinct integer or string id")
    end
    ids[i], index[id] = id, i
  end
  local edges = input.edges or {}
  check.table(edges, "input.edges", fname, "edges = {{1, 2}} (wave 1 before wave 2)")
  local seen, pairs_ = {}, {}
  for e, edge in ipairs(edges) do
    check.table(edge, ("input.edges[%d]"):format(e), fname, "an edge is {before, after}")
    local b = edge.before
    if b == nil then b = edge[1] end
    local a = edge.after
    if a == nil then a = edge[2] end
    for _, end_ in ipairs({ b, a }) do
      if index[end_] == nil then
        check.fail(fname, ("edge %d names wave %s, which is not in input.waves [InvalidWave]")
          :format(e, idstr(end_)), "list every wave an edge names in input.waves")
      end
    end
    if b == a then
      check.fail(fname, ("edge %d makes wave %s depend on itself [SelfDependency]"):format(e,
        idstr(b)), "drop the edge; a wave's own order is its business")
    end
    local bi, ai = index[b], index[a]
    local key = bi * (#ids + 1) + ai
    if not seen[key] then
      seen[key] = true
      pairs_[#pairs_ + 1] = { bi, ai }
    end
  end
  local layer, nlayers = core.mega_layers(#ids, pairs_)
  if not layer then -- nlayers: the waves a cycle leaves unscheduled
    local left = {}
    for k, i in ipairs(nlayers) do left[k] = idstr(ids[i]) end
    check.fail(fname, ("the edges form a cycle; unscheduled waves: %s [Cycle]"):format(
      table.concat(left, ", ")), "remove an edge of the cycle (a wave cannot precede itself)")
  end
  local groups = {}
  for l = 1, nlayers do groups[l] = { ids = {} } end
  for i = 1, #ids do -- in input order within a group
    local g = groups[layer[i]]
    g.ids[#g.ids + 1] = ids[i]
    if info[i] then
      for _, k in ipairs(BYTES) do g[k] = (g[k] or 0) + info[i][k] end
    end
  end
  local plan = { groups = {}, barriers = math.max(#groups - 1, 0) }
  for i, g in ipairs(groups) do
    plan.groups[i] = g.ids
    if g.frontier_bytes then
      g.total_bytes = g.frontier_bytes + g.scratch_bytes + g.output_bytes
      plan.group_bytes = plan.group_bytes or {}
      plan.group_bytes[i] = { frontier_bytes = g.frontier_bytes, scratch_bytes = g.scratch_bytes,
        output_bytes = g.output_bytes, total_bytes = g.total_bytes }
      for _, k in ipairs({ "frontier_bytes", "scratch_bytes", "output_bytes", "total_bytes" }) do
        local pk = "peak_" .. k
        plan[pk] = math.max(plan[pk] or 0, g[k])
      end
    end
  end
  return plan
end

return M
