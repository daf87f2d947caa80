-- 56: misuse of the Lua API gives a clear error that names the method and says how
-- to fix it, never Lua's raw "bad argument #1 to '?'" or "attempt to index"; host
-- memory is visible to the collector's pacing and capped (issue 14, findings 2 and 6).
local vyre = require("vyre")
local H = require("spec.helpers")

local LUA = ("LUA_PATH='%s' LUA_CPATH='%s' lua5.4"):format(package.path, package.cpath)

local function child(env, code)
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(code)
  f:close()
  local h = io.popen(env .. " " .. LUA .. " " .. script .. " 2>&1")
  local out = h:read("a")
  h:close()
  os.remove(script)
  return out
end

describe("methods called on the wrong object", function()
  local be, k, v, l
  before_each(function()
    be = H.ref()
    k = be:compile(vyre.parse(H.INC))
    v = be:buffer("u32", 4)
    l = k:bind({ v = v })
  end)

  it("name the class, the method and what they got", function()
    assert.are.equal("vyre.Launch:launch: called on a vyre.Buffer, not a vyre.Launch. Fix: "
      .. "call it with a colon on a vyre.Launch, e.g. obj:launch(...)", H.error_of(l.launch, v))
    assert.matches("vyre.Launch:free: called on a number, not a vyre.Launch",
      H.error_of(l.free, 5), 1, true)
    local g = be:graph({ { k, { v = v } } })
    assert.matches("vyre.Graph:launch: called on a string, not a vyre.Graph",
      H.error_of(g.launch, "x"), 1, true)
    assert.matches("vyre.Kernel:launch: called on a vyre.Buffer, not a vyre.Kernel",
      H.error_of(k.launch, v, {}), 1, true)
  end)

  it("keeps fields read-only with a fix", function()
    assert.matches("vyre.Buffer: fields and methods are read-only (tried to set count). Fix:",
      H.error_of(function() v.count = 1e9 end), 1, true)
    assert.are.equal(4, #v)
    assert.matches("vyre.Kernel: fields and methods are read-only (tried to set launch)",
      H.error_of(function() k.launch = nil end), 1, true)
    assert.matches("vyre.Backend: fields and methods are read-only",
      H.error_of(function() be._backend = nil end), 1, true)
    collectgarbage() -- __gc of everything above still works
  end)

  it("reports a freed launch and a freed kernel by name", function()
    k:free()
    assert.matches("vyre.Kernel:bind: the kernel was freed. Fix:",
      H.error_of(k.bind, k, { v = v }), 1, true)
    l:free()
    assert.are.equal("vyre.Launch(freed)", tostring(l))
    assert.matches("vyre.Launch:launch: the bound launch was freed. Fix:",
      H.error_of(l.launch, l), 1, true)
  end)
end)

describe("host memory", function()
  it("refuses an array above the host cap with a fix", function()
    local out = child("VYRE_HOST_MAX_BYTES=1000000",
      "local vyre = require('vyre')\nprint(pcall(vyre.array, 'f32', 2^32 - 1))\n"
      .. "print(#vyre.array('f32', 1000))\n")
    assert.matches("vyre.array: 17179869180 bytes of host memory is more than the host cap of "
      .. "1000000 bytes", out, 1, true)
    assert.matches("Fix: keep large data on the device", out, 1, true)
    assert.matches("\n1000\n", out, 1, true)
  end)

  it("caps the live total, not each allocation, and collects before refusing", function()
    -- issue 26: 4 MB arrays under a 10 MB cap. Two live ones fit, a third does not; one
    -- freed makes room; 100 dropped ones never pile up (a full collection frees them).
    local out = child("VYRE_HOST_MAX_BYTES=10000000", [[
      local vyre = require('vyre')
      local a, b = vyre.array('u32', 1000000), vyre.array('u32', 1000000)
      print(pcall(vyre.array, 'u32', 1000000))
      a:free()
      local c = vyre.array('u32', 1000000)
      print('third after free', #c)
      local be = vyre.reference.new()
      print(pcall(be.buffer, be, 'u32', 1000000))
      c:free()
      b = nil
      collectgarbage('stop') -- only vyre's own collection can free the dropped arrays
      for _ = 1, 100 do local d = vyre.array('u32', 1000000) d[1] = 1 end
      print('dropped ok')
    ]])
    assert.matches("vyre.array: 4000000 bytes of host memory would bring the live arrays "
      .. "and reference buffers to 12000000 bytes, more than the host cap of 10000000 bytes",
      out, 1, true)
    assert.matches("Fix: free arrays and buffers you no longer need", out, 1, true)
    assert.matches("third after free	1000000", out, 1, true)
    -- reference buffers count toward the same total
    assert.matches("vyre.Backend:buffer: 4000000 bytes of host memory would bring", out, 1, true)
    assert.matches("dropped ok", out, 1, true)
  end)

  it("is seen by the collector: dropped arrays do not pile up", function()
    local status = io.open("/proc/self/status")
    assert.truthy(status, "this spec reads the resident set size from /proc (Linux)")
    status:close()
    local out = child("", [[
      local vyre = require('vyre')
      local function rss()
        local f = io.open('/proc/self/status'); local s = f:read('a'); f:close()
        return tonumber(s:match('VmRSS:%s*(%d+)'))
      end
      local before = rss()
      local bytes = string.rep('abcd', 1024 * 1024) -- one 4 MiB string, copied each time
      for _ = 1, 300 do local a = vyre.array('u32', bytes); assert(#a == 1024 * 1024) end
      print('grew_kib', rss() - before)]])
    local grew = tonumber(out:match("grew_kib%s+(%-?%d+)"))
    assert.truthy(grew, out)
    -- 300 arrays of 4 MiB each were made; without pacing most stay alive (1.2 GB)
    assert.is_true(grew < 200 * 1024, "resident set grew by " .. tostring(grew) .. " KiB")
  end)
end)
