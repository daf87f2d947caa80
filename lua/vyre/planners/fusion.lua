-- vyre.planners.fusion — the original's greedy launch-fusion planner: which consecutive
-- stages of a pipeline could run as one launch within a memory budget, and what that
-- saves. It only plans; vyre.fuse (src/core/ir/fuse.c) does the fusing.
--   fusion.plan({stages = {{id, layout_hash, input_bytes, output_bytes, scratch_bytes,
--                requires_host_materialization}, ...}, budget_bytes = N})
--     -> plan {groups = {{stages = {id, ...}, layout_hash, required_bytes,
--              avoided_bytes}, ...}, launches, unfused_launches, avoided_launches,
--              avoided_bytes, budget_bytes}; plan:dot(), tostring(plan) (a table view)
-- Rule (left to right): a group opens with a stage's in + out + scratch bytes and takes
-- the next stage iff both have the same layout hash, neither must be materialised on
-- the host, and required + next scratch + next output <= budget; each stage taken
-- avoids the previous stage's output bytes (the intermediate never goes through memory
-- between launches). Errors (the original's names in brackets): budget 0 [ZeroBudget],
-- a repeated stage id [DuplicateStage], a stage whose own bytes exceed the budget
-- [StageOverBudget], byte sums past 2^53 [Overflow]. docs/PLANNERS.md §3.7.
local check = require("vyre.planners.check")

local M = {}

local FNAME = "vyre.planners.fusion.plan"

local function idstr(id)
  return type(id) == "string" and ("'%s'"):format(id) or tostring(id)
end

-- Sums that cannot overflow silently: check.add raises past 2^53; the original calls
-- this error Overflow, so the message carries the name.
local function add(a, b, what)
  if a + b > 2^53 then
    check.fail(FNAME, ("%s overflows (%d + %d) [Overflow]"):format(what, a, b),
      "check the sizes: they exceed 2^53 bytes", 2)
  end
  return a + b
end

local function stage_of(s, i, seen)
  local label = ("stages[%d]"):format(i)
  check.table(s, label, FNAME, "a stage is {id =, layout_hash =, input_bytes =, ...}")
  local id = s.id
  if (type(id) ~= "string" and math.type(id) ~= "integer") then
    check.fail(FNAME, ("%s.id must be a string or an integer (got %s)"):format(label,
      tostring(id)), "give every stage a distinct id", 1)
  end
  if seen[id] then
    check.fail(FNAME, ("stages[%d] repeats the id %s of stages[%d] [DuplicateStage]"):format(i,
      idstr(id), seen[id]), "give every stage a distinct id", 1)
  end
  seen[id] = i
  local h = s.layout_hash
  if type(h) ~= "string" and math.type(h) ~= "integer" then
    check.fail(FNAME, ("%s.layout_hash must be an integer or a string (got %s)"):format(label,
      tostring(h)), "layout_hash = the hash of the index space the stage runs over", 1)
  end
  local st = { id = id, layout_hash = h }
  for _, k in ipairs({ "input_bytes", "output_bytes", "scratch_bytes" }) do
    st[k] = check.int(s, k, 0, FNAME, 0, label)
  end
  st.host = check.bool(s, "requires_host_materialization", FNAME, false, label)
  return st
end

local VIEW = {}
VIEW.__index = VIEW

--- Graphviz text: a cluster per group (one launch), a node per stage, the pipeline's
--- edges between consecutive stages; fused edges are solid, launch boundaries dashed.
function VIEW.dot(plan)
  local q = function(s) return '"' .. tostring(s):gsub('[\\"]', "\\%0") .. '"' end
  local out = { "digraph fusion {", "  rankdir=LR;", "  node [shape=box];",
    ("  label=%s;"):format(q(("%d launches (%d avoided), %d bytes avoided, budget %d")
      :format(plan.launches, plan.avoided_launches, plan.avoided_bytes, plan.budget_bytes))) }
  local prev
  for gi, g in ipairs(plan.groups) do
    out[#out + 1] = ("  subgraph cluster_group%d {"):format(gi)
    out[#out + 1] = ("    label=%s;"):format(q(("launch %d: %d bytes"):format(gi,
      g.required_bytes)))
    for _, id in ipairs(g.stages) do
      out[#out + 1] = ("    %s;"):format(q(id))
    end
    out[#out + 1] = "  }"
    for si, id in ipairs(g.stages) do
      if prev then
        out[#out + 1] = ("  %s -> %s%s;"):format(q(prev), q(id),
          si == 1 and " [style=dashed]" or "")
      end
      prev = id
    end
  end
  out[#out + 1] = "}"
  return table.concat(out, "\n") .. "\n"
end

--- A text table: one row per group (its launch), then the totals.
function VIEW.__tostring(plan)
  local lines = { "launch  layout        required  avoided  stages" }
  for gi, g in ipairs(plan.groups) do
    local ids = {}
    for i, id in ipairs(g.stages) do ids[i] = tostring(id) end
    lines[#lines + 1] = ("%6d  %-12s  %8d  %7d  %s"):format(gi, tostring(g.layout_hash),
      g.required_bytes, g.avoided_bytes, table.concat(ids, " "))
  end
  lines[#lines + 1] = ("%d launches instead of %d (%d avoided), %d intermediate bytes avoided")
    :format(plan.launches, plan.unfused_launches, plan.avoided_launches, plan.avoided_bytes)
  return table.concat(lines, "\n")
end

function M.plan(input)
  check.table(input, "input", FNAME, "pass {stages = {...}, budget_bytes = n}")
  local budget = check.int(input, "budget_bytes", 0, FNAME)
  if budget == 0 then
    check.fail(FNAME, "input.budget_bytes is 0 [ZeroBudget]",
      "give the memory budget the fused launches may use, in bytes")
  end
  local list = check.table(input.stages, "input.stages", FNAME, "stages = {{id = 'a', ...}}")
  local stages, seen = {}, {}
  for i, s in ipairs(list) do stages[i] = stage_of(s, i, seen) end
  for i, s in ipairs(stages) do
    local own = add(add(s.input_bytes, s.output_bytes, "a stage's bytes"), s.scratch_bytes,
      "a stage's bytes")
    if own > budget then
      check.fail(FNAME, ("stage %s needs %d bytes (in + out + scratch), over the budget of %d "
        .. "[StageOverBudget]"):format(idstr(s.id), own, budget),
        "raise budget_bytes or split the stage", 1)
    end
    s.own, stages[i] = own, s
  end
  local plan = setmetatable({ groups = {}, budget_bytes = budget, unfused_launches = #stages,
    avoided_bytes = 0 }, VIEW)
  local g, last
  for _, s in ipairs(stages) do
    local joins = g and s.layout_hash == g.layout_hash and not s.host and not last.host
    if joins then
      local need = add(add(g.required_bytes, s.scratch_bytes, "required bytes"), s.output_bytes,
        "required bytes")
      joins = need <= budget
      if joins then
        g.required_bytes = need
        g.avoided_bytes = add(g.avoided_bytes, last.output_bytes, "avoided bytes")
        g.stages[#g.stages + 1] = s.id
      end
    end
    if not joins then
      g = { stages = { s.id }, layout_hash = s.layout_hash, required_bytes = s.own,
        avoided_bytes = 0 }
      plan.groups[#plan.groups + 1] = g
    end
    last = s
  end
  for _, grp in ipairs(plan.groups) do
    plan.avoided_bytes = add(plan.avoided_bytes, grp.avoided_bytes, "avoided bytes")
  end
  plan.launches = #plan.groups
  plan.avoided_launches = #stages - #plan.groups
  return plan
end

return M
