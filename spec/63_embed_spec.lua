-- 63: embedding (examples/embed): the two C hosts built by CMake run their frame loop
-- and match their C simulation bit for bit, and buf:pointer() hands out the raw
-- address of a buffer's data on both backends.
local vyre = require("vyre")

local build = os.getenv("VYRE_BUILD_DIR") or "build"
local dir = build .. "/examples/embed/"

-- Runs a host binary: exit status, output (stdout and stderr).
local function host(name, args)
  local path = dir .. name
  local f = io.open(path, "rb")
  assert(f, path .. " is not built. Fix: cmake --build " .. build
    .. " (VYRE_EXAMPLES is on by default)")
  f:close()
  -- The paths compiled in are the build's; these work wherever the tree was copied to.
  local p = io.popen("VYRE_EMBED_DIR=examples/embed VYRE_LUA_DIR=lua " .. path .. " " .. args
    .. " 2>&1")
  local out = p:read("a")
  local _, _, code = p:close()
  return code, out
end

describe("the embedding hosts (examples/embed)", function()
  for _, name in ipairs({ "vyre_embed_lua", "vyre_embed_c" }) do
    it(name .. " runs its frame loop on the reference backend and matches C", function()
      local code, out = host(name, "--backend reference --frames 12 --particles 300")
      assert.are.equal(0, code, out)
      assert.matches("\nframe  0: dt 0.015625 s, highest particle ", out, 1, true)
      assert.matches("\nframe 11: ", out, 1, true)
      assert.matches(name .. ": 12 frames, 300 particles, reference backend: the heights match "
        .. "the C simulation bit for bit", out, 1, true)
      -- every progress line shows the kernel's maximum equal to the simulation's
      for got, want in out:gmatch("highest particle ([%d.]+) %(C simulation ([%d.]+)%)") do
        assert.are.equal(want, got)
      end
    end)

    it(name .. " refuses a bad command line with its usage (exit 2)", function()
      local code, out = host(name, "--frames zero")
      assert.are.equal(2, code)
      assert.matches("usage: " .. name .. " [--backend reference|cuda]", out, 1, true)
    end)

    it(name .. " runs on CUDA and matches C #gpu", function()
      local code, out = host(name, "--backend cuda --frames 30 --particles 100000")
      assert.are.equal(0, code, out)
      assert.matches("cuda backend: the heights match the C simulation bit for bit", out, 1,
        true)
    end)
  end

  it("the Lua host reports a script error with a traceback and exit 1", function()
    local tmp = os.tmpname()
    os.remove(tmp)
    assert(os.execute("mkdir -p '" .. tmp .. "'"))
    local f = assert(io.open(tmp .. "/frame.lua", "wb"))
    f:write("return {init = function() return 'ok' end, frame = function(i)\n"
      .. "  if i == 2 then error('frame two failed') end end}\n")
    f:close()
    local code, out = host("vyre_embed_lua", "--frames 5")
    assert.are.equal(0, code, out) -- the real script
    local p = io.popen("VYRE_EMBED_DIR='" .. tmp .. "' VYRE_LUA_DIR=lua " .. dir
      .. "vyre_embed_lua 2>&1")
    out = p:read("a")
    local _, _, c2 = p:close()
    os.execute("rm -rf '" .. tmp .. "'")
    assert.are.equal(1, c2)
    assert.matches("vyre_embed_lua: frame.lua frame: .*frame two failed\nstack traceback:", out)
  end)
end)

describe("buf:pointer()", function()
  it("gives the host address of a reference buffer's data", function()
    local be = vyre.backend("reference")
    local a, b = be:buffer("f32", { 1, 2, 3 }), be:buffer("u32", 8)
    local pa = a:pointer()
    assert.is_true(math.type(pa) == "integer" and pa ~= 0)
    assert.are.equal(pa, a:pointer()) -- stable: the memory never moves
    assert.are_not.equal(pa, b:pointer())
    a:upload({ 4, 5, 6 })
    assert.are.equal(pa, a:pointer())
    assert.are.equal(0, be:buffer("f32", 0):pointer())
  end)

  it("raises on a freed buffer and on a non-buffer", function()
    local b = vyre.backend("reference"):buffer("f32", 2)
    b:free()
    local ok, err = pcall(b.pointer, b)
    assert.is_false(ok)
    assert.matches("vyre.Buffer:pointer: the buffer was freed. Fix:", err, 1, true)
    ok, err = pcall(b.pointer, {})
    assert.is_false(ok)
    assert.matches("vyre.Buffer:pointer: called on a table, not a vyre.Buffer", err, 1, true)
  end)

  it("is the CUDA device pointer on a GPU #gpu", function()
    local be = assert(vyre.backend("cuda"))
    local b = be:buffer("f32", 16)
    local p = b:pointer()
    assert.is_true(math.type(p) == "integer" and p ~= 0)
    assert.are.equal(p + 4 * 3, b:view(4):pointer()) -- a view: the parent's + offset
  end)
end)
