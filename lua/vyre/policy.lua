-- vyre.policy — the Lua policies the runtime asks before it runs something it could run
-- several ways. Today one: policy.megakernel(facts) chooses how be:megakernel and
-- be:plan execute a list of steps — one cooperative persistent kernel, a CUDA graph
-- replayed per round with one flag readback, or a host loop of launches. Users replace
-- it:   vyre.policy.megakernel = function(facts) return {mode = "graph", reason = "..."} end
-- The runtime calls policy.decide(facts) through the callback vyre registers when it
-- loads (vyre.core.set_megakernel_policy: the C binding requires no Lua module, and this
-- file is the one home of the mode rule). decide fills missing costs from the device
-- profile, calls whatever policy.megakernel is now, and checks the answer (a policy can
-- never make the runtime launch a grid that cannot be co-resident: that would hang).
-- The facts, the default rule and why: docs/PLANNERS.md §2.
local profiles = require("vyre.profiles")
local callback = require("vyre.callback")

local Err = require("vyre.errors")
local M = {}

M.MODES = { cooperative = true, graph = true, split = true }
-- One name per mode (docs/API.md "Vocabulary"): the host split was "host_loop" here and "split" in
-- be:grid_sync; the old name is refused with the new one.
M.RENAMED = { host_loop = "split" }

local function renamed(mode)
  local new = M.RENAMED[mode]
  return new and (" ('%s' is now called '%s')"):format(mode, new) or ""
end

local COST_KEYS = { "launch_ns", "graph_node_ns", "graph_launch_ns", "readback_ns",
  "barrier_ns" }

local function fail(fname, what, fix, level)
  Err.fail("arg", fname, what, fix, (level or 2) + 1)
end

local function check_int(facts, k, min, fname, required)
  local v = facts[k]
  if v == nil and not required then return end
  if math.type(v) ~= "integer" or v < min then
    fail(fname, ("facts.%s must be an integer >= %d (got %s)"):format(k, min, tostring(v)),
      ("set facts.%s, e.g. %s = %d"):format(k, k, math.max(min, 1)), 3)
  end
end

local function check_num(facts, k, fname)
  local v = facts[k]
  if v ~= nil and (type(v) ~= "number" or v < 0 or v ~= v) then
    fail(fname, ("facts.%s must be a number >= 0 (got %s)"):format(k, tostring(v)),
      ("leave facts.%s out to use the profile's value"):format(k), 3)
  end
end

--- check_facts(facts, fname) -> facts, or raises naming the first bad field.
function M.check_facts(facts, fname)
  fname = fname or "vyre.policy.megakernel"
  if type(facts) ~= "table" then
    fail(fname, ("facts must be a table (got %s)"):format(type(facts)),
      "call be:plan(steps, opts) and read plan.facts, or build {steps =, layers =, "
      .. "cooperative =, fits =}")
  end
  for _, k in ipairs({ "cooperative", "fits" }) do
    if type(facts[k]) ~= "boolean" then
      fail(fname, ("facts.%s must be a boolean (got %s)"):format(k, type(facts[k])),
        ("set facts.%s = true or false"):format(k))
    end
  end
  check_int(facts, "steps", 1, fname, true)
  check_int(facts, "layers", 1, fname, true)
  if facts.layers > facts.steps then
    fail(fname, ("facts.layers (%d) exceeds facts.steps (%d)"):format(facts.layers, facts.steps),
      "a layer holds at least one step: layers <= steps")
  end
  for _, k in ipairs({ "sms", "blocks_per_sm", "rounds_expected", "max_rounds", "times" }) do
    check_int(facts, k, k == "blocks_per_sm" and 0 or 1, fname, false)
  end
  for _, k in ipairs(COST_KEYS) do check_num(facts, k, fname) end
  for _, k in ipairs({ "bytes_per_round", "memory_bandwidth", "occupancy" }) do
    check_num(facts, k, fname)
  end
  if facts.occupancy and facts.occupancy > 1 then
    fail(fname, ("facts.occupancy must be a fraction in [0, 1] (got %s)"):format(facts.occupancy),
      "pass occupancy_bps / 10000")
  end
  if facts.force ~= nil and not M.MODES[facts.force] then
    fail(fname, ("facts.force must be 'cooperative', 'graph' or 'split' (got %s)%s")
      :format(tostring(facts.force), renamed(facts.force)),
      "leave it out to let the policy choose, or force one of the three")
  end
  return facts
end

--- complete(facts [, profile]) -> facts with every missing cost (launch_ns,
--- graph_node_ns, graph_launch_ns, readback_ns, barrier_ns) and memory_bandwidth taken
--- from profile (default: facts.profile, else the h100 profile). Changes facts in place.
function M.complete(facts, profile)
  profile = profile or facts.profile or profiles.get("h100")
  local c = profile.costs or {}
  -- A barrier at full occupancy costs more than one with one block per SM (more
  -- arrivals): take the full-occupancy cost when more than one block per SM is resident.
  if facts.barrier_ns == nil and (facts.blocks_per_sm or 1) > 1 then
    facts.barrier_ns = c.barrier_full_ns
  end
  for _, k in ipairs(COST_KEYS) do
    if facts[k] == nil then facts[k] = c[k] end
  end
  if facts.memory_bandwidth == nil then facts.memory_bandwidth = profile.memory_bandwidth end
  if facts.sms == nil then facts.sms = profile.sms end
  return facts
end

-- The rounds the plan will run: a converging plan's estimate (or its cap), else `times`.
local function rounds_of(f)
  if f.converge then return f.rounds_expected or f.max_rounds or 1 end
  return f.rounds_expected or f.times or 1
end

--- costs(facts) -> {cooperative =, graph =, split =} estimated ns for the whole
--- execution, rounds. See docs/PLANNERS.md §2 for the model.
function M.costs(f)
  local r = rounds_of(f)
  local work = 0
  if f.bytes_per_round and f.memory_bandwidth and f.memory_bandwidth > 0 then
    work = f.bytes_per_round / f.memory_bandwidth * 1e9
  end
  -- A persistent grid below half occupancy has fewer loads in flight; charge its work
  -- in proportion, at most 4x.
  local penalty = 1
  if f.occupancy and f.occupancy > 0 and f.occupancy < 0.5 then
    penalty = math.min(4, 0.5 / f.occupancy)
  end
  -- A converging plan syncs and reads the flag back every round on the host paths and
  -- once on the device path; a `times` plan syncs once on every path.
  local host_syncs = f.converge and r or 1
  local barriers = f.layers - 1
  if f.converge or r > 1 then barriers = f.layers end -- the round-end barrier
  local coop = f.launch_ns + r * (barriers * f.barrier_ns + work * penalty) + f.readback_ns
  local graph = r * (f.graph_launch_ns + f.steps * f.graph_node_ns + work)
    + host_syncs * f.readback_ns
  local host = r * (f.steps * f.launch_ns + work) + host_syncs * f.readback_ns
  return { cooperative = coop, graph = graph, split = host }, r
end

local function us(ns)
  return ("%.1f us"):format(ns / 1000)
end

--- The default policy. Rule: never cooperative where the device cannot launch
--- cooperatively or no block can be co-resident (a grid barrier would hang); otherwise
--- the cheapest of the three by the cost model of M.costs, ties going to cooperative,
--- then graph (fewer host round trips). facts.force picks a mode outright.
function M.default_megakernel(facts)
  local fname = "vyre.policy.megakernel"
  M.check_facts(facts, fname)
  local f = M.complete(facts)
  local c, r = M.costs(f)
  local shape = ("%d step%s in %d layer%s, %d round%s"):format(f.steps,
    f.steps == 1 and "" or "s", f.layers, f.layers == 1 and "" or "s", r, r == 1 and "" or "s")
  local blocked
  if not f.cooperative then
    blocked = "the device has no cooperative launch"
  elseif not f.fits then
    blocked = "no block of the megakernel can be co-resident (0 blocks per SM)"
  end
  if f.force then
    if f.force == "cooperative" and blocked then
      fail(fname, "mode 'cooperative' was forced but " .. blocked,
        "force 'graph' or 'split', or leave the mode to the policy")
    end
    return { mode = f.force, reason = ("forced (opts.mode); %s"):format(shape), costs = c }
  end
  if blocked then
    local mode = c.graph <= c.split and "graph" or "split"
    return { mode = mode, costs = c, reason = ("%s; %s: graph %s vs split %s"):format(
      blocked, shape, us(c.graph), us(c.split)) }
  end
  local mode = "cooperative"
  if c.graph < c[mode] then mode = "graph" end
  if c.split < c[mode] then mode = "split" end
  local grid = f.blocks_per_sm and f.sms
    and (" on %d x %d co-resident blocks"):format(f.blocks_per_sm, f.sms) or ""
  return { mode = mode, costs = c, reason = ("cheapest for %s%s: cooperative %s, graph %s, "
    .. "split %s"):format(shape, grid, us(c.cooperative), us(c.graph), us(c.split)) }
end

M.megakernel = M.default_megakernel

--- decide(facts [, profile]) -> {mode =, reason =, ...}: the runtime's entry point. Fills
--- costs from the profile, calls the current policy.megakernel (the user's, if they
--- replaced it) and checks its answer.
function M.decide(facts, profile)
  local fname = "vyre.policy.decide"
  M.check_facts(facts, fname)
  M.complete(facts, profile)
  local choice
  if M.megakernel == M.default_megakernel then
    choice = M.megakernel(facts) -- its own errors already name it and carry a Fix
  else
    -- A user's policy: an error or a yield inside it is reported as the policy's, with a
    -- Fix (it is called from C, inside be:megakernel / be:plan, which cannot yield).
    local ok, res = callback.call("vyre.policy.megakernel (a user policy)", M.megakernel,
      facts)
    if not ok then
      fail(fname, res, "make the policy return {mode = 'cooperative' | 'graph' | "
        .. "'split', reason = '...'} without raising or yielding, or restore "
        .. "vyre.policy.megakernel = vyre.policy.default_megakernel")
    end
    choice = res
  end
  if type(choice) ~= "table" or not M.MODES[choice.mode] then
    fail(fname, ("vyre.policy.megakernel returned %s, not {mode = 'cooperative' | 'graph' | "
      .. "'split', reason = '...'}%s"):format(type(choice) == "table"
        and ("mode " .. tostring(choice.mode)) or type(choice),
        renamed(type(choice) == "table" and choice.mode)),
      "return a table with one of the three modes and a reason string")
  end
  if choice.mode == "cooperative" and not (facts.cooperative and facts.fits) then
    fail(fname, "vyre.policy.megakernel chose 'cooperative' but "
      .. (facts.cooperative and "no block can be co-resident" or "the device has no "
        .. "cooperative launch") .. " (the grid barrier would never complete)",
      "return 'graph' or 'split' when facts.cooperative or facts.fits is false")
  end
  if type(choice.reason) ~= "string" or choice.reason == "" then
    choice.reason = "chosen by a user policy (no reason given)"
  end
  return choice
end

--- The default expansion rule (docs/GRID.md "Expansion layouts"): a worklist
--- round walks each item's row of a CSR graph with an invocation per item ("item"), a
--- whole subgroup per item of degree >= stats.subgroup (32) ("subgroup"), or an
--- edge-balanced split of the round's entries ("edges": the degrees scanned on the
--- device, every invocation a fixed chunk of entries). Rules, in order:
---  * "edges" when the largest row is at least stats.workgroup (256) times the mean
---    degree (and heavy rows hold a quarter of the entries, as below). In the subgroup
---    layout an ordinary workgroup's lanes each walk about one row, mean entries; the
---    hub's subgroup walks max_degree / 32 entries per lane, so this says the hub keeps its
---    subgroup busy at least 8x (256 / 32) as long as a whole average workgroup, and the
---    round waits for it (R-MAT: max/mean is 4300 at scale 20, 10000 at scale 22). The
---    factor is a judgement, not a fit: "edges" pays a degree step and a scan of the
---    round's degrees (up to four more layers) and a binary search per chunk, so it needs
---    a hub well beyond the rest.
---  * "subgroup" when heavy rows hold at least a quarter of the entries and the largest
---    row is at least 4 subgroups long: one lane per row would serialise them.
---  * else "item".
--- stats: {items, edges, max_degree, heavy_edges [, heavy_items, subgroup, workgroup]}
--- (bench/megakernel/graph.lua degree_stats builds it from rowptr).
function M.default_expansion(stats)
  local fname = "vyre.policy.expansion"
  if type(stats) ~= "table" then
    fail(fname, ("stats must be a table (got %s)"):format(type(stats)),
      "pass {items =, edges =, max_degree =, heavy_edges =} (degree statistics of the graph)")
  end
  for _, k in ipairs({ "items", "edges", "max_degree", "heavy_edges" }) do
    local v = stats[k]
    if math.type(v) ~= "integer" or v < 0 then
      fail(fname, ("stats.%s must be an integer >= 0 (got %s)"):format(k, tostring(v)),
        ("count it from the row starts, e.g. %s = 0"):format(k))
    end
  end
  for _, k in ipairs({ "subgroup", "workgroup" }) do
    local v = stats[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
      fail(fname, ("stats.%s must be an integer >= 1 (got %s)"):format(k, tostring(v)),
        ("leave stats.%s out for the default (%d)"):format(k, k == "subgroup" and 32 or 256))
    end
  end
  if stats.heavy_edges > stats.edges then
    fail(fname, ("stats.heavy_edges (%d) exceeds stats.edges (%d)"):format(stats.heavy_edges,
      stats.edges), "heavy_edges counts the entries of rows of degree >= 32 only")
  end
  local sg, wg = stats.subgroup or 32, stats.workgroup or 256
  local share = stats.edges > 0 and stats.heavy_edges / stats.edges or 0
  local mean = stats.items > 0 and stats.edges / stats.items or 0
  local shape = ("mean degree %.1f, max %d, %.0f%% of entries in rows of degree >= %d")
    :format(mean, stats.max_degree, 100 * share, sg)
  local skewed = share >= 0.25 and stats.max_degree >= 4 * sg
  if skewed and mean > 0 and stats.max_degree >= wg * mean then
    return { layout = "edges", reason = ("hub-dominated degrees (%s; max >= %d x mean): "
      .. "edge-balanced chunks"):format(shape, wg) }
  end
  if skewed then
    return { layout = "subgroup", reason = "skewed degrees (" .. shape .. "): a subgroup per "
      .. "heavy item" }
  end
  return { layout = "item", reason = "few heavy rows (" .. shape .. "): an invocation per item" }
end

M.expansion = M.default_expansion

--- degree_stats(rowptr [, subgroup]) -> {items, edges, max_degree, heavy_edges, heavy_items,
--- subgroup}: the statistics policy.expansion reads, over a CSR graph's row starts (a
--- 1-based Lua table, an Array or a u32 Buffer, which is downloaded: nodes + 1 of them);
--- heavy = degree >= subgroup (32). lib.steps.expand calls it when given no stats.
function M.degree_stats(rowptr, subgroup)
  local fname = "vyre.policy.degree_stats"
  local mt = getmetatable(rowptr)
  local tname = type(mt) == "table" and rawget(mt, "__name") or nil
  if tname == "vyre.Buffer" then rowptr = rowptr:download():totable()
  elseif tname == "vyre.Array" then rowptr = rowptr:totable()
  elseif type(rowptr) ~= "table" or tname then
    fail(fname, ("rowptr must be a table, Array or Buffer of row starts (got %s)")
      :format(tname or type(rowptr)), "pass the CSR row starts, nodes + 1 of them")
  end
  subgroup = subgroup or 32
  if math.type(subgroup) ~= "integer" or subgroup < 1 then
    fail(fname, ("subgroup must be an integer >= 1 (got %s)"):format(tostring(subgroup)),
      "leave it out for 32")
  end
  if #rowptr < 1 then
    fail(fname, "rowptr is empty", "a graph of n vertices has n + 1 row starts")
  end
  local maxd, heavy_e, heavy_i = 0, 0, 0
  for v = 1, #rowptr - 1 do
    local d = rowptr[v + 1] - rowptr[v]
    if math.type(d) ~= "integer" or d < 0 then
      fail(fname, ("rowptr[%d] = %s, rowptr[%d] = %s: not rising integers"):format(v,
        tostring(rowptr[v]), v + 1, tostring(rowptr[v + 1])),
        "row starts are integers that never fall: rowptr[v + 1] - rowptr[v] is row v's degree")
    end
    if d > maxd then maxd = d end
    if d >= subgroup then heavy_e, heavy_i = heavy_e + d, heavy_i + 1 end
  end
  return { items = #rowptr - 1, edges = rowptr[#rowptr] - rowptr[1], max_degree = maxd,
    heavy_edges = heavy_e, heavy_items = heavy_i, subgroup = subgroup }
end

M.LAYOUTS = { item = true, subgroup = true, edges = true }

--- choose_expansion(stats) -> {layout, reason}: calls the current policy.expansion (the
--- user's, if replaced) and checks its answer.
function M.choose_expansion(stats)
  local fname = "vyre.policy.choose_expansion"
  local choice
  if M.expansion == M.default_expansion then
    choice = M.expansion(stats)
  else
    local ok, res = callback.call("vyre.policy.expansion (a user policy)", M.expansion, stats)
    if not ok then
      fail(fname, res, "make the policy return {layout = 'item' | 'subgroup' | 'edges', "
        .. "reason = '...'} without raising, or restore vyre.policy.expansion = "
        .. "vyre.policy.default_expansion")
    end
    choice = res
  end
  if type(choice) ~= "table" or not M.LAYOUTS[choice.layout] then
    fail(fname, ("vyre.policy.expansion returned %s, not {layout = 'item' | 'subgroup' | "
      .. "'edges'}"):format(type(choice) == "table" and ("layout " .. tostring(choice.layout))
        or type(choice)), "return a table with layout 'item', 'subgroup' or 'edges' and a "
      .. "reason")
  end
  if type(choice.reason) ~= "string" or choice.reason == "" then
    choice.reason = "chosen by a user policy (no reason given)"
  end
  return choice
end

return M
