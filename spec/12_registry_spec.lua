-- 12: every program the specs registered round-trips through the text format, and every
-- valid one (files 01-11 run before this one in the
-- same busted process) becomes PTX for sm_70, sm_80 and sm_90, and ptxas assembles it.
-- The kernels of one target are assembled in one ptxas call (headers kept once), so the
-- whole suite costs three ptxas runs. CUDA 13's ptxas no longer targets sm_70: its PTX
-- is assembled with -arch=sm_75, the same ISA family (docs/ARCHITECTURE.md §10).
local vyre = require("vyre")
local H = require("spec.helpers")

local function find_ptxas()
  for _, path in ipairs({ os.getenv("PTXAS") or "", "/usr/local/cuda/bin/ptxas" }) do
    if path ~= "" and io.open(path, "r") then return path end
  end
  local h = io.popen("command -v ptxas 2>/dev/null")
  local p = h:read("l")
  h:close()
  return p
end

local function run(cmd)
  local h = io.popen(cmd .. " 2>&1")
  local out = h:read("a")
  local ok = h:close()
  return ok, out
end

H.parse([[
(program saxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y))
    (then (store y i (add (mul a (load x i)) (load y i))))))]], "ptx registry saxpy")

describe("PTX of every registered spec program", function()
  local ptxas = find_ptxas()

  it("finds ptxas (the CUDA toolkit is required to run these specs)", function()
    assert.truthy(ptxas, "ptxas not found: install the CUDA toolkit or set PTXAS")
  end)

  for _, sm in ipairs({ 70, 80, 90 }) do
    it(("assembles with ptxas for sm_%d"):format(sm), function()
      assert.truthy(ptxas, "ptxas not found")
      local parts, n = {}, 0
      for _, entry in ipairs(H.registry) do
        local p = entry.program
        if vyre.validate(p) then
          -- Entry names must be unique in one module; many spec programs share a name
          -- (an elementwise program has two entries, its own and NAME_v4).
          local ptx = vyre.ptx(p, { sm = sm })
            :gsub("%.entry ([%w_]+)%(", ".entry %1__" .. n .. "(")
          if n > 0 then ptx = ptx:gsub("%.version[^\n]*\n", "", 1):gsub("%.target[^\n]*\n", "", 1)
              :gsub("%.address_size[^\n]*\n", "", 1) end
          parts[#parts + 1] = ptx
          n = n + 1
        end
      end
      -- Run alone, this file sees only what it registers itself (the saxpy below).
      assert.is_true(n >= 1, "no registered programs")
      local file = os.tmpname()
      local f = assert(io.open(file, "w"))
      f:write(table.concat(parts, "\n"))
      f:close()
      local arch = sm == 70 and 75 or sm
      local ok, out = run(("%q -arch=sm_%d %q -o /dev/null"):format(ptxas, arch, file))
      os.remove(file)
      assert.is_true(ok, ("ptxas failed for sm_%d on %d kernels:\n%s"):format(sm, n, out))
    end)
  end
end)

-- Last of the registering files, so it sees every program the specs built.
describe("round trip", function()
  it("parse(print(p)) == p for every program the specs built", function()
    assert.is_true(#H.registry > 0)
    if os.getenv("VYRE_SPEC_VERBOSE") then print("round trip: " .. #H.registry .. " programs") end
    for _, entry in ipairs(H.registry) do
      local p = entry.program
      local q = vyre.parse(p:text())
      assert(q == p, "round trip changed program " .. entry.label .. ":\n" .. p:text())
      assert.are.equal(p:text(), q:text())
      assert.are.equal(p:hash(), q:hash())
    end
  end)

  -- VYRE_FUZZ_SEEDS=DIR writes each program's text to DIR/<hash>.vy: how the fuzz
  -- target's seed corpus (tests/fuzz/seeds) was made from the spec programs.
  local seeds = os.getenv("VYRE_FUZZ_SEEDS")
  if seeds then
    it("writes the seed corpus to " .. seeds, function()
      for _, entry in ipairs(H.registry) do
        local f = assert(io.open(seeds .. "/" .. entry.program:hash() .. ".vy", "w"))
        f:write(entry.program:text())
        f:close()
      end
      assert.is_true(#H.registry > 0)
    end)
  end
end)
