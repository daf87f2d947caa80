-- vyre.errors — the one way every Lua layer of vyre raises (docs/API.md "Errors").
-- An error is a vyre.Error, the same type the C binding raises (src/lvyre/lerror.c):
-- a table {code, message, fix, where} whose tostring is the whole text
-- "file:line: vyre.fn: what. Fix: how". Code that decides what to do reads err.code
-- (or err.fix) instead of matching the wording; code that prints or pattern-matches an
-- error keeps working, since err:match, err:find, #err and err .. s act on the text.
local core = require("vyre.core")

local E = {}

--- The stable codes, each with what it means (docs/API.md "Errors" lists the same).
E.CODES = {
  arg = "an argument has the right type but an unusable value",
  type = "an argument has the wrong type",
  self = "a method was called on the wrong object (a dot for a colon)",
  freed = "the object (or one it needs) was freed",
  backend = "an object belongs to another backend object",
  unsupported = "this backend, device or build cannot do it",
  limit = "a size or count is past a limit",
  oom = "out of host or device memory",
  parse = "program text does not parse",
  validate = "a program breaks a rule of the validator",
  runtime = "the reference interpreter stopped the run",
  driver = "a CUDA driver call failed",
  no_cuda = "CUDA is not usable on this machine",
  lost = "the device was lost (a sticky fault)",
  io = "a file could not be read or written",
  internal = "a bug in vyre: please report it",
}

E.is = core.is_error

--- "fname: what. Fix: fix" (fix may be nil: no Fix part).
function E.format(fname, what, fix)
  if fix then return ("%s: %s. Fix: %s"):format(fname, what, fix) end
  return ("%s: %s"):format(fname, what)
end

-- core.error_new takes C strings: a NUL in quoted user text (a pattern, a file's bytes)
-- would cut the message there and lose its Fix (fuzzing found it), so a NUL
-- is shown as \0.
local function error_new(code, text, where)
  return core.error_new(code, (text:gsub("%z", "\\0")), where)
end

-- "file:line: " of a stack frame (as error() prefixes), "" for none or a C function.
local function position(info)
  if not info or info.currentline <= 0 then return "" end
  return info.short_src .. ":" .. info.currentline .. ": "
end

--- A new vyre.Error from its code and whole text (worded "vyre.fn: what. Fix: how"),
--- positioned as error(text, level) would be from the caller (nil or 0: no position);
--- `fields` (optional) adds facts a caller may read (the DSL's `site`).
function E.new(code, text, level, fields)
  assert(E.CODES[code], "vyre.errors: unknown code " .. tostring(code))
  local w = (level or 0) > 0 and position(debug.getinfo(level + 1, "Sl")) or ""
  local e = error_new(code, text, w)
  for k, v in pairs(fields or {}) do e[k] = v end
  return e
end

--- Raises E.new(code, text, level, fields) (level as error(): 1, the default, = the caller).
function E.raise(code, text, level, fields)
  level = level or 1
  error(E.new(code, text, level > 0 and level + 1 or 0, fields), 0)
end

--- Raises "fname: what. Fix: fix" with code at `level` (as error(); default 1).
function E.fail(code, fname, what, fix, level)
  level = level or 1
  error(E.new(code, E.format(fname, what, fix), level > 0 and level + 1 or 0), 0)
end

--- The level (as error() counts it in the caller) of the first frame whose file is not
--- under lua/vyre/<dir> ("lib", "egraph", "dsl.lua") nor this file (and, with skip_c,
--- not a C function): errors of those layers point at the user's line. 0 when none.
function E.outside(dir, skip_c)
  local lvl = 2
  while true do
    local info = debug.getinfo(lvl, "S")
    if not info then return 0 end
    local src = info.source or ""
    local inside = src:find("vyre/" .. dir, 1, true) or src:find("vyre\\" .. dir, 1, true)
      or src:find("vyre[/\\]errors%.lua$") or (skip_c and info.what == "C")
    if not inside then return lvl - 1 end
    lvl = lvl + 1
  end
end

--- Raises code/text (and `fields`, as E.new) at the first line outside lua/vyre/<dir>
--- (see E.outside).
function E.raise_outside(dir, code, text, skip_c, fields)
  local lvl = E.outside(dir, skip_c)
  local w = lvl > 0 and position(debug.getinfo(lvl, "Sl")) or ""
  local e = error_new(code, text, w)
  for k, v in pairs(fields or {}) do e[k] = v end
  error(e, 0)
end

--- what, fix of a text worded "what. Fix: how" (fix nil when it has none), split by the
--- core's one rule (vyre_error_fix), for a layer composing its own message.
function E.split(text)
  local e = error_new("internal", text)
  return e.message, e.fix
end

--- The one wording of a wrong self (the C binding's vyre_lua_wrongself says the same):
--- "fname: called on a X, not a TNAME. Fix: call it with a colon on a TNAME, e.g.
--- obj:method(...)", code "self", raised at `level` (as error(); default 1).
function E.wrong_self(v, tname, fname, level)
  local mt = getmetatable(v)
  local got = type(mt) == "table" and rawget(mt, "__name") or type(v)
  local method = fname:match(":([%w_]+)$") or "method"
  level = level or 1
  E.raise("self", ("%s: called on a %s, not a %s. Fix: call it with a colon on a %s, e.g. "
    .. "obj:%s(...)"):format(fname, got, tname, tname, method), level > 0 and level + 1 or 0)
end

--- The code of an error value: err.code of a vyre.Error, nil for anything else.
function E.code(e)
  if E.is(e) then return e.code end
  return nil
end

--- The text of any error value (tostring; "nil" for nil).
function E.text(e)
  return tostring(e)
end

--- what, fix of an error value: the message and fix of a vyre.Error (message and fix
--- without the position); for a plain string, the string and nil.
function E.parts(e)
  if E.is(e) then return e.message, e.fix end
  return tostring(e), nil
end

--- The same error with `prefix` put before its message ("vyre.lib.sum: " .. message),
--- keeping code and fix: how a layer reports an error of a call it made for the user.
function E.wrap(prefix, e, code)
  local msg, fix = E.parts(e)
  local text = prefix .. msg .. (fix and (" Fix: " .. fix) or "")
  return error_new(E.code(e) or code or "internal", text, "")
end

return E
