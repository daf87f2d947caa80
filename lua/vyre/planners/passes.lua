-- vyre.planners.passes — benchmark pass selection: which optional optimisation passes
-- (graph capture, launch fusion, result compaction, resident reuse, ...) a workload
-- should run, given its size and the planning-time and scratch-memory budgets.
--   passes.select({candidates = {{pass_id, min_frontier_items, min_reuse_count,
--                   min_avoided_readback_bytes, planning_cost_ns, scratch_bytes,
--                   expected_speedup_bps, mandatory_when_profitable}, ...},
--                  frontier_items, reuse_count, avoided_readback_bytes,
--                  planning_budget_ns, scratch_budget_bytes})
--     -> {selected = {pass_id, ...}, skipped = {{pass_id, reason, detail}, ...},
--         order = {pass_id, ...}, planning_ns, scratch_bytes, projected_speedup_bps,
--         projected_speedup}; tostring(result) is a table view
-- Rule: candidates sorted mandatory first, then by expected speedup (highest first),
-- then by pass id; each in turn is skipped when the workload is below one of its
-- thresholds (FrontierBelowThreshold, ReuseBelowThreshold, ReadbackBelowThreshold, in
-- that order), else when it would pass the planning budget (PlanningBudgetExceeded) or
-- the scratch budget (ScratchBudgetExceeded), else selected and charged to both. A
-- mandatory pass that is profitable but over a budget is an error. Projected speedup =
-- the product of the selected passes' factors (bps / 10000; bps floored after each).
-- Errors: a factor <= 10000 bps (a pass that does not speed up is not a candidate), a
-- repeated pass id, a mandatory pass over budget, bad fields. docs/PLANNERS.md §3.11.
local check = require("vyre.planners.check")

local M = {}

local FNAME = "vyre.planners.passes.select"

local THRESHOLDS = {
  { "min_frontier_items", "frontier_items", "FrontierBelowThreshold" },
  { "min_reuse_count", "reuse_count", "ReuseBelowThreshold" },
  { "min_avoided_readback_bytes", "avoided_readback_bytes", "ReadbackBelowThreshold" },
}

local function candidate_of(c, i, seen)
  local label = ("candidates[%d]"):format(i)
  check.table(c, label, FNAME, "a candidate is {pass_id = 'cuda.launch_fusion', ...}")
  local id = c.pass_id
  if type(id) ~= "string" or id == "" then
    check.fail(FNAME, ("%s.pass_id must be a non-empty string (got %s)"):format(label,
      tostring(id)), "pass_id = \"cuda.launch_fusion\"", 1)
  end
  if seen[id] then
    check.fail(FNAME, ("candidates[%d] repeats pass '%s' of candidates[%d]"):format(i, id,
      seen[id]), "list every pass once", 1)
  end
  seen[id] = i
  local r = { pass_id = id }
  for _, t in ipairs(THRESHOLDS) do r[t[1]] = check.int(c, t[1], 0, FNAME, 0, label) end
  r.planning_cost_ns = check.int(c, "planning_cost_ns", 0, FNAME, 0, label)
  r.scratch_bytes = check.int(c, "scratch_bytes", 0, FNAME, 0, label)
  r.expected_speedup_bps = check.int(c, "expected_speedup_bps", 0, FNAME, nil, label)
  if r.expected_speedup_bps <= 10000 then
    check.fail(FNAME, ("pass '%s' expects %d bps, not a speedup (10000 bps = 1x)"):format(id,
      r.expected_speedup_bps), "give expected_speedup_bps > 10000, or drop the pass", 1)
  end
  r.mandatory = check.bool(c, "mandatory_when_profitable", FNAME, false, label)
  return r
end

local VIEW = {}
VIEW.__index = VIEW

function VIEW.__tostring(r)
  local lines = { "pass                              decision" }
  local why = {}
  for _, s in ipairs(r.skipped) do why[s.pass_id] = s end
  for _, id in ipairs(r.order) do
    local s = why[id]
    lines[#lines + 1] = ("%-32s  %s"):format(id, s and ("skip %s (%s)"):format(s.reason,
      s.detail) or "run")
  end
  lines[#lines + 1] = ("projected speedup %.4fx, planning %d ns, scratch %d bytes"):format(
    r.projected_speedup, r.planning_ns, r.scratch_bytes)
  return table.concat(lines, "\n")
end

function M.select(input)
  check.table(input, "input", FNAME, "pass {candidates = {...}, frontier_items = n, ...}")
  local list = check.table(input.candidates, "input.candidates", FNAME,
    "candidates = {{pass_id = 'cuda.launch_fusion', expected_speedup_bps = 12000}}")
  local w = {}
  for _, t in ipairs(THRESHOLDS) do w[t[2]] = check.int(input, t[2], 0, FNAME, 0) end
  local plan_budget = check.int(input, "planning_budget_ns", 0, FNAME)
  local scratch_budget = check.int(input, "scratch_budget_bytes", 0, FNAME)
  local cands, seen = {}, {}
  for i, c in ipairs(list) do cands[i] = candidate_of(c, i, seen) end
  table.sort(cands, function(a, b)
    if a.mandatory ~= b.mandatory then return a.mandatory end
    if a.expected_speedup_bps ~= b.expected_speedup_bps then
      return a.expected_speedup_bps > b.expected_speedup_bps
    end
    return a.pass_id < b.pass_id
  end)
  local r = setmetatable({ selected = {}, skipped = {}, order = {}, planning_ns = 0,
    scratch_bytes = 0, projected_speedup_bps = 10000 }, VIEW)
  for _, c in ipairs(cands) do
    r.order[#r.order + 1] = c.pass_id
    local reason, detail
    for _, t in ipairs(THRESHOLDS) do
      if w[t[2]] < c[t[1]] then
        reason, detail = t[3], ("%s %d < %d"):format(t[2], w[t[2]], c[t[1]])
        break
      end
    end
    if not reason then
      local pn = check.add(r.planning_ns, c.planning_cost_ns, "planning ns", FNAME)
      local sb = check.add(r.scratch_bytes, c.scratch_bytes, "scratch bytes", FNAME)
      if pn > plan_budget then
        reason, detail = "PlanningBudgetExceeded", ("planning %d ns > budget %d"):format(pn,
          plan_budget)
      elseif sb > scratch_budget then
        reason, detail = "ScratchBudgetExceeded", ("scratch %d bytes > budget %d"):format(sb,
          scratch_budget)
      end
      if reason and c.mandatory then
        check.fail(FNAME, ("mandatory pass '%s' is profitable but over budget: %s [%s]")
          :format(c.pass_id, detail, reason),
          "raise planning_budget_ns / scratch_budget_bytes, or make the pass optional")
      end
      if not reason then
        r.planning_ns, r.scratch_bytes = pn, sb
        r.selected[#r.selected + 1] = c.pass_id
        r.projected_speedup_bps = check.mul(r.projected_speedup_bps, c.expected_speedup_bps,
          "projected speedup", FNAME) // 10000
      end
    end
    if reason then
      r.skipped[#r.skipped + 1] = { pass_id = c.pass_id, reason = reason, detail = detail }
    end
  end
  r.projected_speedup = r.projected_speedup_bps / 10000
  return r
end

return M
