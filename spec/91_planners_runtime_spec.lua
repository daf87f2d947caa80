-- 91: the runtime uses its planners (issue 21 §3, docs/PLANNERS.md "What the runtime
-- uses"): the grid the CUDA runtime launches for a cooperative grid program, a
-- megakernel and a launch sized by a worklist ({n = wl}) is vyre.planners.occupancy.grid's
-- answer, and be:plan reports it; a kernel the runtime refuses (a block over the thread
-- limit, a cooperative launch the device lacks) is refused in the words of
-- vyre.planners.capability's diagnostic: the same failures, the same Fix. Both come from
-- one C implementation (include/vyre_plan.h). The #fakecuda parts read the launches the
-- fake driver accepted from its launch log, and run the refusals in child processes at
-- sm_72 and sm_90 (VYRE_FAKECUDA_SM) without cooperative launch; the #gpu part checks the
-- cooperative grid and a thread-limit refusal on a real device.
local vyre = require("vyre")
local H = require("spec.helpers")
local core = require("vyre.core")
local occ = vyre.planners.occupancy
local cap = vyre.planners.capability

local COUNTDOWN = [[
(program countdown (workgroup 32)
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (param max u32)
  (converge flag max
    (let i (gid x))
    (if (lt i (len x))
      (then
        (if (gt (load x i) 0u32)
          (then
            (store x i (sub (load x i) 1u32))
            (store flag 0u32 1u32)))))))
]]

local DEC = [[
(program dec (workgroup 64)
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (let i (gid x))
  (if (lt i (len x))
    (then
      (if (gt (load x i) 0u32)
        (then
          (store x i (sub (load x i) 1u32))
          (store flag 0u32 1u32))))))
]]

local WL = [[
(program wl_count (workgroup 128)
  (buffer hits u32 read_write)
  (worklist items u32)
  (atomic add hits 0u32 1u32)
  (push items (gid x)))
]]

-- The failure codes of a verdict line ("...|fix=a(..),b(..)"), as a sorted list.
local function reasons(line)
  local fix = line and line:match("|fix=(.*)$")
  local out = {}
  for code in (fix or ""):gmatch("([%a_]+)%(") do out[#out + 1] = code end
  table.sort(out)
  return out
end

describe("the planners are libvyre's", function()
  local h100 = vyre.cuda.profile("h100")

  it("occupancy.calc is vyre_occupancy_calc", function()
    for _, k in ipairs({ { 256, 32, 0 }, { 100, 0, 0 }, { 128, 10, 40960 }, { 1024, 64, 0 },
      { 0, 0, 0 }, { 64, 300, 0 }, { 512, 200, 0 }, { 64, 8, 300000 } }) do
      local r = occ.calc(h100, { workgroup = k[1], registers = k[2], shared_bytes = k[3] })
      local c = core.occupancy_calc(h100, k[1], k[2], k[3])
      for _, f in ipairs({ "blocks_per_sm", "warps_per_sm", "occupancy_bps", "limiter", "zero",
        "reason" }) do
        assert.are.equal(c[f], r[f], f)
      end
      assert.are.equal(r.occupancy_bps / 10000, r.occupancy)
    end
  end)

  it("occupancy.grid sizes cooperative and bounded grids by blocks per SM", function()
    local k = { workgroup = 256, registers = 32 }
    -- 8 blocks of 256 per SM on 132 SMs: 1056 co-resident blocks
    local g = occ.grid(h100, k, { virtual_workgroups = 100000 })
    assert.are.same({ 1056, 8, 132, "cooperative", "estimate" },
      { g.blocks, g.blocks_per_sm, g.sms, g.sizing, g.source })
    assert.are.equal(40, occ.grid(h100, k, { virtual_workgroups = 40 }).blocks)
    g = occ.grid(h100, k, { virtual_workgroups = 100000, blocks_per_sm = 3 })
    assert.are.same({ 396, "driver" }, { g.blocks, g.source })
    assert.are.equal(0, occ.grid(h100, k, { virtual_workgroups = 9, blocks_per_sm = 0 }).blocks)
    assert.are.equal(1056, occ.grid(h100, k, { sizing = "bounded" }).blocks)
    -- bounded: at least one block per SM even where nothing is resident by the estimate
    assert.are.equal(132, occ.grid(h100, { workgroup = 256, registers = 300 },
      { sizing = "bounded" }).blocks)
    local e = H.error_of(occ.grid, h100, k, { sizing = "wide" })
    assert.truthy(e:find("vyre.planners.occupancy.grid: opts.sizing", 1, true), e)
    assert.truthy(e:find("Fix:", 1, true), e)
    e = H.error_of(occ.grid, h100, k, {})
    assert.truthy(e:find("virtual_workgroups", 1, true), e)
  end)

  it("capability.check is vyre_capability_check: line, message with every Fix", function()
    local v = cap.check(vyre.cuda.profile("a100"), { kernel = "k", min_sm = "9.0",
      block = { 32, 32, 2 }, shared_bytes = 200000, cooperative = true, tensor_cores = false })
    assert.are.equal("blocked", v.status)
    assert.are.equal("cuda-kernel-capability-v1|kernel=k|status=blocked|fix=sm_version("
      .. "required=9.0,actual=8.0),threads_per_block(requested=2048,max=1024),shared_memory("
      .. "requested=200000,max=166912)", v.line)
    assert.truthy(v.message:find("^kernel 'k' cannot run on a100: "), v.message)
    assert.truthy(v.message:find("[" .. v.line .. "]", 1, true), v.message)
    for _, f in ipairs(v.failures) do
      assert.truthy(v.message:find(f.reason, 1, true), f.code)
      assert.truthy(v.message:find(f.fix, 1, true), f.code)
    end
    -- the function's own thread limit, and co-residency of a cooperative launch
    v = cap.check(vyre.cuda.profile("h100"), { kernel = "k", threads_per_block = 1024,
      kernel_max_threads = 640, cooperative = true, blocks_per_sm = 0 })
    assert.are.same({ "threads_per_block", "co_residency" },
      { v.failures[1].code, v.failures[2].code })
    assert.are.same({ 1024, 640 }, { v.failures[1].requested, v.failures[1].max })
    assert.truthy(v.message:find("the function's own, from its register use", 1, true))
    local p = vyre.cuda.profile("h100")
    p.cooperative_launch = false
    v = cap.check(p, { kernel = "k", cooperative = true, blocks_per_sm = 0 })
    assert.are.same({ "cooperative_launch" }, reasons(v.line))
    assert.are.equal("ok", cap.check(p, { kernel = "k", blocks_per_sm = 0 }).status)
    assert.are.equal("", cap.check(p, { kernel = "k" }).message)
  end)
end)

describe("the runtime's grids and refusals on the fake driver #fakecuda", function()
  local F = require("tests.fakecuda.harness")
  local available, why = F.available()
  if not available then
    it("needs the fake driver", function() pending(why) end)
    return
  end
  local be = F.device()

  -- The launches the fake accepted while fn ran: {name, kind, grid = {x, y, z}}.
  local function launches(fn)
    F.control("launch log clear")
    fn()
    local out = {}
    for l in F.control("launch log"):gmatch("[^\n]+") do
      local name, kind, x, y, z = l:match("^(%S+) (%S+) grid=(%d+),(%d+),(%d+)")
      out[#out + 1] = { name = name, kind = kind, grid = { tonumber(x), tonumber(y), tonumber(z) } }
    end
    return out
  end

  local function kernel_shape(k)
    local i = k:info()
    return { workgroup = i.workgroup[1] * i.workgroup[2] * i.workgroup[3],
      registers = i.registers, shared_bytes = i.shared_bytes }
  end

  it("launches a cooperative grid program on occupancy.grid's grid", function()
    local prev = be:grid_sync("cooperative")
    local k = be:compile(vyre.parse(COUNTDOWN))
    local n = 32 * 1000 -- 1000 virtual workgroups: more than the fake's 4 SMs hold
    local init = {}
    for i = 1, n do init[i] = i % 5 end
    local x, flag = be:buffer("u32", init), be:buffer("u32", 1)
    local log = launches(function() k:launch({ x = x, flag = flag, max = 100 }, { n = n }) end)
    be:grid_sync(prev)
    assert.are.equal(1, #log)
    assert.are.equal("cooperative", log[1].kind)
    local per_sm, _, mode, blocks = k:occupancy()
    assert.are.equal("cooperative", mode)
    local prof = be:profile()
    local g = occ.grid(prof, kernel_shape(k), { virtual_workgroups = 1000, blocks_per_sm = per_sm })
    assert.are.equal(g.blocks, log[1].grid[1])
    assert.are.equal(g.blocks, blocks)
    -- the fake's occupancy rule is the estimator's: the estimate gives the same grid
    local est = occ.grid(prof, kernel_shape(k), { virtual_workgroups = 1000 })
    assert.are.equal(g.blocks, est.blocks)
    assert.is_true(g.blocks < 1000)
    for _, v in ipairs(x:download():totable()) do assert.are.equal(0, v) end
  end)

  it("be:plan's grid is what be:megakernel launches, and the planner's answer", function()
    local k = be:compile(vyre.parse(DEC))
    local n = 64 * 600
    local init = {}
    for i = 1, n do init[i] = (i * 7) % 4 end
    local x, flag = be:buffer("u32", init), be:buffer("u32", 1)
    local steps = { { k, { x = x, flag = flag } } }
    local opts = { converge = { flag = flag, max = 50 }, grid_sync = "cooperative" }
    local plan = be:plan(steps, opts)
    assert.are.equal("cooperative", plan.mode)
    local log = launches(function() be:megakernel(steps, opts) end)
    local coop = {}
    for _, l in ipairs(log) do
      if l.kind == "cooperative" then coop[#coop + 1] = l end
    end
    assert.are.equal(1, #coop)
    assert.are.equal(plan.grid.blocks, coop[1].grid[1])
    local g = occ.grid(be:profile(), { workgroup = plan.grid.threads },
      { virtual_workgroups = plan.grid.virtual_workgroups,
        blocks_per_sm = plan.grid.blocks_per_sm })
    assert.are.equal(plan.grid.blocks, g.blocks)
    assert.is_true(plan.grid.blocks < plan.grid.virtual_workgroups)
    for _, v in ipairs(x:download():totable()) do assert.are.equal(0, v) end
  end)

  it("sizes {n = wl} launches by occupancy.grid's bounded grid", function()
    local k = be:compile(vyre.parse(WL))
    local hits = be:buffer("u32", 1)
    local wl = be:worklist("u32", 4096):push({ 1, 2, 3, 4, 5 })
    local log = launches(function() k:launch({ hits = hits, items = wl }, { n = wl }) end)
    local sized
    for _, l in ipairs(log) do
      if l.name == "wl_count_wl" then sized = l end
    end
    assert.truthy(sized, "no launch of the worklist entry")
    local prof = be:profile()
    local g = occ.grid(prof, kernel_shape(k), { sizing = "bounded" })
    -- 4 fake SMs x 16 blocks of 128 threads
    assert.are.equal(prof.sms * 16, g.blocks)
    assert.are.same({ g.blocks, 1, 1 }, sized.grid)
    assert.are.equal(g.blocks, occ.grid(prof, kernel_shape(k),
      { sizing = "bounded", blocks_per_sm = (k:occupancy()) }).blocks)
  end)

  -- In a child at each SM without cooperative launch: the runtime's refusals and the
  -- planner's verdicts on be:profile(), one tab-separated line each.
  local CHILD = [[
local vyre = require("vyre")
local cap = vyre.planners.capability
local be = assert(require("vyre.cuda").device(0))
local prof = be:profile()
local function emit(what, err, v)
  print(table.concat({ what, tostring(err):gsub("[\t\n]", " "), v.line, v.message }, "\t"))
end
local p = vyre.parse(COUNTDOWN_TEXT)
local k = be:compile(p)
be:grid_sync("cooperative")
local x, flag = be:buffer("u32", 64), be:buffer("u32", 1)
local ok, err = pcall(k.launch, k, { x = x, flag = flag, max = 3 }, { n = 64 })
emit("grid", ok and "ran" or err, cap.check(prof, cap.requirements(p, { cooperative = true })))
be:grid_sync("auto")
local d = be:compile(vyre.parse(DEC_TEXT))
local steps = { { d, { x = x, flag = flag } } }
local mp = vyre.parse(be:plan(steps, { times = 1 }).text)
ok, err = pcall(be.megakernel, be, steps, { times = 1, grid_sync = "cooperative" })
emit("mega", ok and "ran" or err, cap.check(prof, cap.requirements(mp, { cooperative = true })))
local raw = be:load_ptx(PTX_TEXT, "bigblock")
ok, err = pcall(raw.launch_raw, raw, { 1 }, { 32, 32, 2 }, {})
emit("raw", ok and "ran" or err, cap.check(prof, { kernel = "bigblock", block = { 32, 32, 2 } }))
]]
  local PTX = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry bigblock()\n{\n"
    .. "\tret;\n}\n"

  for _, sm in ipairs({ 72, 90 }) do
    it(("refuses unrunnable kernels in the capability check's words at sm_%d"):format(sm),
      function()
        local code = CHILD:gsub("COUNTDOWN_TEXT", ("%q"):format(COUNTDOWN))
          :gsub("DEC_TEXT", ("%q"):format(DEC))
          :gsub("PTX_TEXT", (("%q"):format(PTX):gsub("%%", "%%%%")))
        -- a file, not lua -e: the program texts span lines
        local path = os.tmpname()
        local file = assert(io.open(path, "w"))
        file:write(code)
        file:close()
        local pipe = io.popen(("VYRE_FAKECUDA_SM=%d VYRE_FAKECUDA_COOPERATIVE=0 LUA_PATH=%q "
          .. "LUA_CPATH=%q lua5.4 %s 2>&1"):format(sm, package.path, package.cpath, path))
        local out = pipe:read("a")
        pipe:close()
        os.remove(path)
        local rows = {}
        for l in out:gmatch("[^\n]+") do
          local f = {}
          for v in (l .. "\t"):gmatch("([^\t]*)\t") do f[#f + 1] = v end
          if #f >= 4 then rows[f[1]] = f end
        end
        local want = { grid = { "cooperative_launch" }, mega = { "cooperative_launch" },
          raw = { "threads_per_block" } }
        for what, codes in pairs(want) do
          local r = rows[what]
          assert.truthy(r, what .. ": " .. out)
          local err, line, message = r[2], r[3], r[4]
          assert.are.same(codes, reasons(line), what)
          -- the runtime raised the planner's verdict: its line, its reasons, its Fix
          assert.are.same(codes, reasons(err:match("%[(cuda%-kernel%-capability%-v1[^%]]*)%]")),
            what .. ": " .. err)
          assert.truthy(err:find(message, 1, true), what .. ": " .. err .. " / " .. message)
          assert.truthy(err:find("Fix:", 1, true), err)
        end
      end)
  end
end)

-- On a GPU (run by the lead on an H100): the persistent grid of a cooperative launch
-- (k:occupancy()'s fourth result) is occupancy.grid's with the driver's blocks per SM,
-- and a block over the limit is refused in the capability check's words. (The bounded
-- grid of {n = wl} is not observable on a real driver: ngroups there is the virtual
-- grid; the fake's launch log checks it above.)
describe("the runtime's grids and refusals on a GPU #gpu", function()
  local be = assert(require("vyre.cuda").device(0))

  it("launches a cooperative grid program on occupancy.grid's grid", function()
    local prev = be:grid_sync("cooperative")
    local k = be:compile(vyre.parse(COUNTDOWN))
    local groups = 20000
    local init = {}
    for i = 1, 32 * groups do init[i] = i % 3 end
    local x, flag = be:buffer("u32", init), be:buffer("u32", 1)
    k:launch({ x = x, flag = flag, max = 100 }, { n = 32 * groups })
    be:synchronize()
    be:grid_sync(prev)
    local per_sm, _, mode, blocks = k:occupancy()
    assert.are.equal("cooperative", mode)
    local i = k:info()
    local g = occ.grid(be:profile(), { workgroup = 32, registers = i.registers,
      shared_bytes = i.shared_bytes }, { virtual_workgroups = groups, blocks_per_sm = per_sm })
    assert.are.equal(g.blocks, blocks)
    assert.is_true(blocks > 0 and blocks <= groups)
    for _, v in ipairs(x:download():totable()) do assert.are.equal(0, v) end
  end)

  it("refuses a block over the thread limit with the planner's message", function()
    local raw = be:load_ptx(".version 7.0\n.target sm_70\n.address_size 64\n"
      .. ".visible .entry bigblock()\n{\n\tret;\n}\n", "bigblock")
    local ok, err = pcall(raw.launch_raw, raw, { 1 }, { 32, 32, 2 }, {})
    assert.is_false(ok)
    local v = cap.check(be:profile(), { kernel = "bigblock", block = { 32, 32, 2 } })
    assert.are.same({ "threads_per_block" }, reasons(v.line))
    assert.truthy(tostring(err):find(v.message, 1, true), tostring(err))
    assert.is_false(be:lost())
  end)
end)
