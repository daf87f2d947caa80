-- 75: require("vyre.cuda") is the library (issue 20 §2). It gives every key of
-- require("vyre") with the same value (one library seen twice, not a copy), the CUDA
-- device functions on top (none of them a name of require("vyre"), so nothing is
-- shadowed), vyre.cuda.device from either name, nil for an unknown key as a Lua table
-- gives, and vyre.backend() that prefers CUDA and falls back to the reference with the
-- reason. The README tour through this name is spec/11; the REPL's vyre is spec/61.
local vyre = require("vyre")
local cuda = require("vyre.cuda")

local DEVICE = { "available", "count", "device", "open", "profile", "cache", "nvtx",
  "driver_version", "nccl", "nccl_id", "group", "group_from_env" }
-- require("vyre")'s lazily loaded fields: pairs() does not list them until first use.
local LAZY = { "lib", "egraph", "cuda", "policy", "planners", "profiles", "plan_view" }

describe("require('vyre.cuda')", function()
  it("gives every key of require('vyre') with the same value", function()
    local n = 0
    for k, v in pairs(vyre) do
      assert.are.equal(v, cuda[k], "vyre.cuda." .. tostring(k) .. " differs from vyre." .. k)
      n = n + 1
    end
    assert.is_true(n >= 20)
    for _, k in ipairs(LAZY) do
      assert.is_not_nil(cuda[k], k)
      assert.are.equal(vyre[k], cuda[k], k)
    end
    -- one lazily loaded vyre.lib, whichever name loads it
    assert.are.equal(require("vyre.lib"), cuda.lib)
    assert.are.equal(require("vyre.egraph"), cuda.egraph)
  end)

  it("has the device functions, none of them a name of require('vyre')", function()
    for _, k in ipairs(DEVICE) do
      assert.is_function(cuda[k], k)
      assert.is_nil(rawget(vyre, k), "vyre." .. k .. " would be shadowed by vyre.cuda." .. k)
      assert.is_nil(vyre[k], "vyre." .. k .. " would be shadowed by vyre.cuda." .. k)
    end
    -- its own fields are exactly the device functions (pairs lists these)
    local own = {}
    for k in pairs(cuda) do own[#own + 1] = k end
    table.sort(own)
    local want = { table.unpack(DEVICE) }
    table.sort(want)
    assert.are.same(want, own)
    -- profile is the planners' profile by name, the same as vyre.profiles.get
    assert.are.same(vyre.profiles.get("h100"), cuda.profile("h100"))
  end)

  it("is require('vyre').cuda, so vyre.cuda.device works from either name", function()
    assert.are.equal(cuda, vyre.cuda)
    assert.are.equal(cuda, cuda.cuda)
    assert.are.equal(vyre.cuda.device, cuda.device)
    assert.are.equal(cuda.device, cuda.cuda.device)
    local avail, why = cuda.available()
    if avail then
      local be = assert(cuda.device(0))
      assert.are.equal(be, vyre.cuda.device(0))
      assert.are.equal("cuda", be.name)
    else
      assert.is_string(why)
      local be, reason = cuda.device(0)
      assert.is_nil(be)
      assert.is_string(reason)
    end
  end)

  it("builds and runs programs: require('vyre.cuda').program works", function()
    local p = require("vyre.cuda").program("inc", { workgroup = 64,
      cuda.buffer("v", "u32", "read_write") }, function(k)
      local i = k:let("i", k.gid.x)
      k:when(i:lt(k.v:len()), function() k.v[i] = k.v[i] + 1 end)
    end)
    local out = cuda.backend("reference"):run(p, { v = { 1, 2, 3 } })
    assert.are.same({ 2, 3, 4 }, out.v:totable())
    assert.are.equal("(program", cuda.parse(p:text()):text():sub(1, 8))
  end)

  it("gives nil for an unknown key, and refuses writes with a Fix", function()
    assert.is_nil(cuda.no_such_name)
    assert.is_nil(cuda.Program)
    assert.is_nil(vyre.no_such_name)
    local ok, err = pcall(function() cuda.mine = 1 end)
    assert.is_false(ok)
    assert.matches("vyre.cuda: cannot set 'mine'.*Fix:", err)
    assert.is_nil(rawget(cuda, "mine"))
  end)

  it("backend() prefers CUDA and falls back to the reference with the reason", function()
    local be = cuda.backend()
    if cuda.available() then
      assert.are.equal("cuda", be.name)
    else
      assert.are.equal("reference", be.name)
      local none, why = cuda.backend("cuda")
      assert.is_nil(none)
      assert.is_string(why)
      assert.are.equal(select(2, cuda.available()), why)
    end
  end)

  it("has help: help(require('vyre.cuda')) and names through vyre.cuda", function()
    local help = require("vyre.help")
    local text = assert(help.text(cuda))
    assert.matches('require%("vyre%.cuda"%)', text)
    assert.matches("device", text)
    assert.are.equal(help.text("vyre.program"), help.text("vyre.cuda.program"))
    assert.are.equal(help.text(vyre.parse), help.text(cuda.parse))
    assert.matches("cuda%.device", assert(help.text(cuda.device)))
  end)
end)
