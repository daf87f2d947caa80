-- bench/megakernel/common.lua — what the megakernel workloads share: a seeded random
-- generator, program compilation, and the three ways to run "steps until a round leaves
-- the flag zero" that the benchmark compares:
--   host loop  one be:sequence per round: zero the flag, the steps, read the flag back
--   graph      the same round captured once as a CUDA graph; g:launch(1) + flag download
--   megakernel be:megakernel(steps, {converge = {flag =, max =}}) (issue 10, section 2)
-- Each returns the rounds run (the last round is the one that left the flag zero) and
-- the time of the loop (host loop, graph: wall time, their syncs are the point;
-- megakernel: device events, the completion wait outside); setup (compile, capture,
-- uploads) is outside the timing.
local vyre = require("vyre")
local now_ns = require("vyre.core").now_ns

local M = {}

M.INF = 0xffffffff

--- A splitmix64 stream: rng() -> 64-bit integer; rng:float() in [0, 1); rng:int(n) in
--- [1, n]. The same seed gives the same stream on every machine (integer arithmetic).
function M.rng(seed)
  local s = seed
  local function next64()
    s = s + 0x9E3779B97F4A7C15
    local z = s
    z = (z ~ (z >> 30)) * 0xBF58476D1CE4E5B9
    z = (z ~ (z >> 27)) * 0x94D049BB133111EB
    return z ~ (z >> 31)
  end
  return setmetatable({}, {
    __call = function() return next64() end,
    __index = {
      float = function() return (next64() >> 11) * (1.0 / 9007199254740992.0) end,
      int = function(_, n) return (next64() >> 1) % n + 1 end,
    },
  })
end

-- One compiled kernel per (backend, program text): the workloads share zero_flag and
-- advance, and a second sample must not recompile.
local kernels = setmetatable({}, { __mode = "k" })

function M.kernel(be, text)
  kernels[be] = kernels[be] or {}
  local k = kernels[be][text]
  if not k then
    k = be:compile(vyre.parse(text))
    kernels[be][text] = k
  end
  return k
end

--- Drops this backend's compiled kernels (they go with the next garbage collection).
function M.release(be)
  kernels[be] = nil
end

--- The host paths' first step: flag[0] = 0 (the megakernel's runtime zeroes it itself).
M.ZERO_FLAG = [[
(program zero_flag (workgroup 1)
  (buffer flag u32 write)
  (store flag 0u32 0u32))]]

--- level[0] += 1: the frontier workloads' round counter, a step of its own so the
--- barrier planner sees the write-after-read on `level`.
M.ADVANCE = [[
(program advance (workgroup 1)
  (buffer level u32 read_write)
  (store level 0u32 (add (load level 0u32) 1u32)))]]

function M.zero_step(be, flag)
  return { M.kernel(be, M.ZERO_FLAG), { flag = flag }, { n = 1 } }
end

function M.advance_step(be, level)
  return { M.kernel(be, M.ADVANCE), { level = level }, { n = 1 } }
end

local function with_zero(be, w)
  local s = { M.zero_step(be, w.flag) }
  for i, st in ipairs(w.steps) do s[i + 1] = st end
  return s
end

local function stats_of(be)
  local s = be:stats()
  return { bytes_up = s.bytes_up or 0, syncs = s.syncs or 0, launches = s.launches or 0,
    graph_launches = s.graph_launches or 0, live_buffers = s.live_buffers or 0,
    pool_misses = s.pool_misses or 0 }
end

local function delta(a, b)
  local d = {}
  for k, v in pairs(b) do d[k] = v - a[k] end
  return d
end

-- Worklist workloads (w.worklist, issue 23 §3): a round is the steps sized by the
-- worklist, then wl:advance(); the loop stops after a round that pushed nothing (the
-- host reads the count: one synchronisation per round). One-shot workloads (w.once):
-- the steps run once (rounds = 1).
local function host_loop_wl(be, w)
  local s0 = stats_of(be)
  local t0 = now_ns()
  local rounds = w.max_rounds
  if w.once then
    be:sequence(w.steps)
    be:synchronize()
    rounds = 1
  else
    for r = 1, w.max_rounds do
      be:sequence(w.steps)
      w.worklist:advance()
      if w.worklist:size() == 0 then
        rounds = r
        break
      end
    end
  end
  local ns = now_ns() - t0
  return rounds, ns, delta(s0, stats_of(be))
end

local function graph_wl(be, w)
  local t = now_ns()
  local g = be:graph(w.steps)
  local capture = now_ns() - t
  local s0 = stats_of(be)
  local t0 = now_ns()
  local rounds = w.max_rounds
  if w.once then
    g:launch(1)
    be:synchronize()
    rounds = 1
  else
    for r = 1, w.max_rounds do
      g:launch(1)
      w.worklist:advance()
      if w.worklist:size() == 0 then
        rounds = r
        break
      end
    end
  end
  local ns = now_ns() - t0
  local d = delta(s0, stats_of(be))
  g:free()
  return rounds, ns, d, capture
end

--- host_loop(be, w) -> rounds, ns, stats delta: one be:sequence per round.
function M.host_loop(be, w)
  if w.worklist or w.once then return host_loop_wl(be, w) end
  local steps = with_zero(be, w)
  local opts = { readback = { w.flag } }
  local s0 = stats_of(be)
  local t0 = now_ns()
  local rounds = w.max_rounds
  for r = 1, w.max_rounds do
    local out = be:sequence(steps, opts)
    if out[1][1] == 0 then
      rounds = r
      break
    end
  end
  local ns = now_ns() - t0
  return rounds, ns, delta(s0, stats_of(be))
end

--- graph(be, w) -> rounds, ns, stats delta, capture ns: the round as one graph.
function M.graph(be, w)
  if w.worklist or w.once then return graph_wl(be, w) end
  local t = now_ns()
  local g = be:graph(with_zero(be, w))
  local capture = now_ns() - t
  local s0 = stats_of(be)
  local t0 = now_ns()
  local rounds = w.max_rounds
  for r = 1, w.max_rounds do
    g:launch(1)
    if w.flag:download()[1] == 0 then
      rounds = r
      break
    end
  end
  local ns = now_ns() - t0
  local d = delta(s0, stats_of(be))
  g:free()
  return rounds, ns, d, capture
end

--- true when this backend has be:megakernel (issue 10 section 2 is being written).
function M.has_megakernel(be)
  local ok, f = pcall(function() return be.megakernel end)
  return ok and type(f) == "function"
end

--- megakernel(be, w [, grid_sync]) -> rounds, ns, stats delta, plan (nil without be:plan;
--- a worklist workload's expansion layout is in it: plan.expansion, plan.steps[i].expansion,
--- copied by be:plan from the steps lib.steps.expand built).
--- grid_sync forces the execution mode ("graph": the mode's CUDA graph per converge
--- round, recorded at the first call and replayed; "split": the host split).
--- ns is the device time between the run's two stream events (timing.device_ns): the
--- timed region holds the launch and the rounds decided on the device, not the
--- completion wait, which comes after the stop event (so in a cooperative run the
--- stats' one sync is outside it). Modes that loop on the host (split, graph) sync
--- inside the events' interval; their stats say so. Where the backend has no device
--- clock (the reference: device_ns is the wall time) the wall time is used.
function M.megakernel(be, w, grid_sync)
  local opts = { converge = { flag = w.flag, max = w.max_rounds }, grid_sync = grid_sync,
    timed = true }
  if w.worklist then
    opts.converge = { worklist = w.worklist, max = w.max_rounds }
  elseif w.once then
    opts.converge, opts.times = nil, 1
  end
  local plan
  local okp, fp = pcall(function() return be.plan end)
  if okp and type(fp) == "function" then
    -- a composition be:plan refuses: the plan is then the reason it gave, and the run
    -- goes on
    local ok, p = pcall(be.plan, be, w.steps, opts)
    plan = ok and p or { unavailable = tostring(p) }
  end
  local s0 = stats_of(be)
  local t0 = now_ns()
  local r, timing = be:megakernel(w.steps, opts)
  if w.once then be:synchronize() end
  local ns = now_ns() - t0
  if type(r) == "table" then r = r.rounds end
  if type(timing) == "table" and (timing.device_ns or 0) > 0 then ns = timing.device_ns end
  return r, ns, delta(s0, stats_of(be)), plan
end

--- Downloads a buffer as one binary string (the modes' results are compared by bytes).
function M.bytes(buf)
  return buf:download():bytes()
end

--- Unpacks a little-endian u32 buffer into a Lua table (1-based).
function M.u32s(buf)
  local s = buf:download():bytes()
  local t, n = {}, #s // 4
  local pos = 1
  local unpack = string.unpack
  local CHUNK = 64
  local fmt = "<" .. ("I4"):rep(CHUNK)
  local i = 0
  while i + CHUNK <= n do
    local vals = { unpack(fmt, s, pos) }
    for j = 1, CHUNK do t[i + j] = vals[j] end
    i, pos = i + CHUNK, pos + 4 * CHUNK
  end
  while i < n do
    i = i + 1
    t[i], pos = unpack("<I4", s, pos)
  end
  return t
end

return M
