-- bench/megakernel/run.lua — the megakernel benchmark's command line (README.md here).
--   lua5.4 bench/megakernel/run.lua [--backend cuda|reference] [--size full|small]
--     [--seed N] [--samples N] [--modes host_loop,graph,megakernel[,mega_graph,mega_split]]
--     [--only bfs_grid,dataflow,jacobi,rmat,bfs_wl,bfs_wl_item,bfs_wl_subgroup,bfs_wl_edges,
--             bfs_wl_do,bfs_wl22,bfs_wl22_item,bfs_wl22_subgroup,bfs_wl22_edges,bfs_wl22_do,
--             sssp,sssp_subgroup,cc,pagerank] [--barrier N] [--out DIR]
-- Prints the progress and the markdown table; with --out writes DIR/megakernel.md and,
-- when megakernel samples exist, DIR/speedup_gate.csv (the speedup gate's evidence).
-- Exit status: 0 when every check passed and the modes agree, 1 otherwise, 2 when the
-- backend cannot be opened.
local here = arg and arg[0] and arg[0]:match("^(.*)/bench/megakernel/[^/]*$")
package.path = (here or ".") .. "/?.lua;" .. package.path

local vyre = require("vyre")
local suite = require("bench.megakernel.suite")

local function split(s)
  local t = {}
  for w in s:gmatch("[^,]+") do t[#t + 1] = w end
  return t
end

local o = { backend = "cuda", size = "full", seed = 1, samples = 2, barrier = 20000 }
local i = 1
while i <= #arg do
  local k, v = arg[i], arg[i + 1]
  if k == "--backend" then o.backend = v
  elseif k == "--size" then o.size = v
  elseif k == "--seed" then o.seed = math.tointeger(tonumber(v))
  elseif k == "--samples" then o.samples = math.tointeger(tonumber(v))
  elseif k == "--modes" then o.modes = split(v)
  elseif k == "--only" then o.only = split(v)
  elseif k == "--out" then o.out = v
  elseif k == "--barrier" then o.barrier = math.tointeger(tonumber(v))
  else
    io.stderr:write(("run.lua: unknown argument '%s'. Fix: see the usage at the top of "
      .. "bench/megakernel/run.lua\n"):format(tostring(k)))
    os.exit(2)
  end
  i = i + 2
end
if not suite.SIZES[o.size] then
  io.stderr:write("run.lua: --size must be full or small\n")
  os.exit(2)
end

local be, why = vyre.backend(o.backend)
if not be then
  io.stderr:write(("run.lua: the %s backend is not usable: %s\n"):format(o.backend, tostring(why)))
  os.exit(2)
end

local res = suite.run(be, { size = o.size, seed = o.seed, samples = o.samples, modes = o.modes,
  only = o.only, log = function(s) io.write(s, "\n") io.flush() end })
local md = suite.markdown(res)
local g, gwhy = suite.gate(res)
local lines = { md }
if g then
  lines[#lines + 1] = "\nSpeedup gate (host loop / megakernel, per workload):\n"
  lines[#lines + 1] = "Timed regions: the host loop's wall time (its per-round syncs are what it "
    .. "measures); the megakernel's device events around its launch (timing.device_ns), the "
    .. "completion wait and the rounds' copy queued after the stop event. speedup_gate.csv's "
    .. "timed_host_syncs = the call's syncs - 1 (that completion wait): 0 for a cooperative "
    .. "run, whose rounds are decided on the device.\n"
  local names = {}
  for n in pairs(g.verdicts) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    local v = g.verdicts[n]
    lines[#lines + 1] = ("- %s: %s (min %.2fx, factor %gx)%s"):format(n, v.pass and "PASS"
      or "FAIL", v.min_ratio or 0, v.factor, v.pass and "" or ": " .. table.concat(v.failures,
        "; "))
  end
else
  lines[#lines + 1] = "\nmegakernel: not available (" .. gwhy .. "); no speedup-gate CSV.\n"
end
if o.barrier and o.barrier > 1 then
  local b, bwhy = suite.barrier(be, o.barrier)
  lines[#lines + 1] = "\nOur grid barrier (a megakernel round of one store per invocation, "
    .. ("times = %d vs 1):\n"):format(o.barrier)
  if b then
    for _, x in ipairs(b) do
      lines[#lines + 1] = ("- %d block(s) per SM, %d blocks: %.1f ns per round"):format(x.per_sm,
        x.blocks, x.ns_per_round)
    end
  else
    lines[#lines + 1] = "- not measured: " .. bwhy
  end
end
local text = table.concat(lines, "\n") .. "\n"
io.write("\n", text)
if o.out then
  local f = assert(io.open(o.out .. "/megakernel.md", "w"))
  f:write(text)
  f:close()
  if g then
    f = assert(io.open(o.out .. "/speedup_gate.csv", "w"))
    f:write(g.csv)
    f:close()
  end
end

local ok = true
for _, r in ipairs(res.workloads) do
  if not (r.check and r.check.ok) or r.agree ~= true then ok = false end
end
os.exit(ok and 0 or 1)
