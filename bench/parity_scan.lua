-- parity_scan.lua — runs vyre.random_program(seed) for a seed range on the CUDA and
-- reference backends, printing each seed before it runs (flushed), so that a hang or
-- a mismatch names its seed. Usage: lua5.4 bench/parity_scan.lua FIRST LAST
local vyre = require("vyre")
local first, last = tonumber(arg[1] or "1"), tonumber(arg[2] or "100")
local ref = vyre.backend("reference")
local gpu = assert(require("vyre.cuda").device(0))
local clock = os.clock
for seed = first, last do
  local p = vyre.random_program(seed, { allow_barriers = seed % 3 == 0 })
  io.stderr:write(("seed %d ... "):format(seed)); io.stderr:flush()
  local args = {}
  local function value(t, i)
    if t == "bool" then return i % 2 == 0 end
    if t == "f32" or t == "f64" then return i * 0.25 - 3 end
    return (i * seed) % 1000
  end
  for _, d in ipairs(p:decls()) do
    if d.kind == "param" then
      args[d.name] = value(d.type, seed)
    elseif d.kind == "buffer" and d.access ~= "write" then
      local n = d.count > 0 and d.count or 64
      local vals = {}
      for i = 1, n do vals[i] = value(d.type, i) end
      args[d.name] = vyre.array(d.type, vals)
    end
  end
  local t0 = clock()
  local want = ref:run(p, args, { n = 64 })
  local t1 = clock()
  local got = gpu:run(p, args, { n = 64 })
  local t2 = clock()
  local bad = {}
  for name, a in pairs(want) do
    if a:bytes() ~= got[name]:bytes() then bad[#bad + 1] = name end
  end
  io.stderr:write(("ref %.3fs gpu %.3fs %s\n"):format(t1 - t0, t2 - t1,
    #bad == 0 and "same" or ("DIFF " .. table.concat(bad, ","))))
  if #bad > 0 then io.stderr:write(p:text(), "\n") end
end
