-- bench/eqsat/counts.lua — where a small iteration of the math workload goes, counted
-- rather than timed (runs anywhere: the fake CUDA driver computes real values):
--
--   VYRE_LIBCUDA=$PWD/build/fakecuda/libcuda.so.1 VYRE_CACHE_DIR=$(mktemp -d) \
--     lua5.4 bench/eqsat/counts.lua [cuda|reference] [iterations, default 8]
--
-- Per iteration: the deltas of be:stats() (syncs, launches, bytes, JIT compiles, PTX
-- cache misses) and of calls counted by wrapping the binding's methods (be:sequence,
-- be:compile, be:buffer allocations, Buffer:download, Buffer:upload, Buffer:free). On a
-- GPU each sync costs about 15-50 us, a launch about 3 us, a compile milliseconds.
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
local vyre = require("vyre")
local math_wl = require("bench.eqsat.math")

local backend, iters = arg[1] or "cuda", tonumber(arg[2]) or 8
local be = vyre.backend(backend)

local calls = { sequence = 0, compile = 0, buffer = 0, download = 0, upload = 0, free = 0,
  graph = 0 }
-- wraps the methods of a userdata's metatable (shared by every object of the type)
local function wrap(obj, names)
  local mt = getmetatable(obj)
  local idx = mt.__index
  local wrapped = {}
  mt.__index = function(o, k)
    local v
    if type(idx) == "function" then v = idx(o, k) else v = idx[k] end
    if names[k] and type(v) == "function" then
      local w = wrapped[v]
      if not w then
        w = function(...)
          calls[k] = calls[k] + 1
          return v(...)
        end
        wrapped[v] = w
      end
      return w
    end
    return v
  end
end
wrap(be, { sequence = true, compile = true, buffer = true, graph = true })
local probe = be:buffer("u32", 1)
wrap(probe, { download = true, upload = true, free = true })
probe:free()

local STATS = { "syncs", "launches", "bytes_down", "bytes_up", "jit_compiles", "ptx_misses",
  "module_misses", "disk_hits" }
local function snap()
  local s = be:stats()
  local t = {}
  for _, k in ipairs(STATS) do t[k] = s[k] or 0 end
  for k, v in pairs(calls) do t[k] = v end
  return t
end
local COLS = { "syncs", "sequence", "launches", "download", "upload", "buffer", "free",
  "compile", "jit_compiles", "ptx_misses", "disk_hits", "bytes_down", "bytes_up" }

local eg = vyre.egraph(be)
math_wl.setup(eg)
eg:rebuild()
print(("# counts per iteration, math workload on %s (%s)"):format(be.name, tostring(be)))
print("iter\tenodes\t" .. table.concat(COLS, "\t"))
local sched = vyre.egraph.simple()
for i = 1, iters do
  local a = snap()
  local rep = eg:run({ iterations = 1, node_limit = 1e12, time_limit = 1e12, scheduler = sched })
  local b = snap()
  local row = { tostring(i), tostring(rep[1].nodes) }
  for _, k in ipairs(COLS) do row[#row + 1] = tostring(b[k] - a[k]) end
  print(table.concat(row, "\t"))
  io.stdout:flush()
  if rep.stop == "saturated" then break end
end
