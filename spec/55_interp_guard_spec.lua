-- 55: the reference interpreter's run guard. A valid program can loop for ever
-- (a u64 loop to 2^64 - 1); the interpreter stops it at a step budget or on Ctrl-C with
-- a clear error, and the Lua state stays usable (issue 14, finding 1). Invocations take
-- steps too and Ctrl-C is seen between workgroups, so a loop-free program over a huge
-- grid stops as well; a Ctrl-C no run reported reaches the previous handler; a converge
-- flag bound with no elements is refused (issue 26, findings 4 and 7).
local vyre = require("vyre")
local H = require("spec.helpers")

-- A child lua5.4 finds the modules this busted run uses.
local LUA = ("LUA_PATH='%s' LUA_CPATH='%s' lua5.4"):format(package.path, package.cpath)

local SPIN = [[(program spin (workgroup 1) (buffer o u32 read_write)
  (for i 0u64 18446744073709551615u64 1u64 (atomic add o 0u32 1u32)))]]

describe("the reference run guard", function()
  it("stops a run at the step budget with the count, the workgroup and a fix", function()
    local be = vyre.reference.new({ max_steps = 1000 })
    local msg = H.error_of(be.run, be, vyre.parse(SPIN), { o = { 0 } }, { n = 1 })
    assert.matches("vyre.Backend:run: program 'spin' stopped after 1000 steps (loop iterations and "
      .. "invocations), the reference interpreter's step budget, in workgroup (0,0,0)",
      msg, 1, true)
    assert.matches("Fix: check the loop bounds", msg, 1, true)
  end)

  it("counts iterations, not statements: a run within the budget completes", function()
    local be = vyre.reference.new({ max_steps = 1000 })
    local p = vyre.parse([[(program loop10 (workgroup 4) (buffer o u32 read_write)
      (for i 0u32 10u32 1u32 (atomic add o 0u32 1u32)))]])
    -- 4 invocations + 4 x 9 back edges = 40 steps
    assert.are.equal(40, be:run(p, { o = { 0 } }, { n = 4 }).o[1])
  end)

  it("counts grid-level loops and converge rounds, whose sections may hold no loop", function()
    -- 2^32 - 1 grid iterations of a section without a loop of its own
    local grid = vyre.parse([[(program gspin (workgroup 1) (buffer o u32 read_write)
      (for r 0u32 4294967295u32 1u32 (grid_barrier) (atomic add o 0u32 1u32)))]])
    local be = vyre.reference.new({ max_steps = 100 })
    local o = vyre.array("u32", 1)
    assert.matches("vyre.Backend:run: program 'gspin' stopped after 100 steps",
      H.error_of(be.run, be, grid, { o = o }, { n = 1 }), 1, true)
    -- a converge loop whose flag stays set, for 10^9 rounds
    local conv = vyre.parse([[(program cspin (workgroup 1) (buffer f u32 read_write)
      (converge f 1000000000u32 (store f 0u32 1u32)))]])
    assert.matches("program 'cspin' stopped after 100 steps",
      H.error_of(be.run, be, conv, { f = { 0 } }, { n = 1 }), 1, true)
    -- within the budget: 10 grid iterations take 9 steps, as a loop in a section does,
    -- plus one per invocation of their 10 section runs: 19 steps, under 20
    local ten = vyre.parse([[(program g10 (workgroup 1) (buffer o u32 read_write)
      (for r 0u32 10u32 1u32 (grid_barrier) (atomic add o 0u32 1u32)))]])
    local small = vyre.reference.new({ max_steps = 20 })
    assert.are.equal(10, small:run(ten, { o = { 0 } }, { n = 1 }).o[1])
  end)

  it("stops launches of a compiled kernel too, and the backend stays usable", function()
    local be = vyre.reference.new({ max_steps = 50 })
    local k = be:compile(vyre.parse(SPIN))
    local o = be:buffer("u32", 1)
    assert.matches("vyre.Kernel:launch: program 'spin' stopped after 50 steps",
      H.error_of(k.launch, k, { o = o }, { n = 1 }), 1, true)
    assert.are.equal(49, o:download()[1]) -- 1 invocation + 49 rounds = 50 steps
    -- (saxpy's 64 invocations would not fit 50 steps: a one-invocation program)
    local one = vyre.parse(
      "(program one (workgroup 1) (buffer y u32 read_write) (store y 0u32 5u32))")
    assert.are.equal(5, be:run(one, { y = { 2 } }, { n = 1 }).y[1])
  end)

  it("rejects bad options with a fix", function()
    assert.matches("vyre.reference.new: max_steps must be a positive integer (got -1). Fix:",
      H.error_of(vyre.reference.new, { max_steps = -1 }), 1, true)
    assert.matches(
      "vyre.reference.new: unknown option 'foo'. Fix: use max_steps, debug (names are lower case)",
      H.error_of(vyre.reference.new, { foo = 1 }), 1, true)
    assert.matches("vyre.reference.new: options must be a table (got number)",
      H.error_of(vyre.reference.new, 3), 1, true)
  end)

  it("reads VYRE_REF_MAX_STEPS in a fresh process", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write("local vyre = require('vyre')\nlocal be = vyre.reference.new()\n",
      "local ok, e = pcall(be.run, be, vyre.parse([[", SPIN, "]]), {o = {0}}, {n = 1})\n",
      "print(ok, e)\n")
    f:close()
    local h = io.popen("VYRE_REF_MAX_STEPS=77 " .. LUA .. " " .. script .. " 2>&1")
    local out = h:read("a")
    h:close()
    os.remove(script)
    assert.matches("stopped after 77 steps", out, 1, true)
  end)

  -- Shell lines that wait (up to 30 s) until FILE holds MARKER: the child has started
  -- and is about to run, so the signal cannot land while Lua is still loading.
  local function WAIT_FOR(marker, file)
    return ("i=0; while ! grep -q %s '%s' 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; "
      .. "i=$((i + 1)); done\n"):format(marker, file)
  end

  it("turns Ctrl-C (SIGINT) into an error and the script goes on", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write("local vyre = require('vyre')\nlocal be = vyre.reference.new()\n",
      "io.stdout:write('spinning\\n') io.stdout:flush()\n",
      "local ok, e = pcall(be.run, be, vyre.parse([[", SPIN, "]]), {o = {0}}, {n = 1})\n",
      "print(ok, e)\nprint('still alive')\n")
    f:close()
    local sh = assert(io.open(script .. ".sh", "w"))
    -- the signal goes once the child says it is spinning (a loaded machine may take
    -- longer than any fixed delay to start it), then a little later, inside the run
    sh:write(LUA, " ", script, " > ", script, ".out 2>&1 &\npid=$!\n", WAIT_FOR("spinning",
      script .. ".out"), "sleep 0.5\n", "kill -INT $pid\nwait $pid\necho rc=$?\n")
    sh:close()
    local h = io.popen("sh " .. script .. ".sh")
    local rc = h:read("a")
    h:close()
    local g = assert(io.open(script .. ".out"))
    local out = g:read("a")
    g:close()
    os.remove(script)
    os.remove(script .. ".out")
    os.remove(script .. ".sh")
    assert.matches("rc=0", rc, 1, true)
    assert.matches("program 'spin' was interrupted", out, 1, true)
    assert.matches("still alive", out, 1, true)
  end)

  -- A loop-free program: 64 invocations per workgroup, no back edge anywhere.
  local WIDE = [[(program wide (workgroup 64) (buffer o u32 read_write)
    (atomic add o 0u32 1u32))]]

  it("counts invocations: a loop-free program over a huge grid stops at the budget", function()
    local be = vyre.reference.new({ max_steps = 1000 })
    local o = be:buffer("u32", 1)
    local k = be:compile(vyre.parse(WIDE))
    local msg = H.error_of(k.launch, k, { o = o }, { grid = { 2147483647, 65535, 1 } })
    assert.matches("program 'wide' stopped after 1000 steps (loop iterations and invocations)",
      msg, 1, true)
    assert.matches("in workgroup (15,0,0)", msg, 1, true)
    -- 15 workgroups of 64 ran (960 steps); the 16th would pass the budget
    assert.are.equal(960, o:download()[1])
    -- within the budget the same program completes
    local r = be:run(vyre.parse(WIDE), { o = { 0 } }, { grid = { 15 } })
    assert.are.equal(960, r.o[1])
  end)

  -- Runs `body` (Lua) in a child lua5.4 and sends it SIGINT after `delay` seconds;
  -- returns the child's output and its "rc=N" line. `timeout` ends a child that
  -- ignored the signal (rc=124).
  local function interrupted_child(body, delay, marker)
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write("local vyre = require('vyre')\nlocal be = vyre.reference.new()\n", body)
    f:close()
    local sh = assert(io.open(script .. ".sh", "w"))
    sh:write("timeout 30 env ", LUA, " ", script, " > ", script, ".out 2>&1 &\npid=$!\n",
      WAIT_FOR(marker, script .. ".out"), "sleep ", delay,
      "\nkill -INT $pid\nwait $pid\necho rc=$?\n")
    sh:close()
    local h = io.popen("sh " .. script .. ".sh")
    local rc = h:read("a")
    h:close()
    local g = assert(io.open(script .. ".out"))
    local out = g:read("a")
    g:close()
    os.remove(script)
    os.remove(script .. ".out")
    os.remove(script .. ".sh")
    return out, rc
  end

  it("sees Ctrl-C between workgroups of a loop-free program", function()
    local out, rc = interrupted_child(table.concat({
      "io.stdout:write('running\\n') io.stdout:flush()\n",
      "local ok, e = pcall(be.run, be, vyre.parse([[", WIDE, "]]), {o = {0}},\n",
      "  {grid = {2147483647, 65535, 1}})\n",
      "print(ok, e)\nprint('still alive')\n" }), 0.5, "running")
    assert.matches("rc=0", rc, 1, true)
    assert.matches("program 'wide' was interrupted", out, 1, true)
    assert.matches("still alive", out, 1, true)
  end)

  it("does not swallow a Ctrl-C that arrives while a short run completes", function()
    -- Many short loop-free runs: the signal lands inside one of them (after its last
    -- check, or before the fix anywhere in it). It must still reach lua5.4's own handler
    -- ("interrupted!") or stop the run; "all runs completed" means it was lost.
    local out, rc = interrupted_child(table.concat({
      "local p = vyre.parse([[", WIDE, "]])\n",
      "local t0 = os.time()\n",
      "io.stdout:write('looping\\n') io.stdout:flush()\n",
      "while os.time() - t0 < 8 do\n",
      "  local ok, e = pcall(be.run, be, p, {o = {0}}, {grid = {2000}})\n",
      "  if not ok then print('stopped: ' .. tostring(e)) os.exit(3) end\n",
      "end\nprint('all runs completed')\n" }), 0.5, "looping")
    assert.is_nil(out:find("all runs completed", 1, true))
    -- rc=3: a run stopped (or Lua's handler raised inside the pcall); rc=1: Lua's
    -- handler raised between two runs, outside the pcall. Either way it was heard; a
    -- lost signal would end with "all runs completed" (rc=0), a hung child with rc=124.
    assert.truthy(rc:find("rc=3", 1, true) or rc:find("rc=1\n", 1, true), rc)
    assert.truthy(out:find("interrupted", 1, true))
  end)

  it("refuses a converge flag bound with no elements, with a fix", function()
    local p = vyre.parse([[(program cz (workgroup 1) (buffer f u32 read_write)
      (buffer o u32 read_write) (converge f 3u32 (atomic add o 0u32 1u32)))]])
    local be = vyre.reference.new()
    local msg = H.error_of(be.run, be, p, { f = vyre.array("u32", 0), o = { 0 } }, { n = 1 })
    assert.matches("buffer 'f' is bound with 0 elements, but it is the flag of a converge loop",
      msg, 1, true)
    assert.matches("Fix: bind a buffer of at least 1 element", msg, 1, true)
    -- with one element it runs: the flag stays clear, so one round
    assert.are.equal(1, be:run(p, { f = { 0 }, o = { 0 } }, { n = 1 }).o[1])
  end)
end)
