-- bench/opt_counts.lua — what the optimiser (docs/OPT.md) does to the spec programs:
-- every program the examples (examples/*.lua) and vyre.lib build, emitted with all
-- passes off (`opt = false`, only the bounds-check pass runs) and with the default
-- pipeline, then assembled by `ptxas -arch=sm_90 -v`: PTX instructions, SASS
-- instructions (the size of the cubin's .text section / 16 bytes) and registers.
-- No GPU needed: the programs are caught on the reference backend as the examples and
-- the library compile or run them, with small inputs.
--   lua5.4 bench/opt_counts.lua [out.md]     (from the repository root, after a build)
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "build/?.so;" .. package.cpath
local vyre = require("vyre")

local SM = 90
local OUT = arg and arg[1]
local progs, seen = {}, {}
local current = "?"

local function record(p)
  local h = p:hash()
  if seen[h] then return end
  seen[h] = true
  progs[#progs + 1] = { label = current, p = p }
end

-- Catch every program a backend compiles or runs.
local be = vyre.backend("reference")
local mt = getmetatable(be)
local index = mt.__index
local wrapped = {}
for _, m in ipairs({ "run", "run_timed", "compile" }) do
  wrapped[m] = function(self, p, ...)
    record(p)
    return index(self, m)(self, p, ...)
  end
end
mt.__index = function(self, k) return wrapped[k] or index(self, k) end

-- The examples, quietly, with the reference backend they pick without a GPU.
for _, ex in ipairs({ "saxpy", "reduce", "histogram", "prefix_sum" }) do
  current = "examples/" .. ex
  local print0 = print
  print = function() end -- luacheck: ignore
  arg = { [0] = "examples/" .. ex .. ".lua" } -- luacheck: ignore
  local ok, err = pcall(dofile, "examples/" .. ex .. ".lua")
  print = print0 -- luacheck: ignore
  if not ok then io.stderr:write(ex, ": ", tostring(err), "\n") end
end

-- vyre.lib over the types it takes.
local lib = require("vyre.lib")
local N = 3000
for _, t in ipairs({ "u32", "i32", "f32", "u64", "f64" }) do
  local function buf(n, f)
    local a = vyre.array(t, n)
    for i = 1, n do a[i] = f(i) end
    return be:buffer(t, a)
  end
  local x = buf(N, function(i) return (i * 37) % 101 end)
  local d = be:buffer(t, N)
  current = "lib." .. t
  for _, op in ipairs({ "add", "min", "max" }) do
    lib.reduce(be, x, op)
    lib.scan(be, x, d, op)
    lib.scan(be, x, d, op, { exclusive = true })
  end
  lib.fill(be, d, 3)
  lib.iota(be, d)
  lib.copy(be, x, d)
  if t ~= "f64" then lib.sort(be, buf(N, function(i) return (i * 7919) % 1000 end)) end
  local flags = be:buffer("u32", N)
  pcall(lib.compact, be, x, flags, d)
  pcall(lib.histogram, be, x, 16, 0, 100)
  local offs = be:buffer("u32", vyre.array("u32", { 0, 10, 100, 1000, N }))
  pcall(lib.segmented_reduce, be, x, offs, be:buffer(t, 4))
  pcall(lib.segmented_scan, be, x, offs, d)
end

-- The program of spec/70 (written with the shapes the passes target).
current = "spec/70_opt_spec"
record(vyre.parse([[
(program shapes (workgroup 64)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (param n u32)
  (let i (gid x))
  (let j i)
  (let unused (mul a a))
  (if (lt j (len y))
    (then
      (for k 0u32 4u32 1u32
        (store y j (add (load y j) (mul (mul a (load x 0u32)) (cast f32 (mul (add n 0u32) 8u32))))))
      (store y i (add (mul a (load x j)) (mul a (load x j))))
      (if (lt 2u32 1u32) (then (store y 0u32 a))))))
]]))

local function tmpname(ext) return os.tmpname() .. ext end

-- ptxas -v: registers; cubin .text size / 16: SASS instructions.
local function assemble(ptx, entry)
  local src, bin = tmpname(".ptx"), tmpname(".cubin")
  local f = assert(io.open(src, "w"))
  f:write(ptx)
  f:close()
  local h = io.popen(("ptxas -arch=sm_%d -v -o %s %s 2>&1"):format(SM, bin, src))
  local log = h:read("a")
  h:close()
  local regs = tonumber(log:match("Used (%d+) registers"))
  h = io.popen(("readelf -S -W %s 2>/dev/null"):format(bin))
  local sections = h:read("a")
  h:close()
  local sass
  for name, size in sections:gmatch("%] (%.text%.[%w_]+)%s+%S+%s+%x+%s+%x+%s+(%x+)") do
    if name == ".text." .. entry then sass = tonumber(size, 16) // 16 end
  end
  os.remove(src)
  os.remove(bin)
  return regs, sass, log
end

-- PTX instructions: body lines that end in ';' and are not declarations.
local function ptx_instructions(ptx)
  local n = 0
  for line in ptx:gmatch("[^\n]+") do
    local s = line:match("^%s+(.-)%s*$")
    if s and s:sub(-1) == ";" and not s:match("^%.reg") and not s:match("^%.shared")
      and not s:match("^%.param") and not s:match("^//") then
      n = n + 1
    end
  end
  return n
end

local rows = {}
local tot = { 0, 0, 0, 0, 0, 0 }
for _, e in ipairs(progs) do
  local p = e.p
  local before = vyre.ptx(p, { sm = SM, opt = false })
  local after = vyre.ptx(p, { sm = SM })
  local rb, sb, lb = assemble(before, p.name)
  local ra, sa, la = assemble(after, p.name)
  if not (rb and ra and sb and sa) then
    error(("%s %s: ptxas failed\n%s\n%s"):format(e.label, p.name, lb, la))
  end
  local ib, ia = ptx_instructions(before), ptx_instructions(after)
  local _, rep = p:optimize()
  local did = {}
  for _, k in ipairs({ "folded", "simplified", "copied", "cse", "hoisted", "removed" }) do
    if rep[k] > 0 then did[#did + 1] = k .. " " .. rep[k] end
  end
  rows[#rows + 1] = ("| %s | %s | %d | %d | %d | %d | %d | %d | %s |"):format(e.label, p.name, ib,
    ia, sb, sa, rb, ra, #did > 0 and table.concat(did, ", ") or "—")
  local v = { ib, ia, sb, sa, rb, ra }
  for i = 1, 6 do tot[i] = tot[i] + v[i] end
end

-- Generated programs with the optimiser's shapes (vyre.random_program allow_opt_shapes):
-- totals only.
local RANDOM = 200
local rtot = { 0, 0, 0, 0, 0, 0 }
for seed = 1, RANDOM do
  local p = vyre.random_program(seed, { allow_opt_shapes = true })
  local before = vyre.ptx(p, { sm = SM, opt = false })
  local after = vyre.ptx(p, { sm = SM })
  local rb, sb = assemble(before, p.name)
  local ra, sa = assemble(after, p.name)
  local v = { ptx_instructions(before), ptx_instructions(after), sb, sa, rb, ra }
  for i = 1, 6 do rtot[i] = rtot[i] + (v[i] or 0) end
end

local out = {}
out[#out + 1] = "# Optimiser: instructions and registers before and after (sm_90)"
out[#out + 1] = ""
local ptxas_version = io.popen("ptxas --version | tail -1"):read("l") or "?"
out[#out + 1] = ("Generated by `lua5.4 bench/opt_counts.lua` (vyre %s, codegen %d, ptxas %s). ")
  :format(vyre.version, require("vyre.core").codegen_version, ptxas_version)
out[#out + 1] = "*before*: `vyre.ptx(p, {opt = false})` (only bounds-check elimination); "
  .. "*after*: the default pipeline (fold, simplify, copy, cse, licm, dce). PTX = instruction "
  .. "lines of the PTX; SASS = instructions of the cubin ptxas makes (.text bytes / 16); "
  .. "regs = `ptxas -v` registers. ptxas optimises too, so SASS and registers show what "
  .. "is left after it. Every program the examples and vyre.lib (u32 i32 f32 u64 f64) "
  .. "build, once each."
out[#out + 1] = ""
out[#out + 1] = "| source | program | PTX before | PTX after | SASS before | SASS after | "
  .. "regs before | regs after | rewrites |"
out[#out + 1] = "|---|---|---:|---:|---:|---:|---:|---:|---|"
for _, r in ipairs(rows) do out[#out + 1] = r end
out[#out + 1] = ("| **total** (%d programs) | | %d | %d | %d | %d | %d | %d | |"):format(#rows,
  tot[1], tot[2], tot[3], tot[4], tot[5], tot[6])
out[#out + 1] = ""
out[#out + 1] = ("Generated programs with the shapes the passes target (`vyre.random_program(seed, "
  .. "{allow_opt_shapes = true})`, seeds 1..%d), totals: PTX %d -> %d, SASS %d -> %d, "
  .. "registers %d -> %d."):format(RANDOM, rtot[1], rtot[2], rtot[3], rtot[4], rtot[5], rtot[6])
out[#out + 1] = ""
local text = table.concat(out, "\n")
if OUT then
  local f = assert(io.open(OUT, "w"))
  f:write(text)
  f:close()
end
io.write(text)
