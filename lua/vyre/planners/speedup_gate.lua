-- vyre.planners.speedup_gate — is the resident megakernel really faster than the
-- host-orchestrated loop, by the required factor, on evidence that counts? Samples in,
-- a pass/fail verdict and the CSV evidence out (the original's header, column for
-- column, so its tooling reads ours).
--   gate.evaluate(samples [, opts]) -> {pass, factor, ratios, min_ratio, ratio, failures,
--                                      csv}
--   gate.csv(samples) -> the CSV text (header + one row per sample)
-- opts (defaults = the original's floors): factor = 5, min_samples = 2,
-- min_memory_bytes = 16 GiB, min_cc = "8.0", min_nodes = 10000, min_edges = 80000,
-- min_repetitions = 64, backend = "cuda". docs/PLANNERS.md §3.5.
local check = require("vyre.planners.check")

local M = {}

M.COLUMNS = {
  "backend_id", "device_ordinal", "device_memory_bytes", "compute_capability_major",
  "compute_capability_minor", "graph_nodes", "graph_edges", "repetitions",
  "host_orchestrated_ns", "resident_megakernel_ns", "setup_ns", "timed_graph_uploads",
  "timed_host_allocations", "timed_host_syncs", "resident_borrowed_fallback_dispatches",
}

M.HEADER = table.concat(M.COLUMNS, ",")

-- Counters that must be zero inside the timed region: anything else means the
-- "resident" time hides host work (an upload, an allocation, a sync) or fell back.
local ZERO = { "timed_graph_uploads", "timed_host_allocations", "timed_host_syncs",
  "resident_borrowed_fallback_dispatches" }

local DEFAULTS = {
  factor = 5, min_samples = 2, min_memory_bytes = 16 * 1024 ^ 3, min_cc = "8.0",
  min_nodes = 10000, min_edges = 80000, min_repetitions = 64, backend = "cuda",
}

local function sample_fields(s, i, fname)
  local label = ("samples[%d]"):format(i)
  check.table(s, label, fname, "each sample is a table with the CSV columns as keys")
  if type(s.backend_id) ~= "string" or s.backend_id == "" or s.backend_id:find("[,\n\"]") then
    check.fail(fname, ("%s.backend_id must be a name without commas or quotes (got %s)")
      :format(label, tostring(s.backend_id)), "backend_id = \"cuda\"", 1)
  end
  for k = 2, #M.COLUMNS do
    local col = M.COLUMNS[k]
    local min = (col == "host_orchestrated_ns" or col == "resident_megakernel_ns") and 1 or 0
    check.int(s, col, min, fname, nil, label)
  end
end

--- csv(samples) -> "<header>\n<row>\n..." with every column of every sample.
function M.csv(samples)
  local fname = "vyre.planners.speedup_gate.csv"
  check.table(samples, "samples", fname, "pass a list of samples")
  local lines = { M.HEADER }
  for i, s in ipairs(samples) do
    sample_fields(s, i, fname)
    local row = {}
    for k, col in ipairs(M.COLUMNS) do
      row[k] = k == 1 and s[col] or ("%d"):format(s[col])
    end
    lines[#lines + 1] = table.concat(row, ",")
  end
  return table.concat(lines, "\n") .. "\n"
end

local function cc_value(v, fname)
  local a, b = tostring(v):match("^(%d+)%.(%d)$")
  if not a then
    check.fail(fname, ("opts.min_cc must be like \"8.0\" (got %s)"):format(tostring(v)),
      "min_cc = \"8.0\"", 1)
  end
  return tonumber(a) * 10 + tonumber(b)
end

--- evaluate(samples [, opts]) -> verdict. Every sample must qualify (backend, memory,
--- compute capability, graph size, repetitions, all timed counters zero) and reach
--- host_orchestrated_ns / resident_megakernel_ns >= factor; at least min_samples
--- samples. failures lists every reason it did not pass, one string each.
function M.evaluate(samples, opts)
  local fname = "vyre.planners.speedup_gate.evaluate"
  check.table(samples, "samples", fname, "pass a list of samples")
  opts = opts or {}
  check.table(opts, "opts", fname, "pass {factor = 5}")
  for k in pairs(opts) do
    if DEFAULTS[k] == nil then
      check.fail(fname, ("unknown option '%s'"):format(tostring(k)),
        "options are factor, min_samples, min_memory_bytes, min_cc, min_nodes, min_edges, "
        .. "min_repetitions, backend")
    end
  end
  local o = {}
  for k, v in pairs(DEFAULTS) do if opts[k] == nil then o[k] = v else o[k] = opts[k] end end
  o.factor = check.num(o, "factor", 0, nil, fname, nil, "opts")
  if o.factor <= 0 then
    check.fail(fname, "opts.factor must be > 0", "factor = 5 (resident at least 5x faster)")
  end
  for _, k in ipairs({ "min_samples", "min_memory_bytes", "min_nodes", "min_edges",
      "min_repetitions" }) do
    o[k] = check.int(o, k, 0, fname, nil, "opts")
  end
  local min_cc = cc_value(o.min_cc, fname)
  local failures, ratios = {}, {}
  local function no(fmt, ...) failures[#failures + 1] = fmt:format(...) end
  if #samples < o.min_samples then
    no("%d sample%s, at least %d needed", #samples, #samples == 1 and "" or "s", o.min_samples)
  end
  local host_sum, res_sum = 0, 0
  for i, s in ipairs(samples) do
    sample_fields(s, i, fname)
    if s.backend_id ~= o.backend then
      no("sample %d: backend %s, not %s", i, s.backend_id, o.backend)
    end
    if s.device_memory_bytes < o.min_memory_bytes then
      no("sample %d: device memory %d < %d bytes", i, s.device_memory_bytes, o.min_memory_bytes)
    end
    if s.compute_capability_major * 10 + s.compute_capability_minor < min_cc then
      no("sample %d: compute capability %d.%d < %s", i, s.compute_capability_major,
        s.compute_capability_minor, o.min_cc)
    end
    if s.graph_nodes < o.min_nodes then
      no("sample %d: %d graph nodes < %d", i, s.graph_nodes, o.min_nodes)
    end
    if s.graph_edges < o.min_edges then
      no("sample %d: %d graph edges < %d", i, s.graph_edges, o.min_edges)
    end
    if s.repetitions < o.min_repetitions then
      no("sample %d: %d repetitions < %d", i, s.repetitions, o.min_repetitions)
    end
    for _, k in ipairs(ZERO) do
      if s[k] ~= 0 then no("sample %d: %s = %d inside the timed region", i, k, s[k]) end
    end
    ratios[i] = s.host_orchestrated_ns / s.resident_megakernel_ns
    if ratios[i] < o.factor then
      no("sample %d: speedup %.2fx < %gx", i, ratios[i], o.factor)
    end
    host_sum = host_sum + s.host_orchestrated_ns
    res_sum = res_sum + s.resident_megakernel_ns
  end
  local min_ratio
  for _, r in ipairs(ratios) do if not min_ratio or r < min_ratio then min_ratio = r end end
  return { pass = #failures == 0, factor = o.factor, ratios = ratios, min_ratio = min_ratio,
    ratio = res_sum > 0 and host_sum / res_sum or nil, failures = failures,
    csv = M.csv(samples) }
end

return M
