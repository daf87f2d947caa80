-- vyre.cli.common — what the `vyre` subcommands share: the output context, option
-- parsing, loading programs from a text file or a Lua file, choosing a backend and
-- formatting values. Commands are functions of (argv, ctx) returning an exit status, so
-- the specs call them in-process; bin/vyre only forwards arg and os.exit()s the status.
--
-- Exit statuses: 0 success, 1 the work failed (problems found, a run raised, a file
-- exists but cannot be read), 2 the command line is wrong (unknown option, bad or
-- out-of-range value, no FILE, a FILE that does not exist or is a directory).
local vyre = require("vyre")
local Err = require("vyre.errors")

local M = {}

M.OK, M.FAIL, M.USAGE = 0, 1, 2

-- Output context ---------------------------------------------------------------------

--- A context writes to stdout/stderr; ctx.out/ctx.err take one string each. Specs pass
--- M.capture() to collect both.
function M.context(ctx)
  if ctx then return ctx end
  return {
    out = function(s) io.stdout:write(s) end,
    err = function(s) io.stderr:write(s) end,
  }
end

--- A context that collects output: ctx.stdout(), ctx.stderr() give what was written.
function M.capture()
  local o, e = {}, {}
  return {
    out = function(s) o[#o + 1] = s end,
    err = function(s) e[#e + 1] = s end,
    stdout = function() return table.concat(o) end,
    stderr = function() return table.concat(e) end,
  }
end

--- Prints a usage error naming the command and returns M.USAGE.
function M.usage_error(ctx, cmd, msg)
  ctx.err(("vyre %s: %s\nRun 'vyre %s --help' for the options.\n"):format(cmd, msg, cmd))
  return M.USAGE
end

-- Options ----------------------------------------------------------------------------

--- Parses argv against spec = {name = "flag" | "string" | "int"}: `--name value`,
--- `--name=value`, `-h`/`--help` (opts.help), `--` ends the options. Everything else is
--- positional. Returns opts, positional, or nil, message.
function M.parse_options(argv, spec)
  local opts, pos = {}, {}
  local i, only_pos = 1, false
  while i <= #argv do
    local a = argv[i]
    if only_pos or a:sub(1, 1) ~= "-" or a == "-" then
      pos[#pos + 1] = a
    elseif a == "--" then
      only_pos = true
    elseif a == "-h" or a == "--help" then
      opts.help = true
    else
      local name, value = a:match("^%-%-([%w_-]+)=(.*)$")
      name = name or a:match("^%-%-([%w_-]+)$") or (#a == 2 and a:sub(2))
      local kind = name and spec[name]
      if not kind then return nil, ("unknown option '%s'"):format(a) end
      if kind == "flag" then
        if value then return nil, ("option --%s takes no value"):format(name) end
        opts[name] = true
      else
        if not value then
          i = i + 1
          value = argv[i]
          if value == nil then return nil, ("option --%s needs a value"):format(name) end
        end
        if kind == "int" then
          local n = math.tointeger(tonumber(value))
          if not n then
            return nil, ("option --%s wants an integer, got '%s'"):format(name, value)
          end
          value = n
        end
        opts[name] = value
      end
    end
    i = i + 1
  end
  return opts, pos
end

-- Reading files and programs -----------------------------------------------------

-- errno values that mean the path names no file to read: the command line is wrong.
local ENOENT, ENOTDIR, EISDIR = 2, 20, 21

--- The contents of path, or nil, message, usage (usage: the path names no regular
--- file: missing or a directory, so the command line is wrong rather than the work).
function M.read_file(path)
  local f, err, code = io.open(path, "rb")
  if not f then return nil, err, code == ENOENT or code == ENOTDIR end
  local s, rerr, rcode = f:read("a")
  f:close()
  if not s then
    -- io.open succeeds on a directory; reading it fails with EISDIR.
    return nil, ("%s: %s"):format(path, rerr or "read failed"), rcode == EISDIR
  end
  return s
end

--- The exit status for a list of problems from load_programs: USAGE when a FILE named
--- on the command line is missing or a directory, else FAIL.
function M.problems_status(problems)
  for _, pr in ipairs(problems) do
    if pr.usage then return M.USAGE end
  end
  return M.FAIL
end

--- Splits "what. Fix: how" into what, how (how is nil when there is no Fix part).
function M.split_fix(msg)
  if Err.is(msg) then return msg.where .. msg.message:gsub("%.$", ""), msg.fix end
  -- a reason returned as text (cuda.available): split by the core's one rule
  local what, fix = Err.split(tostring(msg))
  if fix then what = what:gsub("%.$", "") end
  return what, fix
end

local function is_program(x)
  local mt = getmetatable(x)
  return type(mt) == "table" and mt.__name == "vyre.Program"
end
M.is_program = is_program

-- A Lua file returns a Program, program text, {program = p, args = {...}, opts = {...}}
-- or a list of those; each becomes one entry {program, args, opts, label}.
local function entries_of(value, path)
  local list = {}
  local function add(v, label)
    if is_program(v) then
      list[#list + 1] = { program = v, label = label }
    elseif type(v) == "string" then
      list[#list + 1] = { program = vyre.parse(v), label = label }
    elseif type(v) == "table" and v.program ~= nil then
      if not is_program(v.program) and type(v.program) ~= "string" then
        Err.raise("type",
          ("%s: the field 'program' is a %s. Fix: set program = vyre.program(...) or "
          .. "vyre.parse(text)"):format(path, type(v.program)), 0)
      end
      local p = is_program(v.program) and v.program or vyre.parse(v.program)
      list[#list + 1] = { program = p, args = v.args, opts = v.opts, label = label }
    else
      return false
    end
    return true
  end
  if not add(value, path) then
    if type(value) == "table" and #value > 0 then
      for i, v in ipairs(value) do
        if not add(v, ("%s[%d]"):format(path, i)) then
          Err.raise("type",
            ("%s: element %d of the returned list is a %s. Fix: return Programs (or "
            .. "{program = p, args = ...} tables)"):format(path, i, type(v)), 0)
        end
      end
    else
      Err.raise("type",
        ("%s: the file returned %s, not a program. Fix: end the file with `return p` "
        .. "(a vyre.Program, program text, or {program = p, args = {...}, opts = {...}})")
        :format(path, value == nil and "nothing" or "a " .. type(value)), 0)
    end
  end
  return list
end

--- Whether path names a Lua file (by extension) rather than program text.
function M.is_lua_file(path)
  return path:match("%.lua$") ~= nil
end

--- Loads the program(s) of a file. Program text is parsed; a Lua file runs with the
--- globals plus `vyre`, and `arg` = extra. Returns a list of entries, or nil and a
--- list of problems {where, code, message, fix, line, column}. Every validation the
--- DSL makes while the file runs is recorded, so a program the DSL rejects still gets
--- all its problems listed (the DSL's own error names only the first).
function M.load_programs(path, extra)
  local src, oerr, usage = M.read_file(path)
  if not src then
    return nil, { { where = path, code = "io", message = "cannot read the file: " .. oerr,
      fix = usage and "name a program file (a path that exists, not a directory)"
        or "check the file's permissions", usage = usage } }
  end
  if not M.is_lua_file(path) then
    local ok, p = pcall(vyre.parse, src)
    if ok then return { { program = p, label = path, text = src } } end
    local what, fix = M.split_fix(p)
    if Err.is(p) and p.reason then what = p.reason:gsub("%.$", "") end
    return nil, { { where = path, code = "syntax", message = what, fix = fix,
      line = Err.is(p) and p.line or nil, column = Err.is(p) and p.column or nil } }
  end
  local env = setmetatable({ vyre = vyre, arg = extra or {} }, { __index = _G })
  local chunk, lerr = load(src, "@" .. path, "t", env)
  if not chunk then
    local what, fix = M.split_fix(lerr)
    return nil, { { where = path, code = "lua", message = what,
      fix = fix or "correct the Lua syntax" } }
  end
  local core = vyre.core
  local validate, failed = core.validate, {}
  core.validate = function(p, ...)
    local r = table.pack(validate(p, ...))
    if not r[1] then failed[#failed + 1] = { program = p, problems = r[2] } end
    return table.unpack(r, 1, r.n)
  end
  local ok, value = pcall(chunk)
  core.validate = validate
  if ok then ok, value = pcall(entries_of, value, path) end
  if ok then return value end
  local what, fix = M.split_fix(value)
  local f = failed[#failed]
  if not f then
    return nil, { { where = path, code = "lua", message = what,
      fix = fix or "correct the Lua code" } }
  end
  -- The DSL named the Lua line of the program's first problem: that one gets it.
  local site = Err.is(value) and value.site or nil
  local problems = {}
  for i, pr in ipairs(f.problems) do
    problems[i] = { where = i == 1 and site or path, program = f.program.name, code = pr.code,
      path = pr.path, message = pr.message, fix = pr.fix }
  end
  return nil, problems
end

--- Picks the entry named name (a program name) or the only one.
function M.pick(entries, name, cmd)
  if name then
    for _, e in ipairs(entries) do
      if e.program.name == name then return e end
    end
  elseif #entries == 1 then
    return entries[1]
  end
  local names = {}
  for _, e in ipairs(entries) do names[#names + 1] = e.program.name end
  return nil, name and ("no program named '%s' (the file has: %s)"):format(name,
    table.concat(names, ", ")) or ("the file has %d programs (%s); pick one with "
    .. "--program NAME"):format(#entries, table.concat(names, ", ")), cmd
end

-- Backends ------------------------------------------------------------------------

--- The backend called name ("reference" | "cuda" | nil for the best available), and a
--- line that says which one it is and why. nil, reason when it cannot be had.
function M.backend(name)
  if name ~= nil and name ~= "reference" and name ~= "cuda" then
    return nil, ("unknown backend '%s'. Fix: --backend reference or --backend cuda")
      :format(name)
  end
  if name ~= "reference" then
    local ok, cuda = pcall(require, "vyre.cuda")
    local avail, why = false, ok and nil or tostring(cuda)
    if ok then avail, why = cuda.available() end
    if avail then
      local be, err = cuda.device(0)
      if be then
        local info = be:info()
        return be, ("backend: cuda (%s, sm_%d)"):format(info.name, info.sm)
      end
      why = err
    end
    if name == "cuda" then
      local what, fix = M.split_fix(why)
      return nil, ("CUDA is not usable here: %s. Fix: %s--backend reference runs the same "
        .. "program on the CPU"):format(what, fix and (fix:gsub("%.$", "") .. "; or ") or "")
    end
    -- The reason without its Fix: the line says why, --backend cuda gives the whole text.
    return vyre.backend("reference"), ("backend: reference (CUDA not usable: %s)")
      :format((M.split_fix(why)))
  end
  return vyre.backend("reference"), "backend: reference (CPU interpreter)"
end

-- Values ---------------------------------------------------------------------------

local INT = { i32 = true, u32 = true, i64 = true, u64 = true }
M.INT = INT

--- The shortest decimal that reads back as the same f32 (or f64) bits, always with a
--- point or exponent so it reads as a float (10.0, 0.1, -0.0, -nan): the one formatter
--- of src/lvyre/larray.c, which tostring(array) uses too.
function M.float_text(v, t)
  return vyre.core.float_text(v, t == "f32" and "f32" or "f64")
end

--- u64 values are Lua integers holding the same bits: print them unsigned.
function M.u64_text(v)
  if v >= 0 then return tostring(v) end
  local q = (v >> 1) // 5 -- v // 10, unsigned
  return tostring(q) .. tostring(v - q * 10)
end

--- Text of one element of type t.
function M.value_text(v, t)
  if t == "f32" or t == "f64" then return M.float_text(v, t) end
  if t == "u64" then return M.u64_text(v) end
  return tostring(v)
end

-- The range of each integer type: the largest magnitude of a negative value and the
-- largest positive value, both as unsigned 64-bit patterns (compared with math.ult).
local INT_RANGE = {
  i32 = { neg = 0x80000000, pos = 0x7fffffff, text = "-2147483648 .. 2147483647" },
  u32 = { neg = 0, pos = 0xffffffff, text = "0 .. 4294967295" },
  i64 = { neg = math.mininteger, pos = math.maxinteger,
    text = "-9223372036854775808 .. 9223372036854775807" },
  u64 = { neg = 0, pos = -1, text = "0 .. 18446744073709551615" },
}

-- The magnitude of a decimal or 0x-hex digit string as an unsigned 64-bit pattern, or
-- nil when it does not fit in 64 bits. Lua's own tonumber wraps hex past 2^64 and turns
-- big decimals into floats, so it cannot tell an out-of-range value from a valid one.
local function magnitude(digits)
  local m = 0
  local hex = digits:match("^0[xX](%x+)$")
  if hex then
    for c in hex:gmatch(".") do
      if m >> 60 ~= 0 then return nil end
      m = (m << 4) | tonumber(c, 16)
    end
    return m
  end
  local max10, last = 1844674407370955161, 5 -- (2^64 - 1) // 10 and its last digit
  for c in digits:gmatch(".") do
    local d = c:byte() - 48
    if math.ult(max10, m) or (m == max10 and d > last) then return nil end
    m = m * 10 + d
  end
  return m
end

--- Reads an integer of type t (i32, u32, i64, u64) from text: decimal or 0x hex with an
--- optional sign, or a number with an integral value (1e3). A value outside the type is
--- refused, never wrapped (u64 values are returned as Lua integers with the same bits).
--- Returns the integer, or nil and a message with a Fix.
function M.parse_int(s, t)
  local r = INT_RANGE[t]
  local sign, digits = s:match("^([+-]?)(%d+)$")
  if not sign then sign, digits = s:match("^([+-]?)(0[xX]%x+)$") end
  local m
  if digits then
    m = magnitude(digits)
  else
    local x = tonumber(s)
    if x == nil or math.type(x) ~= "float" or x ~= math.floor(x) then
      return nil, ("'%s' is not an integer (for %s). Fix: write an integer such as 42 or "
        .. "0x2a"):format(s, t)
    end
    sign = x < 0 and "-" or ""
    m = math.tointeger(math.abs(x)) -- nil past 2^63: out of range for every signed type
    if not m and t == "u64" and x > 0 and x < 2.0 ^ 64 then -- [2^63, 2^64): top bit set
      m = math.tointeger(x - 2.0 ^ 63) | math.mininteger
    end
  end
  local bound = sign == "-" and r.neg or r.pos
  if m == nil or math.ult(bound, m) then
    return nil, ("'%s' is out of range for %s (%s). Fix: pass a value in that range "
      .. "(values are never wrapped)"):format(s, t, r.text)
  end
  return sign == "-" and -m or m
end

--- Reads one value of type t from text; nil, message when it is not one.
function M.parse_value(s, t)
  s = s:match("^%s*(.-)%s*$")
  if t == "bool" then
    if s == "true" or s == "1" then return true end
    if s == "false" or s == "0" then return false end
    return nil, ("'%s' is not a bool (true, false, 1 or 0)"):format(s)
  end
  if INT[t] then return M.parse_int(s, t) end
  local lower = s:lower()
  -- NaNs as Arrays print them: nan and -nan (the quiet NaN of each sign), nan:0xBITS
  if lower == "nan" or lower == "-nan" then
    local q = t == "f32" and string.unpack("<f", string.pack("<I4", 0x7fc00000))
      or string.unpack("<d", string.pack("<I8", 0x7ff8000000000000))
    return lower == "nan" and q or -q
  end
  local hex = lower:match("^nan:0x(%x+)$")
  if hex then
    local bits = math.tointeger(tonumber(hex, 16))
    local f = t == "f32" and bits and bits <= 0xffffffff
      and string.unpack("<f", string.pack("<I4", bits))
      or t ~= "f32" and bits and string.unpack("<d", string.pack("<i8", bits))
    if f and f ~= f then return f end
    return nil, ("'%s' is not a NaN of %s (nan:0x then its bits in hex)"):format(s, t)
  end
  if lower == "inf" or lower == "+inf" then return math.huge end
  if lower == "-inf" then return -math.huge end
  local x = tonumber(s)
  if not x then return nil, ("'%s' is not a number (for %s)"):format(s, t) end
  x = x + 0.0 -- -0.0 + 0.0 is +0.0, and tonumber("-0") is the integer 0: keep the sign
  if x == 0 and s:find("^%-") then x = -0.0 end
  -- A finite literal past the type's range would silently become inf: refuse it (inf
  -- is written as inf). f32 rounds to inf from 2^128 - 2^103 on (FLT_MAX + half an ulp).
  local big = t == "f32" and 2.0 ^ 128 - 2.0 ^ 103 or math.huge
  if x ~= x or math.abs(x) >= big then
    return nil, ("'%s' is out of range for %s. Fix: pass a finite value in range, or inf / "
      .. "-inf / nan"):format(s, t)
  end
  return x
end

--- Element texts of an array: all of them, or the first `head` and last `tail` with
--- "…" between when there are more than head + tail.
function M.array_items(a, head, tail)
  -- element by element from the array's bits (a[i] would round-trip through a Lua
  -- number, which cannot hold an f32 signalling NaN's payload)
  local n, text, items = #a, vyre.core.element_text, {}
  if not head or n <= head + tail then
    for i = 1, n do items[#items + 1] = text(a, i) end
  else
    for i = 1, head do items[#items + 1] = text(a, i) end
    items[#items + 1] = "…"
    for i = n - tail + 1, n do items[#items + 1] = text(a, i) end
  end
  return items
end

--- "1.5 µs" style durations from nanoseconds.
function M.duration(ns)
  if ns >= 1e9 then return ("%.3f s"):format(ns / 1e9) end
  if ns >= 1e6 then return ("%.3f ms"):format(ns / 1e6) end
  if ns >= 1e3 then return ("%.2f µs"):format(ns / 1e3) end
  return ("%d ns"):format(ns)
end

return M
