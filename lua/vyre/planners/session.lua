-- vyre.planners.session — a resident graph session: one graph uploaded once and reused
-- by run_count runs, its frontier, scratch and output buffers allocated once, one host
-- fence at the end (readback of the final result only).
--   session.plan({graph_layout_hash, graph_bytes, run_count, per_run_frontier_bytes,
--                 reusable_scratch_bytes, per_run_output_bytes, budget_bytes,
--                 readback = "final_only"})
--     -> {peak_bytes, uploads = 1, allocations = 3, host_fences = 1, avoided_uploads,
--         avoided_upload_bytes, avoided_allocations, avoided_fences, ...the inputs}
--   session.sample(plan, measured) -> a vyre.planners.speedup_gate sample
--   session.samples(plan, {measured, ...}) -> {sample, ...}
-- Rule (the original's): peak = graph + frontier + scratch + output (buffers are reused
-- run after run, so the peak does not grow with runs); against a session that uploads
-- and allocates per run: avoided uploads = runs - 1 (of graph_bytes each), avoided
-- allocations = 3 x (runs - 1) (frontier, scratch, output), avoided fences = runs - 1.
-- Errors: a zero layout hash, graph size, run count or budget, a peak over the budget,
-- a readback other than "final_only" (a per-run readback is a host loop), sums past
-- 2^53. docs/PLANNERS.md §3.10.
local check = require("vyre.planners.check")
local gate = require("vyre.planners.speedup_gate")

local M = {}

function M.plan(input)
  local fname = "vyre.planners.session.plan"
  check.table(input, "input", fname, "pass {graph_layout_hash =, graph_bytes =, run_count =, ...}")
  local h = input.graph_layout_hash
  if (math.type(h) ~= "integer" and type(h) ~= "string") or h == 0 or h == "" then
    check.fail(fname, ("input.graph_layout_hash must be a non-zero integer or a string (got %s)")
      :format(tostring(h)), "set graph_layout_hash to the hash of the graph's layout")
  end
  local p = { graph_layout_hash = h }
  p.graph_bytes = check.int(input, "graph_bytes", 1, fname)
  p.run_count = check.int(input, "run_count", 1, fname)
  p.budget_bytes = check.int(input, "budget_bytes", 1, fname)
  for _, k in ipairs({ "per_run_frontier_bytes", "reusable_scratch_bytes",
      "per_run_output_bytes" }) do
    p[k] = check.int(input, k, 0, fname, 0)
  end
  local rb = input.readback
  if rb == nil then rb = "final_only" end
  if rb ~= "final_only" then
    check.fail(fname, ("input.readback must be \"final_only\" (got %s)"):format(tostring(rb)),
      "a session reads back its final result once; reading every run back is a host loop")
  end
  p.readback = rb
  local peak = p.graph_bytes
  for _, k in ipairs({ "per_run_frontier_bytes", "reusable_scratch_bytes",
      "per_run_output_bytes" }) do
    peak = check.add(peak, p[k], "peak bytes", fname)
  end
  if peak > p.budget_bytes then
    check.fail(fname, ("the session needs %d resident bytes (graph + frontier + scratch + "
      .. "output), over the budget of %d"):format(peak, p.budget_bytes),
      "raise budget_bytes or shrink the per-run buffers")
  end
  local extra = p.run_count - 1
  p.peak_bytes = peak
  p.uploads, p.allocations, p.host_fences = 1, 3, 1
  p.avoided_uploads = extra
  p.avoided_upload_bytes = check.mul(extra, p.graph_bytes, "avoided upload bytes", fname)
  p.avoided_allocations = 3 * extra
  p.avoided_fences = extra
  return p
end

-- Measured fields copied to the sample as they are (defaults: 0 or "cuda").
local COUNTERS = { timed_graph_uploads = "uploads", timed_host_allocations = "allocations",
  timed_host_syncs = "host_syncs", resident_borrowed_fallback_dispatches = "fallback_dispatches" }

--- sample(plan, measured) -> one speedup-gate sample. measured = {host_orchestrated_ns,
--- resident_ns, setup_ns, graph_nodes, graph_edges, device_memory_bytes, cc_major,
--- cc_minor (or profile = a device profile, which gives memory and capability),
--- backend_id = "cuda", device_ordinal = 0, and the timed region's counters uploads,
--- allocations, host_syncs, fallback_dispatches (default 0)}; repetitions = run_count.
function M.sample(plan, measured)
  local fname = "vyre.planners.session.sample"
  check.table(plan, "argument 1 (plan)", fname, "pass session.plan(...)'s result")
  check.table(measured, "argument 2 (measured)", fname, "pass {host_orchestrated_ns =, ...}")
  local run_count = check.int(plan, "run_count", 1, fname, nil, "plan")
  local prof = measured.profile
  if prof ~= nil then check.table(prof, "measured.profile", fname, "vyre.cuda.profile('h100')") end
  local function from(k, pk)
    local v = measured[k]
    if v == nil and prof then v = prof[pk] end
    return v
  end
  local s = {
    backend_id = measured.backend_id or "cuda",
    device_ordinal = measured.device_ordinal or 0,
    device_memory_bytes = from("device_memory_bytes", "memory_bytes"),
    compute_capability_major = from("cc_major", "cc_major"),
    compute_capability_minor = from("cc_minor", "cc_minor"),
    graph_nodes = measured.graph_nodes, graph_edges = measured.graph_edges,
    repetitions = run_count,
    host_orchestrated_ns = measured.host_orchestrated_ns,
    resident_megakernel_ns = measured.resident_ns,
    setup_ns = measured.setup_ns or 0,
  }
  for col, k in pairs(COUNTERS) do s[col] = measured[k] or 0 end
  -- The gate's CSV writer checks every column; a bad measurement fails here, named.
  local ok, err = pcall(gate.csv, { s })
  if not ok then
    check.fail(fname, ("the measurement does not make a sample: %s"):format(
      require("vyre.errors").is(err) and err.reason or tostring(err)),
      "give host_orchestrated_ns, resident_ns, graph_nodes, graph_edges and the device's "
      .. "memory and compute capability (or profile =)")
  end
  return s
end

--- samples(plan, {measured, ...}) -> {sample, ...} (for speedup_gate.evaluate).
function M.samples(plan, list)
  check.table(list, "argument 2 (list)", "vyre.planners.session.samples",
    "pass a list of measured sessions")
  local out = {}
  for i, m in ipairs(list) do out[i] = M.sample(plan, m) end
  return out
end

return M
