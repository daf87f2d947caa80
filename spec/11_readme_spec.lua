-- 11: README truth. The ```lua block of the "API tour" section runs as written, through
-- require("vyre.cuda") as the README leads (on
-- CUDA when it is usable, else on the reference backend), every `--> value`
-- annotation matches what that line prints, and the files and commands the README
-- names exist.
local README = "README.md"

local function read(path)
  local f = assert(io.open(path, "rb"), "cannot open " .. path .. " (run busted from the "
    .. "repository root)")
  local s = f:read("a")
  f:close()
  return s
end

--- The body of the first ```lua block after the "## API tour" heading, and the
--- README line number of its first line.
local function tour_block(text)
  local head = text:find("\n## API tour\n", 1, true)
  assert(head, "README.md has no '## API tour' section")
  local open_at, open_end = text:find("\n```lua\n", head, true)
  assert(open_at, "the API tour has no ```lua block")
  local close_at = text:find("\n```\n", open_end, true)
  assert(close_at, "the API tour's ```lua block is not closed")
  local _, nl = text:sub(1, open_end):gsub("\n", "")
  return text:sub(open_end + 1, close_at), nl + 1
end

--- Runs code with print captured: returns ok, err, {[line] = {printed line, ...}}.
local function run_captured(code, chunkname)
  local printed = {}
  local env = setmetatable({}, { __index = _G })
  env.print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
    local line = debug.getinfo(2, "l").currentline
    printed[line] = printed[line] or {}
    table.insert(printed[line], table.concat(parts, " "))
  end
  local fn, err = load(code, chunkname, "t", env)
  if not fn then return false, err, printed end
  local ok, rerr = pcall(fn)
  return ok, rerr, printed
end

--- {line = L, expected = text} for each `--> text` annotation: at the end of a
--- print line, or on its own line right after the print it belongs to.
local function annotations(code)
  local out, n, last_print = {}, 0, nil
  for line in (code .. "\n"):gmatch("(.-)\n") do
    n = n + 1
    local own = line:match("^%s*%-%->%s?(.*)$")
    local trailing = line:match("%-%->%s?(.-)%s*$")
    if own and last_print then
      out[#out + 1] = { line = last_print, expected = own }
    elseif trailing and line:find("print(", 1, true) then
      out[#out + 1] = { line = n, expected = trailing }
    end
    if line:find("print(", 1, true) then last_print = n end
  end
  return out
end

describe("README.md", function()
  local text = read(README)
  local code, first_line = tour_block(text)

  it("API tour runs without error", function()
    local ok, err = run_captured(code, "=README API tour")
    assert(ok, "the API tour (README.md line " .. first_line .. " on) fails: " .. tostring(err))
  end)

  it("API tour prints what its --> annotations say", function()
    local ok, err, printed = run_captured(code, "=README API tour")
    assert(ok, tostring(err))
    local notes = annotations(code)
    assert.is_true(#notes >= 8, "expected the tour to annotate its prints")
    for _, a in ipairs(notes) do
      local got = printed[a.line] and printed[a.line][1]
      assert.are.equal(a.expected, got, string.format("README.md line %d prints %q, the README "
        .. "says %q", first_line + a.line - 1, tostring(got), a.expected))
    end
  end)

  it("API tour leads with require(\"vyre.cuda\")", function()
    assert.truthy(code:find('^local vyre = require%("vyre%.cuda"%)\n'),
      "the tour's first line must be local vyre = require(\"vyre.cuda\")")
    assert.is_nil(code:find('require%("vyre"%)'), "the tour must not mix in require(\"vyre\")")
  end)

  it("API tour uses only functions that exist in the module", function()
    local vyre = require("vyre.cuda")
    -- the code only: comments and --> annotations show printed text (vyre.Array(...))
    local bare = code:gsub("%-%-[^\n]*", "")
    for name in bare:gmatch("vyre%.([%a_]+)%(") do
      assert.is_function(vyre[name], "README calls vyre." .. name .. ", which does not exist")
    end
  end)

  it("names only files and directories that exist", function()
    local checked = 0
    for span in text:gmatch("`([^`\n]+)`") do
      local path = span:match("^sh (%S+)$") or span:match("^(%S+) info$") or span
      if path:find("/", 1, true) and path:match("^[%w_%-%./]+$") then
        local f = io.open(path, "rb")
        if f then f:close() end
        local isdir = os.execute("test -d '" .. path .. "'")
        assert(f or isdir, "README.md names " .. path .. ", which does not exist")
        checked = checked + 1
      end
    end
    for cmd in text:gmatch("\nsh (scripts/[%w_%.]+)") do
      assert(io.open(cmd, "rb"), "README.md runs " .. cmd .. ", which does not exist")
      checked = checked + 1
    end
    assert.is_true(checked >= 10)
  end)

  it("its two commands run under plain sh, and .ci/run runs the test command verbatim", function()
    local cmds = {}
    for line in text:gmatch("\n(sh scripts/[%w_%.]+)") do cmds[#cmds + 1] = line end
    assert.are.same({ "sh scripts/example.sh", "sh scripts/test.sh" }, cmds)
    -- Debian's sh is dash: a bash-only construct anywhere in these scripts is a syntax
    -- error there (`dash -n` parses the whole file without running it).
    local has_dash = os.execute("command -v dash >/dev/null 2>&1")
    local scripts = { "scripts/example.sh", "scripts/test.sh", "scripts/setup.sh", ".ci/run" }
    for _, script in ipairs(scripts) do
      local shell = has_dash and "dash" or "sh"
      local ok = os.execute(shell .. " -n " .. script .. " 2>/dev/null")
      assert(ok, script .. " does not parse under " .. shell .. ": the README runs it with sh")
      assert.is_nil(read(script):match("^#!/bin/bash"),
        script .. " asks for bash; the README runs it with sh")
    end
    local ci = read(".ci/run")
    local found = false
    for line in ci:gmatch("[^\n]+") do
      if line:match("^%s*sh scripts/test%.sh%s*$") then found = true end
    end
    assert(found, ".ci/run must run the README's test command as written: sh scripts/test.sh")
  end)

  it("lists the packages that scripts/setup.sh installs", function()
    local setup = read("scripts/setup.sh")
    -- The list ends with ".\n" (a bare "." would stop at the one in "lua5.4").
    local list = text:match("only for missing packages:%s*(.-)%.\n")
    assert(list, "README.md no longer lists the packages the scripts install")
    local n = 0
    for pkg in list:gmatch("[%w%.%-]+") do
      assert(setup:find(pkg, 1, true), "setup.sh does not install " .. pkg)
      n = n + 1
    end
    assert.is_true(n >= 8, "expected the README to list every package, found " .. n)
  end)

  it("bin/vyre info says whether CUDA is usable and where the cache lives", function()
    local cmd = string.format("env LUA_PATH=%q LUA_CPATH=%q lua5.4 bin/vyre info 2>&1",
      package.path, package.cpath)
    local p = assert(io.popen(cmd))
    local out = p:read("a")
    p:close()
    assert.matches("CUDA: ", out, 1, true)
    assert.matches("cubin cache: ", out, 1, true)
  end)
end)
