-- 79: bin/vyre finds its Lua files and vyre/core.so from its own path with no shell
-- (issue 26 §3: a path holding `"` used to run shell code), in the repository layout
-- and in an installed prefix (share/lua/5.4, lib/lua/5.4; issue 20 §3).
local here = io.popen("pwd"):read("l")
local build = os.getenv("VYRE_BUILD_DIR") or "build"
if build:sub(1, 1) ~= "/" then build = here .. "/" .. build end

-- Single-quoted for sh; the names below hold no single quote.
local function q(s)
  assert(not s:find("'", 1, true))
  return "'" .. s .. "'"
end

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("a")
  local _, _, code = p:close()
  return code, out
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

-- A scratch directory whose child's name runs `touch pwned` and `touch pwned2` when the
-- launcher hands its own path to a shell inside double quotes (as it once did).
local base = os.tmpname()
os.remove(base)
assert(os.execute("mkdir -p " .. q(base)))
local weird = 'a"b $(touch pwned) `touch pwned2` c"d'

local function no_marks()
  for _, m in ipairs({ "pwned", "pwned2" }) do
    assert.is_false(exists(base .. "/" .. m), "the launcher ran shell code from its path")
  end
end

describe("bin/vyre under a directory name with shell syntax", function()
  teardown(function() os.execute("rm -rf " .. q(base)) end)

  it("the repository layout: lua/ and the build's vyre/core.so next to bin/", function()
    assert.is_true(exists(build .. "/vyre/core.so"), "build the tree first: " .. build)
    local root = base .. "/" .. weird
    assert(os.execute("mkdir -p " .. q(root .. "/bin") .. " && cp bin/vyre " .. q(root .. "/bin/")
      .. " && ln -s " .. q(here .. "/lua") .. " " .. q(root .. "/lua")
      .. " && ln -s " .. q(build) .. " " .. q(root .. "/build")))
    -- relative (from the scratch directory, where the marks would land) and absolute
    local code, out = sh("cd " .. q(base) .. " && env -u LUA_PATH -u LUA_CPATH -u VYRE_BUILD_DIR "
      .. "lua5.4 " .. q(weird .. "/bin/vyre") .. " info")
    assert.are.equal(0, code, out)
    assert.matches("^vyre %d+%.%d+%.%d+\n", out)
    assert.matches("\nbackend: ", out)
    no_marks()
    code, out = sh("cd " .. q(base) .. " && env -u LUA_PATH -u LUA_CPATH -u VYRE_BUILD_DIR "
      .. q(root .. "/bin/vyre") .. " check " .. q(here .. "/examples/embed/particles.vyre"))
    assert.are.equal(0, code, out)
    assert.matches(": ok: program particles", out, 1, true)
    no_marks()
  end)

  it("an installed prefix: share/lua/5.4 and lib/lua/5.4 next to bin/", function()
    local prefix = base .. "/prefix " .. weird
    assert(os.execute("mkdir -p " .. q(prefix .. "/bin") .. " " .. q(prefix .. "/share/lua")
      .. " " .. q(prefix .. "/lib/lua") .. " && cp bin/vyre " .. q(prefix .. "/bin/")
      .. " && ln -s " .. q(here .. "/lua") .. " " .. q(prefix .. "/share/lua/5.4")
      .. " && ln -s " .. q(build) .. " " .. q(prefix .. "/lib/lua/5.4")))
    local code, out = sh("cd " .. q(base) .. " && env -u LUA_PATH -u LUA_CPATH -u VYRE_BUILD_DIR "
      .. q(prefix .. "/bin/vyre") .. " --version")
    assert.are.equal(0, code, out)
    assert.matches("^vyre %d+%.%d+%.%d+\n", out)
    no_marks()
  end)

  it("a path Lua's package.path cannot hold (';') is refused with a Fix", function()
    local root = base .. "/semi;colon"
    assert(os.execute("mkdir -p " .. q(root .. "/bin") .. " && cp bin/vyre " .. q(root .. "/bin/")
      .. " && ln -s " .. q(here .. "/lua") .. " " .. q(root .. "/lua")))
    local code, out = sh("env -u LUA_PATH -u LUA_CPATH " .. q(root .. "/bin/vyre") .. " info")
    assert.are.equal(1, code, out)
    assert.matches("holds ';' or '?'", out, 1, true)
    assert.matches("Fix: ", out, 1, true)
  end)

  it("the launcher has no shell in it", function()
    local f = assert(io.open("bin/vyre", "rb"))
    local src = f:read("a")
    f:close()
    assert.matches("^#!/usr/bin/env lua5.4\n", src)
    assert.is_nil(src:find("popen", 1, true))
    assert.is_nil(src:find("os.execute", 1, true))
  end)
end)
