-- vyre repl — a Lua 5.4 read-eval-print loop with vyre loaded. An expression prints its
-- value(s) (tables and vyre objects pretty-printed), a statement runs, input that is not
-- finished yet (an open function, table or string) continues on the next line, and an
-- error is shown without leaving the loop. A session is an object fed one line at a
-- time, so the specs drive it without a terminal:
--   local s = require("vyre.cli.repl").session({out = function(text) ... end})
--   s:feed("x = 1 + 1") --> "ok";  s:feed("function f()") --> "more"; s:prompt()
-- The REPL's vyre is what scripts get from require("vyre.cuda"): the library plus the
-- CUDA device functions (vyre.device(0), vyre.available(), ...).
local vyre = require("vyre.cuda")
local C = require("vyre.cli.common")
local pretty = require("vyre.cli.pretty")

local M = {
  name = "repl",
  summary = "interactive Lua 5.4 prompt with vyre loaded and objects that print usefully",
}

M.help = [==[
usage: vyre repl [-e CODE] [--quiet]

A Lua 5.4 prompt with vyre loaded. Predefined: vyre (= require("vyre.cuda"): the
library and the CUDA device functions), lib (vyre.lib), be (the backend
vyre.backend() picks, opened on first use), help (= vyre.help), pp (pretty-print).
  > 1 + 1                    an expression prints its value
  2
  > x = vyre.array("f32", {1, 2, 3})
  > x                        vyre objects and tables print readably
  vyre.Array(f32, 3) [1.0, 2.0, 3.0]
  > help(be.run)             help for any public function, type or DSL op
  > function f(a)            unfinished input continues on the next line (>>)
  >>   return a * 2
  >> end
At the prompt `local x = ...` defines x for the following lines (it is made global,
as each line is its own chunk). Errors are printed and the prompt stays. `=expr` works
as in Lua 5.1. Leave with exit, quit, os.exit() or end of input (Ctrl-D). Line editing
and history: run it under rlwrap (rlwrap vyre repl).

Options:
  -e CODE     run CODE first (as if typed at the prompt)
  --quiet     no banner and no prompts (also when standard input is not a terminal)
  -h, --help  this text]==]

-- Compiling one input -----------------------------------------------------------------

-- `local x = ...` / `local function f` at the prompt would die with the line; as lua.c
-- users expect the name afterwards, the first statement's `local` is dropped (not when
-- it has an attribute such as <close>, which needs a real local).
local function unlocal(src)
  local rest = src:match("^%s*local%s+(function%s.*)$")
  if rest then return rest end
  local names, tail = src:match("^%s*local%s+([%a_][%w_%s,]*)(=.*)$")
  if names and not names:find("<", 1, true) then return names .. tail end
  return src
end

-- Returns fn, or nil + "incomplete", or nil + error message.
local function compile(src, env)
  local expr = src:match("^%s*=(.*)$") or src
  local fn, eerr = load("return " .. expr .. "\n", "=stdin", "t", env)
  if fn then return fn end
  local err
  fn, err = load(unlocal(src), "=stdin", "t", env)
  if fn then return fn end
  -- Unfinished as an expression (`1 +`) or as a statement (`function f()`): wait.
  if err:match("<eof>$") or eerr:match("<eof>$") then return nil, "incomplete" end
  return nil, err
end

-- Sessions ---------------------------------------------------------------------------

local Session = {}
Session.__index = Session

-- Text of an error value, never raising: a value whose __tostring raises is described.
local function error_text(e)
  if type(e) == "string" then return e end
  local ok, t = pcall(tostring, e)
  if ok and type(t) == "string" then return t end
  return ("(a %s whose __tostring raised)"):format(type(e))
end

--- f(v) (pretty or tostring), or "<value: __tostring raised: msg>" when a __tostring
--- metamethod inside raises: one bad value must not end the session.
local function shown(f, v)
  local ok, t = pcall(f, v)
  if ok and type(t) == "string" then return t end
  if ok then t = "__tostring returned a " .. type(t) end
  return ("<value: __tostring raised: %s>"):format(error_text(t))
end

--- A fresh global environment: _G underneath, vyre, lib, help, pp, and `be` opened on
--- first use; print writes to the session's output.
local function make_env(out)
  local env = {}
  local lazy = {
    be = function() return (C.backend()) end,
    lib = function() return require("vyre.lib") end,
  }
  setmetatable(env, { __index = function(t, k)
    local make = lazy[k]
    if make then
      local v = make()
      rawset(t, k, v)
      return v
    end
    return _G[k]
  end })
  env.vyre = vyre
  env.help = function(x) -- vyre.help, written to the session's output
    local text, why = require("vyre.help").text(x)
    out((text or why) .. "\n")
  end
  env.pp = function(...)
    for i = 1, select("#", ...) do out(shown(pretty, (select(i, ...))) .. "\n") end
  end
  env.print = function(...)
    local parts = {}
    for i = 1, select("#", ...) do parts[i] = shown(tostring, (select(i, ...))) end
    out(table.concat(parts, "\t") .. "\n")
  end
  env._G = env
  return env
end

--- opts: out = function(text) (default io.stdout), env = a globals table.
function M.session(opts)
  opts = opts or {}
  local out = opts.out or function(s) io.stdout:write(s) end
  local s = setmetatable({ out = out, pending = nil }, Session)
  s.env = opts.env or make_env(out)
  return s
end

function Session:prompt()
  return self.pending and ">> " or "> "
end

local function message_of(err)
  if type(err) == "string" then return err end
  local mt = getmetatable(err)
  if mt and mt.__tostring then return shown(tostring, err) end
  return ("(error object is a %s value)"):format(type(err))
end

--- Feeds one line. Returns "ok" (ran, results printed), "more" (waiting for the rest),
--- "error" (compile or run error printed) or "exit" (exit/quit typed).
function Session:feed(line)
  if not self.pending and (line:match("^%s*exit%s*$") or line:match("^%s*quit%s*$")) then
    return "exit"
  end
  local src = self.pending and (self.pending .. "\n" .. line) or line
  if not src:match("%S") then
    self.pending = nil
    return "ok"
  end
  local fn, err = compile(src, self.env)
  if not fn and err == "incomplete" then
    self.pending = src
    return "more"
  end
  self.pending = nil
  if not fn then
    self.out("error: " .. err .. "\n")
    return "error"
  end
  local r = table.pack(xpcall(fn, function(e) return message_of(e) end))
  if not r[1] then
    self.out("error: " .. r[2] .. "\n")
    return "error"
  end
  local parts = {}
  -- One newline per result line (a Program's text already ends with one).
  for i = 2, r.n do parts[#parts + 1] = (shown(pretty, r[i]):gsub("\n$", "")) end
  if #parts > 0 then self.out(table.concat(parts, "\t") .. "\n") end
  return "ok"
end

--- Feeds every line of text (a string or a list of lines); returns the output and the
--- session. For the specs and for `-e`.
function M.eval(input, opts)
  local o = {}
  opts = opts or {}
  local sink = opts.out or function(s) o[#o + 1] = s end
  local s = M.session({ out = sink, env = opts.env })
  local lines = input
  if type(input) == "string" then
    lines = {}
    for l in (input .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l end
  end
  for _, l in ipairs(lines) do
    if s:feed(l) == "exit" then break end
  end
  return table.concat(o), s
end

local function interactive()
  return os.execute("test -t 0") == true
end

local function banner(ctx)
  local _, line = C.backend()
  ctx.out(("vyre %s on %s — %s\n"):format(vyre.version, _VERSION, line))
  ctx.out("vyre, lib, be (opened on first use), help, pp are defined; help() lists "
    .. "topics; Ctrl-D or exit leaves\n")
end

--- The loop: reads lines from opts.input (default io.read) until the end or exit.
function M.run(argv, ctx, input)
  ctx = C.context(ctx)
  local opts, pos = C.parse_options(argv, { e = "string", quiet = "flag" })
  if not opts then return C.usage_error(ctx, "repl", pos) end
  if opts.help then
    ctx.out(M.help .. "\n")
    return C.OK
  end
  if #pos > 0 then return C.usage_error(ctx, "repl", "unexpected argument '" .. pos[1] .. "'") end
  local quiet = opts.quiet or (not input and not interactive())
  local s = M.session({ out = ctx.out })
  if not quiet then banner(ctx) end
  if opts.e and s:feed(opts.e) == "exit" then return C.OK end
  local read = input or function() return io.read("L") end
  while true do
    if not quiet then
      ctx.out(s:prompt())
      if io.stdout.flush then io.stdout:flush() end
    end
    local line = read()
    if line == nil then break end
    if s:feed((line:gsub("\r?\n$", ""))) == "exit" then break end
  end
  if not quiet then ctx.out("\n") end
  return C.OK
end

return M
