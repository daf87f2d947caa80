-- 75: every NVIDIA GPU from sm_70 up (docs/RUNTIME.md "PTX targets"). vyre.ptx takes every
-- target of the table and names the table when given another; the device profiles map
-- to targets that exist. On the fake driver (#fakecuda), child processes open a device of
-- each kind (VYRE_FAKECUDA_SM, VYRE_FAKECUDA_VERSION): its own target (72, 87, 100, 120,
-- 121), the highest one below an SM vyre has no target for (95, 130), the highest one an
-- old driver loads (reported in target_reason with the driver to install, before any JIT:
-- the fake refuses newer PTX as a driver does), and the refusal below sm_70 with its Fix;
-- each compiles and runs saxpy. On a GPU (#gpu), an H100/H200 runs its own sm_90.
local vyre = require("vyre")
local H = require("spec.helpers")

local TABLE = vyre.core.ptx_targets()

local function sms()
  local t = {}
  for i, e in ipairs(TABLE) do t[i] = e.sm end
  return t
end

describe("PTX targets", function()
  it("are every compute capability the PTX ISA names from 7.0 up, ascending", function()
    assert.are.same({ 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121 }, sms())
    for _, e in ipairs(TABLE) do
      assert.matches("^%d+%.%d$", e.isa)
      assert.is_true(e.min_cuda >= 9000 and #e.gpus > 0)
    end
  end)

  it("vyre.ptx emits each at its minimum PTX ISA", function()
    local p = H.parse(H.saxpy_text, "saxpy")
    for _, e in ipairs(TABLE) do
      local ptx = vyre.ptx(p, { sm = e.sm })
      assert.truthy(ptx:find((".version %s\n.target sm_%d\n"):format(e.isa, e.sm), 1, true), e.sm)
    end
  end)

  it("vyre.ptx names the whole table for a target it does not know", function()
    local p = H.parse(H.saxpy_text, "saxpy")
    for _, bad in ipairs({ 60, 95, 130 }) do
      local ok, err = pcall(vyre.ptx, p, { sm = bad })
      assert.is_false(ok)
      assert.truthy(err:find(("target sm_%d is not supported"):format(bad), 1, true), err)
      assert.truthy(err:find("Fix: pass sm = 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, "
        .. "110, 120 or 121", 1, true), err)
    end
  end)

  it("every device profile's SM is a target", function()
    local profiles = require("vyre.profiles")
    local known = {}
    for _, e in ipairs(TABLE) do known[e.sm] = true end
    local gpus = 0
    for _, name in ipairs(profiles.names()) do
      local sm = profiles.get(name).sm
      if name ~= "reference" then -- the CPU interpreter's profile (sm 0)
        assert.is_true(known[sm], ("profile %s has sm %d"):format(name, sm))
        gpus = gpus + 1
      end
    end
    assert.is_true(gpus >= 4)
    assert.are.equal(120, require("vyre.cuda").profile("rtx5090").sm)
  end)

  it("vyre ptx --sm takes every target and lists them for another", function()
    local help = require("vyre.cli.ptx").help
    for _, e in ipairs(TABLE) do assert.truthy(help:find(tostring(e.sm), 1, true), e.sm) end
  end)
end)

-- One child process per device kind: prints the target fields and saxpy's result, or
-- REFUSED and the reason.
local CHILD = [[
local vyre = require("vyre")
local cuda = require("vyre.cuda")
local be, why = cuda.device(0)
if not be then
  local be2, why2 = cuda.open(0)
  print("REFUSED", why, tostring(be2), why2 == why, vyre.backend().name)
  return
end
local F = require("tests.fakecuda.harness")
assert(F.available())
local H = require("spec.helpers")
F.register(H.saxpy_text)
local i = be:info()
local r = be:run(vyre.parse(H.saxpy_text), { x = { 1, 2, 3 }, y = { 10, 20, 30 }, a = 2 })
print(i.sm, i.target, i.target_isa, i.target_reason, table.concat(r.y:totable(), ","),
  tostring(be))
if os.getenv("RAW_ISA") then
  local raw = (".version %s\n.target sm_%s\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n")
    :format(os.getenv("RAW_ISA"), os.getenv("RAW_SM"))
  local ok, err = pcall(be.load_ptx, be, raw, "k")
  print(ok, err)
end
]]

local function open_fake(sm, driver, extra)
  local out = H.lua_child(("VYRE_FAKECUDA_SM=%d VYRE_FAKECUDA_VERSION=%d %s"):format(sm, driver,
    extra or ""), (CHILD:gsub("\n", " "))) -- one line: the shell's quoting joins lines
  local lines = {}
  for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
  local f = {}
  for v in (lines[1] or ""):gmatch("[^\t]+") do f[#f + 1] = v end
  return { sm = tonumber(f[1]), target = f[2], isa = f[3], reason = f[4], y = f[5], name = f[6],
    fields = f, out = out, lines = lines }
end

describe("device targets on the fake driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end

  local SAXPY_Y = "12.0,24.0,36.0"

  it("runs each device at its own SM where the driver loads its PTX", function()
    for _, c in ipairs({ { 72, 12080, "6.1" }, { 87, 12080, "7.4" }, { 100, 12080, "8.6" },
      { 101, 12080, "8.6" }, { 120, 12080, "8.7" }, { 121, 13000, "8.8" },
      { 110, 13000, "9.0" } }) do
      local r = open_fake(c[1], c[2])
      assert.are.equal(c[1], r.sm, r.out)
      assert.are.equal("sm_" .. c[1], r.target, r.out)
      assert.are.equal(c[3], r.isa, r.out)
      assert.are.equal("the device's own SM", r.reason, r.out)
      assert.are.equal(SAXPY_Y, r.y, r.out)
      assert.are.equal(("vyre.Backend(cuda 0: vyre fakecuda 0 (sm_%d), sm_%d)"):format(c[1], c[1]),
        r.name, r.out)
    end
  end)

  it("runs a newer or in-between SM as the highest target below it (forward JIT)", function()
    local r = open_fake(130, 13000)
    assert.are.equal("sm_121", r.target, r.out)
    assert.are.equal("sm_130 is newer than every target vyre knows; PTX for sm_121 is compiled "
      .. "forward by the driver's JIT", r.reason)
    assert.are.equal(SAXPY_Y, r.y, r.out)
    assert.truthy(r.name:find("sm_130 as sm_121", 1, true), r.name)
    r = open_fake(95, 12080)
    assert.are.equal("sm_90", r.target, r.out)
    assert.truthy(r.reason:find("vyre has no sm_95 target; PTX for sm_90, the highest one below "
      .. "it", 1, true), r.reason)
    assert.are.equal(SAXPY_Y, r.y, r.out)
  end)

  it("reports an old driver before any JIT and runs the highest target it loads", function()
    -- The fake refuses PTX newer than its driver as a real one does (the JIT error vyre avoids).
    local r = open_fake(120, 12060, "RAW_ISA=8.7 RAW_SM=120")
    assert.are.equal("sm_90", r.target, r.out)
    assert.are.equal("7.8", r.isa)
    assert.are.equal("the driver supports CUDA 12.6 but sm_120 PTX (ISA 8.7) needs CUDA 12.8; "
      .. "PTX for sm_90 (ISA 7.8), the highest target it loads, is compiled forward by its JIT. "
      .. "Fix: install NVIDIA driver >= 570.26 (CUDA 12.8) to compile for sm_120", r.reason)
    assert.are.equal(SAXPY_Y, r.y, r.out)
    assert.truthy(r.lines[2]:find("^false"), r.out)
    assert.truthy(r.lines[2]:find("Unsupported .version 8.7", 1, true), r.out)
    r = open_fake(121, 12080)
    assert.are.equal("sm_120", r.target, r.out)
    assert.truthy(r.reason:find("Fix: install NVIDIA driver >= 575.51.03 (CUDA 12.9) to compile "
      .. "for sm_121", 1, true), r.reason)
    assert.are.equal(SAXPY_Y, r.y, r.out)
    r = open_fake(130, 12080)
    assert.are.equal("sm_120", r.target, r.out)
    assert.truthy(r.reason:find("^sm_130 is newer than every target vyre knows, and the driver "
      .. "supports CUDA 12.8 but sm_121 PTX"), r.reason)
    assert.are.equal(SAXPY_Y, r.y, r.out)
  end)

  it("refuses a device below sm_70 with the reason and the oldest supported GPU", function()
    local r = open_fake(60, 13000)
    assert.are.equal("REFUSED", r.fields[1], r.out)
    local reason = r.fields[2]
    assert.truthy(reason:find("device 0 (vyre fakecuda 0 (sm_60)): the device is sm_60 (compute "
      .. "capability 6.0), and vyre needs sm_70 or newer", 1, true), reason)
    assert.truthy(reason:find("independent thread scheduling", 1, true), reason)
    assert.truthy(reason:find("Fix: use a Volta (Tesla V100, sm_70) or newer GPU, or the reference "
      .. "backend", 1, true), reason)
    assert.are.same({ "nil", "true", "reference" }, { r.fields[3], r.fields[4], r.fields[5] })
  end)
end)

describe("device target on a GPU #gpu", function()
  it("is the device's own SM on an H100/H200 (sm_90)", function()
    local be = assert(require("vyre.cuda").device(0))
    local info = be:info()
    assert.are.equal("sm_" .. info.sm, info.target)
    assert.are.equal("the device's own SM", info.target_reason)
    if info.name:find("H100", 1, true) or info.name:find("H200", 1, true) then
      assert.are.equal("sm_90", info.target)
      assert.are.equal("7.8", info.target_isa)
    end
    local r = be:run(H.parse(H.saxpy_text, "saxpy"), { x = { 1, 2, 3 }, y = { 10, 20, 30 },
      a = 2 })
    assert.are.same({ 12, 24, 36 }, r.y:totable())
  end)
end)
