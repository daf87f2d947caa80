-- vyre.planners.multiquery — multi-query execution: many traversal queries over resident
-- graphs, grouped so that queries over the same graph layout with the same traversal
-- run as one launch, the graph is uploaded once, and each launch ends with one host
-- fence.
--   multiquery.plan({queries = {{query, graph_layout_hash, traversal_key,
--                    graph_upload_bytes, frontier_bytes, scratch_bytes, output_bytes},
--                    ...}, budget_bytes = N})
--     -> plan {batches = {{graph_layout_hash, traversal_key, queries = {id, ...},
--              resident_bytes, uploads_graph, upload_bytes, host_fences = 1}, ...},
--              launches, unbatched_launches, avoided_launches, host_fences,
--              avoided_host_fences, upload_bytes, avoided_upload_bytes,
--              peak_resident_bytes}; tostring(plan) is a table view
-- Rule: queries are grouped by (graph layout, traversal key), groups in the order of
-- their first query; inside a group, queries are packed greedily in input order while
-- graph + sum of frontier + max of scratch (scratch is reused query after query)
-- + sum of output <= budget, else a new batch of the same group opens. A layout's
-- graph is uploaded by its first batch; later batches (and groups) over it reuse it.
-- Errors: budget 0, a zero layout hash, traversal key or upload size, a repeated query
-- id, one query over the budget, one layout given two upload sizes, sums past 2^53.
-- docs/PLANNERS.md §3.8.
local check = require("vyre.planners.check")

local M = {}

local FNAME = "vyre.planners.multiquery.plan"

local function idstr(id)
  return type(id) == "string" and ("'%s'"):format(id) or tostring(id)
end

local function key_of(v)
  return math.type(v) == "integer" or (type(v) == "string" and v ~= "")
end

local function query_of(q, i, seen)
  local label = ("queries[%d]"):format(i)
  check.table(q, label, FNAME, "a query is {query = id, graph_layout_hash =, ...}")
  local id = q.query
  if not key_of(id) then
    check.fail(FNAME, ("%s.query must be a string or an integer (got %s)"):format(label,
      tostring(id)), "give every query a distinct id", 1)
  end
  if seen[id] then
    check.fail(FNAME, ("queries[%d] repeats the id %s of queries[%d]"):format(i, idstr(id),
      seen[id]), "give every query a distinct id", 1)
  end
  seen[id] = i
  local r = { query = id }
  for _, k in ipairs({ "graph_layout_hash", "traversal_key" }) do
    local v = q[k]
    if not key_of(v) or v == 0 then
      check.fail(FNAME, ("%s.%s must be a non-zero integer or a string (got %s)"):format(label,
        k, tostring(v)), ("set %s (0 means unknown, which cannot be grouped)"):format(k), 1)
    end
    r[k] = v
  end
  r.graph_upload_bytes = check.int(q, "graph_upload_bytes", 1, FNAME, nil, label)
  for _, k in ipairs({ "frontier_bytes", "scratch_bytes", "output_bytes" }) do
    r[k] = check.int(q, k, 0, FNAME, 0, label)
  end
  return r
end

local function add(a, b)
  return check.add(a, b, "the resident bytes", FNAME)
end

-- Bytes resident while batch b runs with query q added.
local function resident(b, q)
  local scratch = math.max(b.scratch, q.scratch_bytes)
  return add(add(add(q.graph_upload_bytes, add(b.frontier, q.frontier_bytes)), scratch),
    add(b.output, q.output_bytes)), scratch
end

local VIEW = {}
VIEW.__index = VIEW

function VIEW.__tostring(plan)
  local lines = { "launch  layout      traversal   resident  upload  queries" }
  for i, b in ipairs(plan.batches) do
    local ids = {}
    for j, id in ipairs(b.queries) do ids[j] = tostring(id) end
    lines[#lines + 1] = ("%6d  %-10s  %-10s  %8d  %6d  %s"):format(i,
      tostring(b.graph_layout_hash), tostring(b.traversal_key), b.resident_bytes,
      b.upload_bytes, table.concat(ids, " "))
  end
  lines[#lines + 1] = ("%d launches instead of %d, %d host fences avoided, %d upload bytes "
    .. "avoided, peak %d resident bytes"):format(plan.launches, plan.unbatched_launches,
    plan.avoided_host_fences, plan.avoided_upload_bytes, plan.peak_resident_bytes)
  return table.concat(lines, "\n")
end

function M.plan(input)
  check.table(input, "input", FNAME, "pass {queries = {...}, budget_bytes = n}")
  local budget = check.int(input, "budget_bytes", 0, FNAME)
  if budget == 0 then
    check.fail(FNAME, "input.budget_bytes is 0", "give the device memory the batches may use")
  end
  local list = check.table(input.queries, "input.queries", FNAME, "queries = {{query = 1, ...}}")
  local queries, seen, upload_of = {}, {}, {}
  for i, q in ipairs(list) do
    local r = query_of(q, i, seen)
    local prev = upload_of[r.graph_layout_hash]
    if prev and prev.bytes ~= r.graph_upload_bytes then
      check.fail(FNAME, ("queries[%d] gives layout %s %d upload bytes, queries[%d] gave %d")
        :format(i, idstr(r.graph_layout_hash), r.graph_upload_bytes, prev.i, prev.bytes),
        "one graph layout is one graph: give every query over it the same graph_upload_bytes")
    end
    upload_of[r.graph_layout_hash] = prev or { bytes = r.graph_upload_bytes, i = i }
    local alone = resident({ frontier = 0, scratch = 0, output = 0 }, r)
    if alone > budget then
      check.fail(FNAME, ("query %s alone needs %d resident bytes, over the budget of %d")
        :format(idstr(r.query), alone, budget), "raise budget_bytes or split the query")
    end
    queries[i] = r
  end
  -- Groups in the order of their first query; a group's open batch is its last one.
  local order, groups = {}, {}
  for _, q in ipairs(queries) do
    local gk = tostring(q.graph_layout_hash) .. "\0" .. tostring(q.traversal_key)
    local g = groups[gk]
    if not g then
      g = { batches = {} }
      groups[gk] = g
      order[#order + 1] = g
    end
    local b = g.batches[#g.batches]
    local need, scratch
    if b then need, scratch = resident(b, q) end
    if not b or need > budget then
      b = { graph_layout_hash = q.graph_layout_hash, traversal_key = q.traversal_key,
        queries = {}, frontier = 0, scratch = 0, output = 0, graph = q.graph_upload_bytes }
      g.batches[#g.batches + 1] = b
      need, scratch = resident(b, q)
    end
    b.queries[#b.queries + 1] = q.query
    b.frontier, b.scratch = b.frontier + q.frontier_bytes, scratch
    b.output, b.resident_bytes = b.output + q.output_bytes, need
  end
  local plan = setmetatable({ batches = {}, unbatched_launches = #queries, upload_bytes = 0,
    avoided_upload_bytes = 0, peak_resident_bytes = 0, budget_bytes = budget }, VIEW)
  local uploaded = {}
  for _, g in ipairs(order) do
    for _, b in ipairs(g.batches) do
      local first = not uploaded[b.graph_layout_hash]
      uploaded[b.graph_layout_hash] = true
      local out = { graph_layout_hash = b.graph_layout_hash, traversal_key = b.traversal_key,
        queries = b.queries, resident_bytes = b.resident_bytes, uploads_graph = first,
        upload_bytes = first and b.graph or 0, host_fences = 1 }
      plan.batches[#plan.batches + 1] = out
      plan.upload_bytes = add(plan.upload_bytes, out.upload_bytes)
      plan.peak_resident_bytes = math.max(plan.peak_resident_bytes, b.resident_bytes)
    end
  end
  -- Unbatched, every query uploads its graph, launches and fences once.
  local unbatched_upload = 0
  for _, q in ipairs(queries) do unbatched_upload = add(unbatched_upload, q.graph_upload_bytes) end
  plan.launches = #plan.batches
  plan.avoided_launches = #queries - #plan.batches
  plan.host_fences = #plan.batches
  plan.avoided_host_fences = #queries - #plan.batches
  plan.avoided_upload_bytes = unbatched_upload - plan.upload_bytes
  return plan
end

return M
