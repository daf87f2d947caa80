-- vyre.planners.workqueue — the original system's device work-queue planner: a queue
-- that lives on the device while rounds drain it, the host reading only the final state.
--   workqueue.plan({entry_bytes, control_bytes = 0, budget_bytes = 2^64 - 1,
--                   capacity | expansion_items, initial_items = 0, drain_items = 0,
--                   host_sync = "final_only"})
--     -> {capacity, queue_bytes, control_bytes, resident_bytes, initial_occupancy_bps,
--         strategy = "single_resident_drain" | "chunked_resident_drain", items_per_chunk,
--         chunks, final_only_host_sync = true}
--   workqueue.worklist(type [, opts]) -> the profile be:worklist(type, opts) plans with
--     (entry_bytes = 2 x the item size: current and next items; control_bytes = 32)
-- Rules (the original's): queue = capacity x entry bytes, resident = queue + control,
-- within the budget; a given capacity must hold the initial items; without one the
-- capacity is initial + expansion (headroom), clamped to what the budget holds but
-- never below the initial items; occupancy = initial / capacity in basis points;
-- drain windows (backpressure): ceil(capacity / drain_items) windows of drain_items
-- (0: one window). A host read every round is refused: that is a host loop. The
-- arithmetic is libvyre's (vyre_workqueue_plan), the one be:worklist sizes with.
-- docs/PLANNERS.md §3.13.
local check = require("vyre.planners.check")

local M = {}

local SIZES = { i32 = 4, u32 = 4, f32 = 4, i64 = 8, u64 = 8, f64 = 8 }

--- plan(profile) -> the plan (above); raises "vyre.planners.workqueue.plan: ... Fix: ...".
function M.plan(profile)
  local fname = "vyre.planners.workqueue.plan"
  check.table(profile, "profile", fname, "pass {entry_bytes =, capacity = | expansion_items =}")
  local p = {}
  for _, k in ipairs({ "initial_items", "capacity", "expansion_items", "entry_bytes",
      "control_bytes", "drain_items" }) do
    p[k] = check.int(profile, k, 0, fname, 0)
  end
  if profile.budget_bytes ~= nil then p.budget_bytes = check.int(profile, "budget_bytes", 0,
    fname) end
  local hs = profile.host_sync
  if hs ~= nil and hs ~= "final_only" and hs ~= "host_participates" then
    check.fail(fname, ("profile.host_sync must be \"final_only\" or \"host_participates\" "
      .. "(got %s)"):format(tostring(hs)), "set host_sync = \"final_only\"")
  end
  p.host_sync = hs
  local ok, r = pcall(require("vyre.core").workqueue_plan, p)
  if not ok then
    local msg = tostring(type(r) == "table" and r.message or r)
    local what = msg:gsub("^[%w%.:_]+: ", ""):gsub("^work queue plan: ", ""):gsub("%.$", "")
    check.fail(fname, what, type(r) == "table" and r.fix or "see docs/PLANNERS.md §3.13")
  end
  return r
end

--- worklist(type [, opts]) -> the profile of a worklist of that item type: entry_bytes
--- (current + next item), control_bytes (the 32-byte header), and opts' capacity,
--- initial_items, expansion_items, budget_bytes and drain_items as given.
function M.worklist(ty, opts)
  local fname = "vyre.planners.workqueue.worklist"
  local size = SIZES[ty]
  if not size then
    check.fail(fname, ("the item type must be one of i32 u32 f32 i64 u64 f64 (got %s)")
      :format(tostring(ty)), "pass an item type such as \"u32\"")
  end
  opts = opts or {}
  check.table(opts, "opts", fname, "pass {expansion_items =, budget_bytes =}")
  local p = { entry_bytes = 2 * size, control_bytes = 32 }
  for _, k in ipairs({ "capacity", "initial_items", "expansion_items", "budget_bytes",
      "drain_items" }) do
    p[k] = opts[k]
  end
  return p
end

return M
