-- vyre.planners — the original system's planners as pure functions: Lua tables in,
-- Lua tables out, no GPU needed (they read device profiles: vyre.cuda.profile(name) or
-- be:profile()). Each planner is one module, loaded on first use:
--   vyre.planners.occupancy     occupancy, workgroup pick, concurrency verdict
--   vyre.planners.capability    kernel capability diagnostics (verdict lines)
--   vyre.planners.convergence   the on-device convergence plan
--   vyre.planners.topology      frontier topology scheduler (+ hysteresis, memory plan)
--   vyre.planners.speedup_gate  samples -> pass/fail and the CSV evidence
--   vyre.planners.waves         Kahn layering of a wave DAG (barrier planner)
--   vyre.planners.fusion        greedy launch fusion within a memory budget
--   vyre.planners.multiquery    multi-query batching (graph uploaded once)
--   vyre.planners.compaction    result compaction (+ readback: one compacted transfer)
--   vyre.planners.session       resident graph session (+ speedup-gate samples)
--   vyre.planners.passes        benchmark pass selection
--   vyre.planners.workqueue     device work queues: capacity, headroom, drain windows
-- Rules, inputs, outputs and errors: docs/PLANNERS.md.
local M = {}

M.NAMES = { "capability", "compaction", "convergence", "fusion", "multiquery", "occupancy",
  "passes", "session", "speedup_gate", "topology", "waves", "workqueue" }

local known = {}
for _, n in ipairs(M.NAMES) do known[n] = true end

return setmetatable(M, {
  __index = function(t, k)
    if known[k] then
      local mod = require("vyre.planners." .. k)
      rawset(t, k, mod)
      return mod
    end
  end,
})
