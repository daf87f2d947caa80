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
-- Each line: workload, e-nodes before and after, e-classes after, rounds, unions, the
-- wall time of eg:rebuild() (host clock, includes every sync and the Lua between
-- sequences), the summed device time of its sequences, and e-nodes/s (input e-nodes per
-- wall second).
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
  local pairs = random_ids(2 * nl, 0, nl, 12345)
  eg:union_many(pairs)
  pairs:free()
  return eg
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
  eg:union_many(pairs)
  return eg
end

local function run(label, eg)
  local before = eg:size()
  be:synchronize()
  local t0 = now_ns()
  local rounds, unions, rep = eg:rebuild()
  local t1 = now_ns()
  local nodes, classes = eg:size()
  local wall = (t1 - t0) / 1e9
  print(("%-22s %10d %10d %10d %6d %10d %9.4f %9.4f %12.0f"):format(label, before, nodes,
    classes, rounds, unions, wall, rep.device_ns / 1e9, before / wall))
  io.stdout:flush()
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
print(("%-22s %10s %10s %10s %6s %10s %9s %9s %12s"):format("workload", "enodes", "after",
  "classes", "rounds", "unions", "wall_s", "device_s", "enodes/s"))
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
