-- scripts/soak.lua — soak test (a slow leak shows only over many cycles): N
-- compile/launch/free cycles, then a saturation loop (many launches in flight between
-- waits, buffers and worklists made and dropped to the collector), on the fake CUDA
-- driver (or a GPU: VYRE_LIBCUDA unset), checking that resident memory (VmRSS) and the
-- fake driver's live objects stay flat.
--
--   VYRE_LIBCUDA=build/fakecuda/libcuda.so.1 lua5.4 scripts/soak.lua [CYCLES] [ROUNDS] [FRESH]
--     [leak]
--
-- CYCLES (default 100000): compile + bind + launch + free, with a new program every
-- FRESH-th (default 500; 0: never) cycle (a JIT and a disk-cache write) and a buffer
-- made and freed each cycle. ROUNDS (default 200): saturation rounds of 200 launches
-- each over 8 buffers, one wait per round.
-- Prints the RSS and live counts at each tenth, then "soak: ok ..." or "soak: FAIL ..."
-- (exit 1) when:
-- - a live count of the fake driver differs, at any checkpoint, from the first one's;
-- - on the fake driver (its "heap" control: glibc's mallinfo2 and malloc_trim): the heap in
--   use, or the RSS right after malloc_trim, grows over the second half of a phase by more
--   than 5 % of its value at the half (+ 64 KiB of noise), less what the runtime's PTX
--   cache may still take in that half (it keeps $VYRE_PTX_CACHE_ENTRIES, default 256,
--   programs of about 4 KiB: 8 KiB each allowed). A leak grows linearly and fails this
--   at any length; a plateau passes. The plain RSS is only reported: glibc keeps freed
--   pages (malloc_trim gives them back), so it creeps while nothing is in use
--   (bench/results/2026-11-26-sweeps.md, "evening");
-- - RSS grows by more than 16 MiB after the first tenth (the check without the fake).
local vyre = require("vyre")
local now_ns = require("vyre.core").now_ns
local cuda = require("vyre.cuda")

local cycles = tonumber(arg[1] or "100000")
local rounds = tonumber(arg[2] or "200")
local fresh_every = tonumber(arg[3] or "500") -- 0: never a new program
-- "leak" (a self-check of the plateau check): keeps 100 bytes a cycle; the soak must fail.
local leak = arg[4] == "leak" and {} or nil

local build = os.getenv("VYRE_BUILD_DIR") or "build"
local fake
do
  local lib = os.getenv("VYRE_LIBCUDA") or ""
  if lib:find("fakecuda", 1, true) then
    fake = package.loadlib(build .. "/fakecuda/fakecuda.so", "luaopen_fakecuda")().control
    fake("set ptxas 0")
  end
end
local ok, why = cuda.available()
if not ok then
  print("soak: skipped: CUDA is not usable: " .. tostring(why))
  os.exit(77)
end
local be = assert(cuda.device(0))

-- VmRSS, and its parts: RssAnon (the heap: what a leak grows) and RssFile (pages of the
-- mapped libraries, touched as new code runs: bounded by their size) in KiB.
local function rss_kib()
  local f = io.open("/proc/self/status")
  if not f then return 0, 0, 0 end
  local s = f:read("a")
  f:close()
  local function get(k) return tonumber(s:match(k .. ":%s*(%d+)")) or 0 end
  return get("VmRSS"), get("RssAnon"), get("RssFile")
end

local function live()
  if not fake then return {} end
  local t = {}
  for k, v in fake("live"):gmatch("([%w_]+)=(%d+)") do t[k] = tonumber(v) end
  return t
end

local function settle()
  collectgarbage()
  collectgarbage()
  be:synchronize()
  be:trim()
  collectgarbage()
  collectgarbage()
end

local function fmt(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do out[#out + 1] = k .. "=" .. t[k] end
  return table.concat(out, " ")
end

local INC = [[(program soak_inc (workgroup 64) (buffer v u32 read_write) (param k u32)
  (let i (gid x)) (if (lt i (len v)) (then (store v i (add (load v i) k)))))]]
local base_text = "(program soak%d (workgroup 64) (buffer v u32 read_write) (let i (gid x))"
  .. " (if (lt i (len v)) (then (store v i (add (load v i) %du32)))))"
local stamp = os.time() % 1000000 * 1000

local failures = {}
local first_rss, first_live
local programs = 1 -- compiled so far (distinct texts): what the PTX cache may hold
local phases = {} -- label -> list of {i =, heap =, trimmed =, programs =}
local function checkpoint(label, i, n)
  settle()
  local r, anon, file = rss_kib()
  local l = live()
  local heap, trimmed = "", r
  if fake then
    heap = fake("heap")
    fake("heap trim")
    trimmed = rss_kib()
  end
  print(("%s %d/%d: rss %d KiB (anon %d, file %d; %d after malloc_trim), heap %s, lua %d KiB,"
    .. " live %s"):format(label, i, n, r, anon, file, trimmed, heap,
    math.floor(collectgarbage("count")), fmt(l)))
  local ph = phases[label] or {}
  phases[label] = ph
  ph[#ph + 1] = { i = i, heap = tonumber(heap:match("in_use=(%d+)")), trimmed = trimmed,
    programs = programs, live = l }
  if not first_rss then
    first_rss, first_live = r, l
  elseif r - first_rss > 16 * 1024 then
    failures[#failures + 1] = ("%s %d: RSS grew from %d to %d KiB"):format(label, i, first_rss, r)
  end
  -- flat within a phase (the saturation holds its 8 buffers and kernel throughout)
  for key, v in pairs(ph[1].live) do
    if (l[key] or 0) ~= v then
      failures[#failures + 1] = ("%s %d: live %s is %d, %d at the phase's first checkpoint")
        :format(label, i, key, l[key] or 0, v)
    end
  end
  return l
end

-- The plateau check (see the header) over the second half of each phase's checkpoints.
local PTX_CAP = tonumber(os.getenv("VYRE_PTX_CACHE_ENTRIES") or "") or 256
local function plateau(label)
  local ph = phases[label]
  if not fake or not ph or #ph < 3 then return end
  local mid, last = ph[(#ph + 1) // 2], ph[#ph]
  local cache = 8 * 1024 * (math.min(PTX_CAP, last.programs) - math.min(PTX_CAP, mid.programs))
  local function check(what, a, b, allowance) -- allowance: noise + what the cache may take
    local allowed = a // 20 + allowance
    print(("%s plateau: %s %d -> %d over the second half (%d..%d), %+.1f %% (allowed +%d)")
      :format(label, what, a, b, mid.i, last.i, (b - a) * 100 / math.max(a, 1), allowed))
    if b - a > allowed then
      failures[#failures + 1] = ("%s: %s grew from %d to %d over the second half (%d..%d), more"
        .. " than %d: a leak grows linearly"):format(label, what, a, b, mid.i, last.i, allowed)
    end
  end
  check("heap in use (bytes)", mid.heap, last.heap, 64 * 1024 + cache)
  check("RSS after malloc_trim (KiB)", mid.trimmed, last.trimmed, 64 + cache // 1024)
end

-- ---- compile/launch/free cycles -----------------------------------------------------
local t0 = now_ns()
local inc = vyre.parse(INC)
local tenth = math.max(1, cycles // 10)
local sum = 0
for i = 1, cycles do
  local p = inc
  if fresh_every > 0 and i % fresh_every == 0 then
    p = vyre.parse(base_text:format(stamp + i, i % 97))
    programs = programs + 1
    if fake then fake("program " .. p:text()) end
  end
  local k = be:compile(p)
  local b = be:buffer("u32", { 1, 2, 3, 4 })
  if p == inc then k:launch({ v = b, k = 1 }) else k:launch({ v = b }) end
  if i % 1000 == 0 then sum = sum + b:download():totable()[1] end
  b:free()
  k:free()
  if leak then leak[#leak + 1] = ("x"):rep(96) .. i end
  if i % tenth == 0 then checkpoint("cycles", i, cycles) end
end
local cyc_s = (now_ns() - t0) / 1e9
plateau("cycles")
if sum == 0 and cycles >= 1000 then
  failures[#failures + 1] = "cycles: launches computed nothing"
end

-- ---- saturation -------------------------------------------------------------------------
t0 = now_ns()
local k = be:compile(inc)
local bufs = {}
for j = 1, 8 do bufs[j] = be:buffer("u32", 4096) end
local rtenth = math.max(1, rounds // 10)
for r = 1, rounds do
  for j = 1, 200 do k:launch({ v = bufs[j % 8 + 1], k = 1 }) end
  -- garbage for the collector: buffers, views and worklists nobody frees by hand
  local g = be:buffer("u32", 256)
  local _ = g:view(3, 10)
  be:worklist("u32", 64):push({ r })
  be:synchronize()
  if r % rtenth == 0 then checkpoint("saturation", r, rounds) end
end
local want = rounds * 200 // 8
for j = 1, 8 do
  local v = bufs[j]:download():totable()
  if v[1] ~= want then
    failures[#failures + 1] = ("saturation: buffer %d holds %d, want %d"):format(j, v[1], want)
  end
  bufs[j]:free()
end
k:free()
local sat_s = (now_ns() - t0) / 1e9
plateau("saturation")

local last = checkpoint("end", 1, 1)
for key, v in pairs(first_live or {}) do
  if (last[key] or 0) ~= v then
    failures[#failures + 1] = ("live %s: %d after the first tenth, %d at the end"):format(key, v,
      last[key] or 0)
  end
end
print(("soak: %d cycles in %.1f s, %d saturation rounds (%d launches) in %.1f s"
  .. " (wall, checkpoints included)")
  :format(cycles, cyc_s, rounds, rounds * 200, sat_s))
if #failures > 0 then
  print("soak: FAIL\n  " .. table.concat(failures, "\n  "))
  os.exit(1)
end
print(("soak: ok: RSS %d -> %d KiB, live counts flat (%s)"):format(first_rss, rss_kib(),
  fmt(last)))
