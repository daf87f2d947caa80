-- vyre.plan_view — how a megakernel plan (the table be:plan returns) shows itself:
-- plan:dot() is Graphviz text (a node per step, a cluster per layer, an edge per
-- barrier labelled with the dependency that forced it) and tostring(plan) a readable
-- summary. be:plan calls attach(plan); a hand-made table works the same way.
--   local view = require("vyre.plan_view")
--   view.attach(plan [, steps]) -> plan (with the metatable; the steps' expansion layouts
--                      copied in: plan.steps[i].expansion, plan.expansion)
--   plan:dot()         -> "digraph plan { ... }"    (`dot -Tsvg` renders it)
--   tostring(plan)     -> "plan: cooperative — ..."
-- The plan's shape: docs/PLANNERS.md §4.
local Err = require("vyre.errors")
local M = {}

local methods = {}
local mt = { __index = methods, __name = "vyre.Plan" }

local KINDS = { RAW = "read after write", WAR = "write after read", WAW = "write after write" }

local function fail(what, fix)
  Err.fail("arg", "vyre.Plan:dot", what, fix, 3)
end

-- A Graphviz double-quoted string: quotes and backslashes escaped, newlines as \n.
local function q(s)
  s = tostring(s):gsub("\\", "\\\\"):gsub("\"", "\\\""):gsub("\r?\n", "\\n")
  return "\"" .. s .. "\""
end

-- "3: bfs_edges" (a named step), "step 3" (unnamed); then the layout of a step that
-- carries an expansion: "3: bfs_edges (edges)".
local function step_name(plan, i)
  local s = plan.steps and plan.steps[i]
  local n = type(s) == "table" and s.name or nil
  local name = n and ("%d: %s"):format(i, n) or ("step %d"):format(i)
  local e = type(s) == "table" and type(s.expansion) == "table" and s.expansion.layout
  return e and ("%s (%s)"):format(name, tostring(e)) or name
end

local function check_shape(plan)
  if type(plan.layers) ~= "table" then
    fail(("plan.layers must be a list of {steps = {...}} (got %s)"):format(type(plan.layers)),
      "build the plan with be:plan(steps, opts)")
  end
  local nsteps = plan.steps and #plan.steps or 0
  local seen = {}
  for li, layer in ipairs(plan.layers) do
    if type(layer) ~= "table" or type(layer.steps) ~= "table" then
      fail(("plan.layers[%d] must be {steps = {...}}"):format(li), "list the layer's steps")
    end
    for _, s in ipairs(layer.steps) do
      if math.type(s) ~= "integer" or s < 1 or (nsteps > 0 and s > nsteps) or seen[s] then
        fail(("plan.layers[%d] lists step %s, which is %s"):format(li, tostring(s),
          seen[s] and "already in a layer" or "not a step index"),
          "each step index appears in exactly one layer")
      end
      seen[s] = li
    end
  end
  for bi, b in ipairs(plan.barriers or {}) do
    if type(b) ~= "table" or not seen[b.from] or not seen[b.to] then
      fail(("plan.barriers[%d] must name steps of the plan in from and to"):format(bi),
        "barriers = {{after_layer = 1, kind = \"RAW\", buffer = \"x\", from = 1, to = 2}}")
    end
  end
  return seen
end

--- plan:dot() -> Graphviz text of the plan.
function methods.dot(plan)
  local seen = check_shape(plan)
  local out = { "digraph plan {", "  rankdir=TB;", "  compound=true;",
    "  node [shape=box, fontname=\"monospace\"];" }
  local title = ("mode: %s"):format(tostring(plan.mode or "?"))
  if plan.reason then title = title .. "\n" .. plan.reason end
  out[#out + 1] = ("  label=%s;"):format(q(title))
  out[#out + 1] = "  labelloc=t;"
  for li, layer in ipairs(plan.layers) do
    out[#out + 1] = ("  subgraph cluster_layer%d {"):format(li)
    out[#out + 1] = ("    label=%s;"):format(q(("layer %d"):format(li)))
    out[#out + 1] = "    style=rounded;"
    for _, s in ipairs(layer.steps) do
      out[#out + 1] = ("    s%d [label=%s];"):format(s, q(step_name(plan, s)))
    end
    out[#out + 1] = "  }"
  end
  -- Steps of a table that no layer lists still get a node, outside every cluster.
  for i = 1, plan.steps and #plan.steps or 0 do
    if not seen[i] then out[#out + 1] = ("  s%d [label=%s];"):format(i, q(step_name(plan, i))) end
  end
  for _, b in ipairs(plan.barriers or {}) do
    local label = ("%s %s"):format(tostring(b.kind or "dep"), tostring(b.buffer or "?"))
    if b.after_layer then label = label .. ("\nbarrier after layer %d"):format(b.after_layer) end
    out[#out + 1] = ("  s%d -> s%d [label=%s];"):format(b.from, b.to, q(label))
  end
  out[#out + 1] = "}"
  return table.concat(out, "\n") .. "\n"
end

local function bytes(n)
  if type(n) ~= "number" then return tostring(n) end
  if n >= 1024 * 1024 then return ("%.1f MiB"):format(n / 1024 / 1024) end
  if n >= 1024 then return ("%.1f KiB"):format(n / 1024) end
  return ("%d B"):format(math.floor(n))
end

local function occ(o)
  if type(o) ~= "number" then return tostring(o) end
  if o > 1 then o = o / 10000 end -- basis points
  return ("%.1f%%"):format(o * 100)
end

-- A short, sorted "k=v" list of the plan's facts (tables shown by their type).
local function facts_line(f)
  local keys = {}
  for k in pairs(f) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  local kv = {}
  for _, k in ipairs(keys) do
    local v = f[k]
    kv[#kv + 1] = ("%s=%s"):format(k, type(v) == "table" and "{...}" or tostring(v))
  end
  return table.concat(kv, " ")
end

--- tostring(plan): mode and reason, grid and occupancy, bytes per round, the layers with
--- their steps, each barrier with its dependency, and the facts.
-- What the reference backend does with a plan, in place of the GPU's grid line: it has
-- no blocks, SMs or occupancy (a GPU's numbers would read "0 blocks (0 per SM x nil
-- SMs)"). src/core/ref/grid.c runs the composed program one section at a time.
local function reference_lines(plan)
  local f, g = plan.facts, type(plan.grid) == "table" and plan.grid or {}
  local function n(x) return tostring(math.tointeger(x) or x or "?") end
  local until_ = f.converge_on == "worklist" and "until a round pushes nothing"
    or "until the flag stays 0"
  local rounds = f.converge and ("up to %s rounds, %s"):format(n(f.max_rounds
    or f.rounds), until_) or ("%s round%s"):format(n(f.times or f.rounds),
    (f.times or f.rounds) == 1 and "" or "s")
  return {
    ("plan: reference — the CPU interpreter runs it; a GPU's policy would pick %s (%s)")
      :format(tostring(plan.mode), tostring(plan.reason or "no reason given")),
    ("reference: runs the steps in order on the CPU, one section at a time (every "
      .. "workgroup finishes a section before the next starts; each grid barrier ends one): "
      .. "%s step%s in %s layer%s, %s barrier%s, %s workgroup%s of %s threads, %s; no blocks, "
      .. "SMs or occupancy"):format(n(f.steps), f.steps == 1 and "" or "s", n(f.layers),
      f.layers == 1 and "" or "s", n(f.barriers), f.barriers == 1 and "" or "s",
      n(f.virtual_workgroups), f.virtual_workgroups == 1 and "" or "s",
      n(g.threads or f.threads), rounds),
  }
end

function mt.__tostring(plan)
  local ref = type(plan.facts) == "table" and plan.facts.backend == "reference"
  local out = ref and reference_lines(plan)
    or { ("plan: %s — %s"):format(tostring(plan.mode), tostring(plan.reason or "")) }
  local g = plan.grid
  if type(g) == "table" and not ref then
    out[#out + 1] = ("grid: %s blocks (%s per SM x %s SMs) of %s threads, occupancy %s")
      :format(tostring(g.blocks), tostring(g.blocks_per_sm), tostring(g.sms), tostring(g.threads),
        occ(plan.occupancy))
  end
  if plan.bytes_per_round then
    out[#out + 1] = ("bytes per round: %s"):format(bytes(plan.bytes_per_round))
  end
  local x = plan.expansion
  if type(x) == "table" then
    local st = {}
    for i, s in ipairs(type(x.steps) == "table" and x.steps or {}) do st[i] = tostring(s) end
    local layouts = type(x.layouts) == "table" and #x.layouts > 1
      and table.concat(x.layouts, ", ") or tostring(x.layout)
    out[#out + 1] = ("expansion: %s%s — %s"):format(layouts, #st > 0 and (" (step%s %s)")
      :format(#st == 1 and "" or "s", table.concat(st, ", ")) or "", tostring(x.reason or
      "no reason given"))
  end
  local after = {}
  for _, b in ipairs(plan.barriers or {}) do
    local l = b.after_layer or 0
    after[l] = after[l] or {}
    after[l][#after[l] + 1] = b
  end
  for li, layer in ipairs(plan.layers or {}) do
    local names = {}
    for i, s in ipairs(layer.steps or {}) do names[i] = ("[%s]"):format(step_name(plan, s)) end
    out[#out + 1] = ("layer %d: %s"):format(li, table.concat(names, " "))
    for _, b in ipairs(after[li] or {}) do
      out[#out + 1] = ("  barrier: %s (%s) on %s, step %s -> step %s"):format(
        tostring(b.kind), KINDS[b.kind] or "dependency", tostring(b.buffer), tostring(b.from),
        tostring(b.to))
    end
  end
  if type(plan.facts) == "table" then out[#out + 1] = "facts: " .. facts_line(plan.facts) end
  return table.concat(out, "\n")
end

-- What the steps carry for the plan (be:plan passes them to attach): each step's
-- `expansion` ({layout, reason}, set by lib.steps.expand) goes into plan.steps[i], which
-- also names the step's kernel, and plan.expansion sums them up: the first one's layout
-- and reason, the steps that carry one, and every layout among them (in step order).
-- Steps that carry none leave the plan as be:plan built it.
local function copy_expansion(plan, steps)
  if type(steps) ~= "table" then return end
  local any = false
  for _, s in ipairs(steps) do
    if type(s) == "table" and type(s.expansion) == "table" then any = true end
  end
  if not any then return end
  local ps, sum, seen = {}, nil, {}
  for i, s in ipairs(steps) do
    local ok, name = pcall(function() return s[1].name end)
    ps[i] = { name = ok and type(name) == "string" and name or nil }
    local e = type(s) == "table" and s.expansion
    if type(e) == "table" then
      ps[i].expansion = { layout = e.layout, reason = e.reason }
      sum = sum or { layout = e.layout, reason = e.reason, steps = {}, layouts = {} }
      sum.steps[#sum.steps + 1] = i
      if e.layout ~= nil and not seen[e.layout] then
        seen[e.layout] = true
        sum.layouts[#sum.layouts + 1] = e.layout
      end
    end
  end
  plan.steps, plan.expansion = ps, sum
end

--- attach(plan [, steps]) -> plan, with :dot() and __tostring; steps (what be:plan was
--- given): their `expansion` fields go into plan.steps[i].expansion and plan.expansion.
--- Raises on a non-table.
function M.attach(plan, steps)
  if type(plan) ~= "table" then
    Err.raise("type", ("vyre.plan_view.attach: plan must be a table (got %s). Fix: pass the table "
      .. "be:plan returns"):format(type(plan)), 2)
  end
  copy_expansion(plan, steps)
  return setmetatable(plan, mt)
end

M.methods = methods
M.metatable = mt

return M
