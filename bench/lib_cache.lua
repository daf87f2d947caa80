-- bench/lib_cache.lua — vyre.lib's bounded kernel cache (issue 26): makes N e-graphs, each
-- with an analysis of its own (a new constant in its make: new kernels every time), and
-- prints every N/4 graphs the cache's entries and counters, the backend's live kernels
-- after a full collection, and the process's resident memory. Run it with the default
-- bound and with a huge one to compare:
--   lua5.4 bench/lib_cache.lua [reference|cuda] [N, default 200] [limit]
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
local vyre = require("vyre")
local lib = require("vyre.lib")

local backend, n, limit = arg[1] or "reference", tonumber(arg[2]) or 200, tonumber(arg[3])
local be = vyre.backend(backend)
if limit then lib.kernel_cache(be, { limit = limit }) end

local function rss_kib()
  local f = io.open("/proc/self/status")
  if not f then return 0 end
  local kib = f:read("a"):match("VmRSS:%s*(%d+)")
  f:close()
  return tonumber(kib) or 0
end

print(("# %s, %d e-graphs, kernel cache limit %d"):format(backend, n, lib.kernel_cache(be).limit))
print("graphs\tentries\thits\tmisses\tevictions\tlive_kernels\trss_kib")
for i = 1, n do
  local eg = vyre.egraph(be)
  eg:op("Num", 0)
  eg:op("Add", 2)
  eg:analysis("a", { type = "i64", bottom = 0, merge = "(max a b)", make = {
    Num = ("(+ payload %d)"):format(i), Add = "(max (child 0) (child 1))" } })
  local x = eg:leaf("Num", 1)
  eg:add("Add", x, eg:leaf("Num", 2))
  eg:rebuild()
  assert(eg:value("a", x) == 1 + i)
  if i % math.max(1, n // 4) == 0 then
    collectgarbage()
    collectgarbage()
    local st = lib.kernel_cache(be)
    print(("%d\t%d\t%d\t%d\t%d\t%d\t%d"):format(i, st.entries, st.hits, st.misses, st.evictions,
      be:stats().live_kernels, rss_kib()))
  end
end
