-- bench/megakernel/suite.lua — runs the megakernel workloads in every mode, checks each
-- result in plain Lua, checks that the modes agree bit for bit and on the rounds, and
-- turns the timings into the speedup gate's CSV and a markdown table. run.lua is the
-- command line; spec/39 runs the same suite small on the reference backend.
--   local suite = require("bench.megakernel.suite")
--   local res = suite.run(be, {size = "full" | "small", seed = 1, samples = 2,
--                              modes = {...}, only = {...}, log = print})
--   suite.markdown(res), suite.gate(res) -> {csv =, verdicts =}
local common = require("bench.megakernel.common")
local now_ns = require("vyre.core").now_ns

local M = {}

local bfs_wl = require("bench.megakernel.bfs_wl")

-- A workload under another name (its own row and size).
local function renamed(W, name, title)
  return setmetatable({ name = name, title = title or W.title }, { __index = W })
end

M.WORKLOADS = {
  require("bench.megakernel.bfs_grid"),
  require("bench.megakernel.dataflow"),
  require("bench.megakernel.jacobi"),
  (require("bench.megakernel.rmat")),
  -- issue 23 §3: the worklist workloads; BFS with the policy's layout and with each
  -- layout forced, at two scales
  -- (direction-optimising rows _do: push/pull rounds, the policy's layout for the push
  -- rounds; rows of one scale stand together, so they share one graph build)
  bfs_wl,
  bfs_wl.with_layout("item"),
  bfs_wl.with_layout("subgroup"),
  bfs_wl.with_layout("edges"),
  bfs_wl.with_layout(nil, "bfs_wl_do", true),
  renamed(bfs_wl, "bfs_wl22", bfs_wl.title .. ", scale 22"),
  bfs_wl.with_layout("item", "bfs_wl22_item"),
  bfs_wl.with_layout("subgroup", "bfs_wl22_subgroup"),
  bfs_wl.with_layout("edges", "bfs_wl22_edges"),
  bfs_wl.with_layout(nil, "bfs_wl22_do", true),
  -- SSSP with the policy's layout, and with the subgroup layout for comparison
  require("bench.megakernel.sssp"),
  require("bench.megakernel.sssp").with_layout("subgroup"),
  require("bench.megakernel.cc"),
  (require("bench.megakernel.pagerank")),
}

-- The workloads of issue 10 §3 (the original four), for the specs that name them.
M.FLAG_WORKLOADS = { "bfs_grid", "dataflow", "jacobi", "rmat" }

M.MODES = { "host_loop", "graph", "megakernel" }

-- Sizes: the issue's (full) and ones the reference interpreter runs in seconds (small).
M.SIZES = {
  full = {
    bfs_grid = { width = 1024, height = 1024 },
    dataflow = { blocks = 100000, words = 8 },
    jacobi = { n = 256, tol = 3e-5 },
    rmat = { scale = 20, edge_factor = 16 },
    bfs_wl = { scale = 20, edge_factor = 16 },
    bfs_wl_item = { scale = 20, edge_factor = 16 },
    bfs_wl_subgroup = { scale = 20, edge_factor = 16 },
    bfs_wl_edges = { scale = 20, edge_factor = 16 },
    bfs_wl22 = { scale = 22, edge_factor = 16 },
    bfs_wl22_item = { scale = 22, edge_factor = 16 },
    bfs_wl22_subgroup = { scale = 22, edge_factor = 16 },
    bfs_wl22_edges = { scale = 22, edge_factor = 16 },
    bfs_wl_do = { scale = 20, edge_factor = 16 },
    bfs_wl22_do = { scale = 22, edge_factor = 16 },
    sssp = { scale = 18, edge_factor = 16 },
    sssp_subgroup = { scale = 18, edge_factor = 16 },
    cc = { scale = 18, edge_factor = 16 },
    pagerank = { scale = 16, edge_factor = 16, tol = 1e-5 },
  },
  small = {
    bfs_grid = { width = 20, height = 12 },
    dataflow = { blocks = 200, words = 2 },
    jacobi = { n = 12, tol = 1e-3 },
    rmat = { scale = 7, edge_factor = 4 },
    bfs_wl = { scale = 7, edge_factor = 8 },
    bfs_wl_item = { scale = 7, edge_factor = 8 },
    bfs_wl_subgroup = { scale = 7, edge_factor = 8 },
    bfs_wl_edges = { scale = 7, edge_factor = 8 },
    bfs_wl22 = { scale = 8, edge_factor = 8 },
    bfs_wl22_item = { scale = 8, edge_factor = 8 },
    bfs_wl22_subgroup = { scale = 8, edge_factor = 8 },
    bfs_wl22_edges = { scale = 8, edge_factor = 8 },
    bfs_wl_do = { scale = 7, edge_factor = 8 },
    bfs_wl22_do = { scale = 8, edge_factor = 8 },
    sssp = { scale = 7, edge_factor = 8 },
    sssp_subgroup = { scale = 7, edge_factor = 8 },
    cc = { scale = 7, edge_factor = 8 },
    pagerank = { scale = 7, edge_factor = 8, tol = 1e-6 },
  },
}

-- The gate per workload: the issue's target is >= 5x on the many-round workloads and
-- "never slower" on R-MAT's few heavy rounds (which also have fewer than 64 rounds).
M.GATE = {
  bfs_grid = { factor = 5 }, dataflow = { factor = 5 }, jacobi = { factor = 5 },
  rmat = { factor = 1, min_repetitions = 1 },
  -- issue 23 §4: R-MAT BFS >= 2x its host loop; SSSP, CC and PageRank >= 3x
  bfs_wl = { factor = 2, min_repetitions = 1 },
  bfs_wl_item = { factor = 2, min_repetitions = 1 },
  bfs_wl_subgroup = { factor = 2, min_repetitions = 1 },
  bfs_wl22 = { factor = 2, min_repetitions = 1 },
  bfs_wl22_item = { factor = 2, min_repetitions = 1 },
  bfs_wl22_subgroup = { factor = 2, min_repetitions = 1 },
  bfs_wl_edges = { factor = 2, min_repetitions = 1 },
  bfs_wl22_edges = { factor = 2, min_repetitions = 1 },
  bfs_wl_do = { factor = 2, min_repetitions = 1 },
  bfs_wl22_do = { factor = 2, min_repetitions = 1 },
  sssp = { factor = 3, min_repetitions = 1 },
  sssp_subgroup = { factor = 3, min_repetitions = 1 }, cc = { factor = 3, min_repetitions = 1 },
  pagerank = { factor = 3, min_repetitions = 1 },
}

local function describe_size(o)
  local keys = {}
  for k in pairs(o) do keys[#keys + 1] = k end
  table.sort(keys)
  local kv = {}
  for i, k in ipairs(keys) do kv[i] = ("%s=%s"):format(k, tostring(o[k])) end
  return table.concat(kv, " ")
end

local function run_mode(be, inst, mode)
  if mode == "host_loop" then return common.host_loop(be, inst) end
  if mode == "graph" then return common.graph(be, inst) end
  -- the megakernel with its execution mode forced (not in M.MODES: --modes asks for them)
  if mode == "mega_graph" then return common.megakernel(be, inst, "graph") end
  if mode == "mega_split" then return common.megakernel(be, inst, "split") end
  return common.megakernel(be, inst)
end

--- run(be, opts) -> {backend, profile, workloads = {{name, title, size, setup_ns, nodes,
--- edges, bytes_per_round, check = {ok, msg}, modes = {[mode] = {samples = {{rounds,
--- ns, stats}...}} | {unavailable = why}}, agree = true | why}...}}
function M.run(be, opts)
  opts = opts or {}
  local log = opts.log or function() end
  local sizes = M.SIZES[opts.size or "full"]
  local samples = opts.samples or 2
  local modes = opts.modes or M.MODES
  local only = {}
  for _, n in ipairs(opts.only or {}) do only[n] = true end
  local res = { backend = be.name, ordinal = be.ordinal, profile = be:profile(), workloads = {} }
  for _, W in ipairs(M.WORKLOADS) do
    if next(only) == nil or only[W.name] then
      collectgarbage() -- the last workload's buffers go before this one's arrive
      local size = {}
      for k, v in pairs(sizes[W.name]) do size[k] = v end
      size.seed = opts.seed or 1
      local t0 = now_ns()
      local inst = W.setup(be, size)
      be:synchronize()
      local r = { name = W.name, title = W.title, size = describe_size(sizes[W.name]),
        setup_ns = now_ns() - t0, nodes = inst.nodes, edges = inst.edges,
        bytes_per_round = inst.bytes_per_round, steps = #inst.steps, modes = {} }
      log(("%s (%s): setup %.1f ms"):format(W.name, r.size, r.setup_ns / 1e6))
      local first_bytes, first_rounds, first_mode
      for _, mode in ipairs(modes) do
        if mode:find("^mega") and not common.has_megakernel(be) then
          r.modes[mode] = { unavailable = "be:megakernel is not available in this build" }
          log("  megakernel: not available")
        else
          local m = { samples = {} }
          r.modes[mode] = m
          for s = 1, samples do
            inst.reset()
            be:synchronize()
            -- a mode that raises (a megakernel still being written) fails this workload,
            -- not the run
            local ran, rounds, ns, st, extra = pcall(run_mode, be, inst, mode)
            if not ran then
              r.modes[mode] = { failed = tostring(rounds) }
              r.agree = ("%s raised: %s"):format(mode, tostring(rounds))
              log("  " .. r.agree)
              break
            end
            m.samples[s] = { rounds = rounds, ns = ns, stats = st }
            if mode == "graph" then m.capture_ns = extra end
            if mode:find("^mega") then m.plan = extra end
            log(("  %-10s sample %d: %d rounds, %.3f ms (%.2f us/round)"):format(mode, s, rounds,
              ns / 1e6, ns / 1e3 / rounds))
            if s == 1 then
              local bytes = common.bytes(inst.output)
              if not first_bytes then
                first_bytes, first_rounds, first_mode = bytes, rounds, mode
                local ok, msg = inst.check(rounds)
                r.check = { ok = ok, msg = msg }
                -- BFS by worklist: the edges it traversed (GTEPS) and its layout
                r.traversed, r.layout, r.direction = inst.traversed, inst.layout, inst.direction
                log(("  check: %s (%s)"):format(ok and "ok" or "FAILED", msg))
              elseif bytes ~= first_bytes or rounds ~= first_rounds then
                r.agree = ("%s gave %s than %s"):format(mode, rounds ~= first_rounds
                  and ("%d rounds, not %d,"):format(rounds, first_rounds) or "other bytes",
                  first_mode)
                log("  DISAGREE: " .. r.agree)
              end
            end
          end
        end
      end
      r.agree = r.agree or true
      res.workloads[#res.workloads + 1] = r
    end
  end
  return res
end

local function best(m)
  if not m or not m.samples or not m.samples[1] then return nil end
  local b
  for _, s in ipairs(m.samples) do if not b or s.ns < b.ns then b = s end end
  return b
end

-- The policy's choice for a workload, from the facts the run measured.
local function policy_pick(res, r, rounds)
  local policy = require("vyre.policy")
  local p = res.profile
  local ok, c = pcall(policy.decide, { steps = r.steps, layers = r.steps, converge = true,
    rounds_expected = rounds, cooperative = p.cooperative_launch, fits = true,
    blocks_per_sm = 1, bytes_per_round = r.bytes_per_round }, p)
  return ok and c.mode or ("error: " .. tostring(c))
end

-- The policy's pick, or why there is none: a megakernel whose be:plan was refused (the
-- refusal's text is in plan.unavailable).
local function pick(res, r, rounds)
  local m = r.modes.megakernel
  if m and m.plan and m.plan.unavailable then return "no plan: " .. m.plan.unavailable end
  return policy_pick(res, r, rounds)
end

--- markdown(res) -> a table: per workload the rounds, the check, each mode's best time
--- (and per round), the speedups of the megakernel, and the policy's pick.
function M.markdown(res)
  local p = res.profile
  local out = {
    ("Device: %s (%s, cc %d.%d, %d SMs); backend %s."):format(p.description or p.name, p.name,
      p.cc_major, p.cc_minor, p.sms, res.backend),
    "",
    "| workload | size | rounds | check | host loop | graph | megakernel | host / mega "
      .. "| graph / mega | policy picks |",
    "|---|---|---:|---|---:|---:|---:|---:|---:|---|",
  }
  local function cell(m)
    if not m then return "—" end
    if m.unavailable then return "not available" end
    if m.failed then return "failed" end
    local b = best(m)
    return ("%.2f ms (%.2f us/round)"):format(b.ns / 1e6, b.ns / 1e3 / b.rounds)
  end
  for _, r in ipairs(res.workloads) do
    local h, g, k = best(r.modes.host_loop), best(r.modes.graph), best(r.modes.megakernel)
    local rounds = (h or g or k) and (h or g or k).rounds or 0
    out[#out + 1] = ("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |"):format(r.name, r.size,
      rounds, r.check and (r.check.ok and "ok" or "FAILED: " .. r.check.msg) or "—",
      cell(r.modes.host_loop), cell(r.modes.graph), cell(r.modes.megakernel),
      (h and k) and ("%.2fx"):format(h.ns / k.ns) or "—",
      (g and k) and ("%.2fx"):format(g.ns / k.ns) or "—", pick(res, r, rounds))
    if r.agree ~= true then out[#out + 1] = ("\n**Modes disagree on %s: %s**\n"):format(r.name,
      r.agree) end
  end
  -- The worklist workloads' expansion layout, and GTEPS where the edges are counted
  -- (Graph500: the undirected edges of the reached component, per second of the run).
  local extra = false
  for _, r in ipairs(res.workloads) do
    if r.layout then
      if not extra then
        out[#out + 1] = "\n| workload | layout | why | traversed edges | host loop GTEPS "
          .. "| graph GTEPS | megakernel GTEPS |"
        out[#out + 1] = "|---|---|---|---:|---:|---:|---:|"
        extra = true
      end
      local function teps(m)
        local b = best(m)
        if not (b and r.traversed) then return "—" end
        return ("%.3f"):format(r.traversed / b.ns)
      end
      out[#out + 1] = ("| %s | %s | %s | %s | %s | %s | %s |"):format(r.name,
        r.layout.layout .. (r.direction and " + push/pull" or ""),
        r.layout.reason, r.traversed and tostring(r.traversed) or "—", teps(r.modes.host_loop),
        teps(r.modes.graph), teps(r.modes.megakernel))
    end
  end
  return table.concat(out, "\n") .. "\n"
end

-- One store per invocation on its own element, so consecutive rounds depend on each
-- other (the planner must put a grid barrier between them) and do almost no work.
local TOUCH = [[
(program touch (workgroup 256)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]]

--- barrier(be, n) -> {{per_sm =, blocks =, ns_per_round =}, ...} for one block per SM
--- and full occupancy (8 blocks of 256 per SM where the profile allows), from
--- be:megakernel({touch}, {times = n}) against times = 1; nil + why without it.
function M.barrier(be, n)
  if not common.has_megakernel(be) then return nil, "be:megakernel is not available" end
  local p = be:profile()
  local k = common.kernel(be, TOUCH)
  local out = {}
  local full = math.min(p.max_threads_per_sm // 256, p.max_blocks_per_sm)
  for _, per_sm in ipairs({ 1, full }) do
    local blocks = per_sm * p.sms
    local v = be:buffer("u32", blocks * 256)
    local steps = { { k, { v = v }, { n = blocks * 256 } } }
    local function t(times)
      local fastest
      for _ = 1, 3 do
        be:synchronize()
        local t0 = now_ns()
        be:megakernel(steps, { times = times })
        be:synchronize()
        local ns = now_ns() - t0
        if not fastest or ns < fastest then fastest = ns end
      end
      return fastest
    end
    local one = t(1)
    out[#out + 1] = { per_sm = per_sm, blocks = blocks, ns_per_round = (t(n) - one) / (n - 1) }
    v:free()
  end
  return out
end

--- gate(res) -> {csv, verdicts = {[workload] = verdict}}: the speedup gate over host loop
--- vs megakernel samples (paired by index), or nil + why without megakernel samples.
function M.gate(res, gate_opts)
  local gate = require("vyre.planners").speedup_gate
  local all, verdicts = {}, {}
  local p = res.profile
  for _, r in ipairs(res.workloads) do
    local h, k = r.modes.host_loop, r.modes.megakernel
    if h and h.samples and k and k.samples and k.samples[1] then
      local samples = {}
      for i = 1, math.min(#h.samples, #k.samples) do
        local st = k.samples[i].stats
        samples[i] = {
          backend_id = res.backend, device_ordinal = res.ordinal,
          device_memory_bytes = math.tointeger(p.memory_bytes) or 0,
          compute_capability_major = p.cc_major, compute_capability_minor = p.cc_minor,
          graph_nodes = r.nodes, graph_edges = r.edges, repetitions = k.samples[i].rounds,
          host_orchestrated_ns = h.samples[i].ns, resident_megakernel_ns = k.samples[i].ns,
          setup_ns = r.setup_ns,
          timed_graph_uploads = st.bytes_up > 0 and 1 or 0,
          timed_host_allocations = math.max(0, st.live_buffers) + math.max(0, st.pool_misses),
          timed_host_syncs = math.max(0, st.syncs - 1),
          resident_borrowed_fallback_dispatches = math.max(0, st.launches + st.graph_launches - 1),
        }
        all[#all + 1] = samples[i]
      end
      local o = {}
      for key, v in pairs(M.GATE[r.name] or {}) do o[key] = v end
      for key, v in pairs(gate_opts or {}) do o[key] = v end
      verdicts[r.name] = gate.evaluate(samples, o)
    end
  end
  if #all == 0 then return nil, "no megakernel samples (be:megakernel is not available)" end
  return { csv = gate.csv(all), verdicts = verdicts }
end

return M
