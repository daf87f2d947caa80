-- bench/egraph/bench.lua — rebuild throughput of vyre.egraph (docs/EGRAPH.md) on
-- generated e-graphs, for the table in bench/egraph/README.md.
-- Usage: lua5.4 bench/egraph/bench.lua [backend (cuda)] [max e-nodes (16000000)]
--
-- Workloads, generated on the device by the programs below (no per-node Lua work):
--   layers N: N/8 leaves with distinct payloads, then 6 layers of binary e-nodes whose
--     children are random ids of the layer below, then N/8 random unions among the
--     leaves (a giant component of ~80% and many small ones), so congruence climbs the layers;
--   chains L x K: K chains f(f(...f(x_k))) of length L over K leaves, and the unions
--     x_0 = x_1 = ... = x_{K-1}: every level merges one round after the one below (L+1
--     rounds): the cost of a round when little changes.
-- Each line: workload, e-nodes before and after, e-classes after, the merges made by
-- eg:union_many (the workload's unions), rebuild rounds and the unions congruence found,
-- the wall times (host clock: every sync and the Lua between sequences included) of the
-- union_many (merge_s), of eg:rebuild() (rebuild_s) and of both (total_s, what egglog's
-- "merge + rebuild" compares with), the summed device time of the rebuild's sequences,
-- and input e-nodes per total second.
local vyre = require("vyre")

local backend = arg and arg[1] or "cuda"
local MAXN = tonumber(arg and arg[2] or "") or 16000000

local be, why = vyre.backend(backend)
if not be then
  io.stderr:write("backend " .. backend .. " is not usable: " .. tostring(why) .. "\n")
  os.exit(2)
end

local function now_ns()
  local f = io.popen("date +%s%N")
  local s = f:read("l")
  f:close()
  return tonumber(s)
end

-- kids[2i + k] = lo + hash(seed, i, k) % range (a murmur3-style finaliser of the index).
local GEN = vyre.parse([[
(program bench_gen_ids (workgroup 256)
  (buffer out u32 write)
  (param n u32)
  (param lo u32)
  (param range u32)
  (param seed u32)
  (let i (gid x))
  (if (lt i n)
    (then
      (let h0 (xor (mul i 2654435761u32) seed))
      (let h1 (mul (xor h0 (shr h0 16u32)) 2246822507u32))
      (let h2 (mul (xor h1 (shr h1 13u32)) 3266489909u32))
      (let h3 (xor h2 (shr h2 16u32)))
      (store out i (add lo (rem h3 range))))))
]])
local gen = be:compile(GEN)

local function random_ids(n, lo, range, seed)
  local b = be:buffer("u32", n)
  gen:launch({ out = b, n = n, lo = lo, range = range, seed = seed }, { n = n })
  return b
end

local function layers(n)
  local eg = vyre.egraph(be)
  eg:op("Leaf", 0)
  local depth = 6
  local nl = n // 8
  local per = (n - nl) // depth
  local leaves = be:buffer("u32", nl)
  vyre.lib.iota(be, leaves)
  local lo = eg:add_many("Leaf", leaves)
  leaves:free()
  local range = nl
  for d = 1, depth do
    eg:op("F" .. d, 2)
    local kids = random_ids(2 * per, lo, range, (0x9E3779B9 * d) & 0xffffffff)
    lo = eg:add_many("F" .. d, kids)
    kids:free()
    range = per
  end
  return eg, random_ids(2 * nl, 0, nl, 12345)
end

local function chains(len, k)
  local eg = vyre.egraph(be)
  eg:op("X", 0)
  eg:op("f", 1)
  local xs = be:buffer("u32", k)
  vyre.lib.iota(be, xs)
  local lo = eg:add_many("X", xs)
  for _ = 1, len do
    xs = be:buffer("u32", k)
    vyre.lib.iota(be, xs, lo)
    lo = eg:add_many("f", xs)
    xs:free()
  end
  local pairs = {}
  for i = 1, k - 1 do pairs[2 * i - 1], pairs[2 * i] = 0, i end
  return eg, be:buffer("u32", pairs)
end

-- Times eg:union_many(pairs) (the merge) and eg:rebuild() separately and together.
local function run(label, eg, pairs)
  local before = eg:size()
  be:synchronize()
  local t0 = now_ns()
  local merges = eg:union_many(pairs)
  local t1 = now_ns()
  local rounds, unions, rep = eg:rebuild()
  local t2 = now_ns()
  local nodes, classes = eg:size()
  local merge, rebuild = (t1 - t0) / 1e9, (t2 - t1) / 1e9
  print(("%-20s %9d %9d %9d %9d %5d %9d %8.4f %8.4f %8.4f %8.4f %11.0f"):format(label, before,
    nodes, classes, merges, rounds, unions, merge, rebuild, merge + rebuild,
    rep.device_ns / 1e9, before / (merge + rebuild)))
  io.stdout:flush()
  pairs:free()
  eg:free()
  collectgarbage()
  return rep
end

local info, keys = be:info(), {}
for k, v in pairs(info) do
  if type(v) ~= "table" then keys[#keys + 1] = k .. "=" .. tostring(v) end
end
table.sort(keys)
print("# vyre.egraph rebuild, backend " .. be.name .. ": " .. table.concat(keys, " "))
print(("%-20s %9s %9s %9s %9s %5s %9s %8s %8s %8s %8s %11s"):format("workload", "enodes",
  "after", "classes", "merges", "rounds", "unions", "merge_s", "rebuild_s", "total_s",
  "device_s", "enodes/s"))
run("warm-up", layers(20000))
local n = 10000
while n <= MAXN do
  run(("layers %d"):format(n), layers(n))
  if n * 10 > MAXN and n < MAXN then n = MAXN else n = n * 10 end
end
if MAXN >= 1000000 then
  run("chains 1000 x 1000", chains(1000, 1000))
  run("chains 50 x 20000", chains(50, 20000))
end
