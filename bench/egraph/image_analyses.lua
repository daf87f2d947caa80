-- bench/egraph/image_analyses.lua — what loading an image with analyses costs
-- (docs/EGRAPH.md, "The device image"): the analyses' values are not in the image; the
-- loaded graph computes them on its first read, as any rebuilt graph does. This prints,
-- per size, the times of from_image (with the section declared again, and without),
-- the rebuild the loaded graph needs anyway, the class index (also needed by any query
-- or run) and the analyses' sweeps, the only part saved values could skip.
--
--   lua5.4 bench/egraph/image_analyses.lua [cuda|reference] [sizes, default 2000,20000]
local vyre = require("vyre")
local C = require("bench.common")

local kind = arg[1] or "reference"
local be = kind == "cuda" and C.cuda() or vyre.backend("reference")
local now = vyre.core.now_ns
local function ms(t0, t1) return (t1 - t0) / 1e6 end

-- Six analyses of four types, one reading another, over a random graph of n e-nodes.
local function graph(n)
  local eg = vyre.egraph(be)
  eg:op("Num", 0)
  eg:op("Var", 0, "sym")
  eg:op("Add", 2)
  eg:op("Mul", 2)
  eg:op("Neg", 1)
  eg:analysis("const", { leaf = "Num", fold = { Add = "+", Mul = "*", Neg = "neg" } })
  eg:analysis("vars", { type = "set", words = 2, make = { Var = "(bit payload)",
    Add = "(bor (child 0) (child 1))", Mul = "(bor (child 0) (child 1))", Neg = "(child 0)" } })
  eg:analysis("mask", { type = "i64", bottom = 0, merge = "(bor a b)", make = {
    Var = "(bit payload)", Add = "(bor (child 0) (child 1))", Mul = "(bor (child 0) (child 1))",
    Neg = "(child 0)" } })
  eg:analysis("depth", { type = "i64", bottom = 1 << 62, merge = "(min a b)", make = {
    Num = "0", Var = "0", Neg = "(+ 1 (child 0))", Add = "(+ 1 (max (child 0) (child 1)))",
    Mul = "(+ 1 (max (child 0) (child 1)))" } })
  eg:analysis("ground", { type = "bool", merge = "(or a b)", make = { Num = "true",
    Add = "(== (get mask self) 0)", Mul = "(== (get mask self) 0)", Neg = "(child 0)" } })
  eg:analysis("k", { type = "const", make = { Num = "payload",
    Add = "(if (and (one? (child 0)) (one? (child 1))) (+ (val (child 0)) (val (child 1))) "
      .. "none)" } })
  math.randomseed(25)
  local ids = {}
  for i = 1, n // 10 do ids[#ids + 1] = eg:leaf("Num", i % 97) end
  for i = 1, 100 do ids[#ids + 1] = eg:leaf("Var", "v" .. i) end
  local bin = { "Add", "Mul" }
  while #ids < n do
    if math.random() < 0.3 then
      ids[#ids + 1] = eg:add("Neg", ids[math.random(#ids)])
    else
      ids[#ids + 1] = eg:add(bin[math.random(2)], ids[math.random(#ids)], ids[math.random(#ids)])
    end
  end
  for _ = 1, n // 50 do eg:union(ids[math.random(#ids)], ids[math.random(#ids)]) end
  eg:rebuild()
  return eg
end

local NAMES = { "vars", "mask", "depth", "ground", "k" }
local function reads(eg)
  for _, name in ipairs(NAMES) do eg:value(name, 0) end
  eg:const(0)
end

local sizes = {}
for s in (arg[2] or "2000,20000"):gmatch("%d+") do sizes[#sizes + 1] = tonumber(s) end
print(("# %s backend; times in ms, the best of 3"):format(be.name))
for _, n in ipairs(sizes) do
  local eg = graph(n)
  reads(eg)
  local img, spans = eg:image()
  local bare = {}
  for k, v in pairs(spans) do bare[k] = v end
  bare.analyses, bare.nanalyses = false, 0
  local best = {}
  local function keep(k, v) best[k] = math.min(best[k] or math.huge, v) end
  for _ = 1, 3 do
    local t0 = now()
    local a = vyre.egraph.from_image(be, img, spans)
    local t1 = now()
    a:rebuild()
    local t2 = now()
    a:search("(Neg ?x)") -- the class index (eg.qidx), which the reads use
    local t3 = now()
    reads(a)
    local t4 = now()
    local b = vyre.egraph.from_image(be, img, bare)
    local t5 = now()
    keep("load", ms(t0, t1))
    keep("load_bare", ms(t4, t5))
    keep("rebuild", ms(t1, t2))
    keep("index", ms(t2, t3))
    keep("sweeps", ms(t3, t4))
    a:free()
    b:free()
  end
  local nodes, classes = eg:size()
  local sweeps = 0
  for _, name in ipairs(NAMES) do sweeps = sweeps + eg.analyses[name].sweeps end
  C.out(("image_analyses.e_nodes_%d.classes"):format(n), classes, "classes")
  C.out(("image_analyses.e_nodes_%d.nodes"):format(n), nodes, "e-nodes")
  C.out(("image_analyses.e_nodes_%d.user_sweeps"):format(n), sweeps, "sweeps")
  for _, k in ipairs({ "load", "load_bare", "rebuild", "index", "sweeps" }) do
    C.out(("image_analyses.e_nodes_%d.%s"):format(n, k), best[k], "ms")
  end
  img:free()
  eg:free()
end
