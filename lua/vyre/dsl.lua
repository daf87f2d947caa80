-- vyre.dsl — builds Programs from Lua functions (ARCHITECTURE.md §7). Expression
-- objects are Lua tables carrying their canonical text and static type; the
-- builder collects statement text, and the finished text goes through the same
-- parser and validator as hand-written programs, so the DSL adds no semantics.
local core = require("vyre.core")
local Err = require("vyre.errors")

local M = {}

local THIS_SOURCE = debug.getinfo(1, "S").source


-- "file:line" of the first stack frame outside this file: where the user built a node.
local function site()
  local lvl = 2
  while true do
    local info = debug.getinfo(lvl, "Sl")
    if not info then return "?" end
    if info.source ~= THIS_SOURCE and info.what ~= "C" then
      return info.short_src .. ":" .. tostring(info.currentline)
    end
    lvl = lvl + 1
  end
end

-- The program whose body is running (vyre.program bodies may nest), so expressions can
-- record comparisons that nothing uses yet.
local building = {}

-- `where` is a public function ("vyre.buffer") or an operation inside a
-- vyre.program body ("mul", "k:let"), which is reported under vyre.program.
-- The error carries `op` (where) and `reason` (what, without the Fix), so vyre.lib can
-- re-word a DSL error without reading its text.
local function fail(where, fmt, ...)
  local prefix = where:find("^vyre%.") and where or ("vyre.program: " .. where)
  local text = string.format(fmt, ...)
  local what = Err.split(text)
  Err.raise_outside("dsl.lua", "arg", prefix .. ": " .. text, true,
    { op = where, reason = (what:gsub("%.$", "")) })
end

-- Types, operand classes, reserved names and atomic ops come from libvyre (the
-- tables behind the validator, docs/OPS.md), so the DSL cannot drift from it.
local function set_of(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

-- "a, b or c"
local function or_list(list)
  if #list < 2 then return list[1] or "" end
  return table.concat(list, ", ", 1, #list - 1) .. " or " .. list[#list]
end

local TYPE_LIST = core.types()
local TYPES = set_of(TYPE_LIST)
local IS_FLOAT = set_of(core.op_classes().FLOAT)
local RESERVED = set_of(core.reserved_names())
local ATOMIC_LIST = core.atomic_ops()
local ATOMIC_OPS = set_of(ATOMIC_LIST)
-- Literal ranges that a Lua integer can exceed (64-bit types take every Lua integer).
local INT_RANGE = { i32 = { -2147483648, 2147483647 }, u32 = { 0, 4294967295 } }

local function check_type(t, where)
  if not TYPES[t] then
    fail(where, "unknown type %s. Fix: use one of %s", tostring(t), table.concat(TYPE_LIST, ", "))
  end
  return t
end

-- What the validator calls the thing each checking function names.
local NAME_WHAT = { ["vyre.buffer"] = "buffer", ["vyre.shared"] = "shared array",
  ["vyre.param"] = "param", ["vyre.worklist"] = "worklist", ["vyre.program"] = "program",
  ["k:let"] = "variable",
  ["k:var"] = "variable", ["k:for_"] = "loop variable" }

local function check_name(name, where)
  if type(name) ~= "string" or not name:match("^[A-Za-z_][A-Za-z0-9_]*$") or #name > 64 then
    fail(where, "%s is not a valid name. Fix: use an identifier [A-Za-z_][A-Za-z0-9_]* of "
      .. "at most 64 characters that is not a type name or true/false/inf/nan", tostring(name))
  end
  if RESERVED[name] then
    -- the validator's words for its "reserved-name" problem
    fail(where, "'%s' is reserved (literal or type name) and cannot name a %s. Fix: rename it, "
      .. "e.g. to 'v_' followed by the name", name, NAME_WHAT[where] or "name")
  end
  return name
end

-- Literals --------------------------------------------------------------------

local function float_text(t, v)
  if t == "f32" then v = string.unpack("<f", string.pack("<f", v)) end
  if v ~= v then
    if t == "f32" then
      return string.format("nan:0x%08xf32", string.unpack("<I4", string.pack("<f", v)))
    end
    return string.format("nan:0x%016xf64", string.unpack("<i8", string.pack("<d", v)))
  end
  if v == math.huge then return "inf" .. t end
  if v == -math.huge then return "-inf" .. t end
  return string.format("%a", v) .. t
end

--- Canonical literal text of Lua value v as type t; `where` names the operation.
local function lit_text(t, v, where)
  if t == "bool" then
    if type(v) ~= "boolean" then
      fail(where, "%s cannot be a bool literal. Fix: use true or false", tostring(v))
    end
    return tostring(v)
  end
  if type(v) ~= "number" then
    fail(where, "%s (a %s) cannot be a %s literal. Fix: pass a number or a vyre expression",
      tostring(v), type(v), t)
  end
  if IS_FLOAT[t] then return float_text(t, v) end
  local i = math.tointeger(v)
  if i == nil and t == "u64" and v >= 2^63 and v < 2^64 and v == math.floor(v) then
    i = math.tointeger(v - 2^64)
  end
  if i == nil then
    fail(where, "%s is not an exact integer (or is out of range), so it cannot be a %s "
      .. "literal. Fix: round it (math.floor) or make the other operand a float", tostring(v), t)
  end
  local r = INT_RANGE[t]
  if r and (i < r[1] or i > r[2]) then
    fail(where, "%d is out of range for a %s literal (%d..%d). Fix: use a wider type or a "
      .. "value in range", i, t, r[1], r[2])
  end
  if t == "u64" and i < 0 then return string.format("0x%xu64", i) end
  return string.format("%d%s", i, t)
end

-- Expressions -------------------------------------------------------------------

local Expr = { __name = "vyre.Expr" }
local methods = {}
local Pending = { __name = "vyre.PendingAtomic" }

local function E(t, text) return setmetatable({ type = t, text = text }, Expr) end
local function is_expr(x) return getmetatable(x) == Expr end
M.is_expr = is_expr

-- Lua's ==, ~=, not, and, or cannot be overloaded to build expressions: they give plain
-- booleans, or quietly keep only one operand. So no plain boolean is ever taken as an
-- expression, and a comparison built but never used is an error (M.program).
local function plain_boolean(x, where)
  fail(where, "got the plain Lua boolean %s where an expression is expected: Lua's ==, "
    .. "~=, not, and, or do not build vyre expressions (they give a boolean or drop an "
    .. "operand). Fix: write a:eq(b), a:ne(b), c:lnot(), a:land(b), a:lor(b); for a "
    .. "constant, vyre.lit('bool', %s)", tostring(x), tostring(x))
end

local function coerce(x, t, where)
  if is_expr(x) then
    rawset(x, "_used", true)
    return x
  end
  if type(x) == "boolean" then plain_boolean(x, where) end
  if getmetatable(x) == Pending then
    fail(where, "the result of k:atomic is not a value until it is bound. Fix: "
      .. "local old = k:let('old', k:atomic(...)) and use old")
  end
  if t == nil then
    local guess = math.type(x) == "float" and "'f32', %s) (or 'f64')"
      or math.type(x) == "integer" and "'u32', %s) (or 'i32', 'i64', 'u64')"
      or "'u32', %s) (or another type)"
    fail(where, "cannot tell the type of the plain Lua value %s. Fix: make it typed with "
      .. "vyre.lit(" .. guess, tostring(x), tostring(x))
  end
  return E(t, lit_text(t, x, where))
end

-- The operator table (core.ops(): name, arity, operand class, result rule, DSL
-- method and metamethods of every op), in the validator's order.
local OPS = core.ops()

local function pending_misuse()
  fail("atomic", "the result of k:atomic is not a value until it is bound. Fix: "
    .. "local old = k:let('old', k:atomic(...)) and use old")
end
for _, mm in ipairs({ "__pow", "__lt", "__le", "__index" }) do Pending[mm] = pending_misuse end
for _, op in ipairs(OPS) do
  for _, mm in ipairs(op.metamethods) do Pending[mm] = pending_misuse end
end

-- Records a bool result (a comparison, land, lor, lnot) made inside a program body, with
-- the user's line, so M.program can report one that no statement or expression used.
local function track(e)
  local k = building[#building]
  if k and e.type == "bool" then
    local made = rawget(k, "_bools")
    made[#made + 1] = { expr = e, site = site() }
  end
  return e
end

local function type_of(...)
  for i = 1, select("#", ...) do
    local x = select(i, ...)
    if is_expr(x) then return x.type end
  end
  return nil
end

-- op is a row of OPS. Plain Lua values take the other operand's type; with none,
-- an op over bools (land, lor) still knows its operands are bool.
local function binop(op, a, b)
  local name = op.name
  local t = type_of(a, b)
  if t == nil and op.operands == "BOOL" then t = "bool" end
  a, b = coerce(a, t, name), coerce(b, t, name)
  if a.type ~= b.type then
    -- the classic: a loop over plain numbers is u32, met by an i32 (k:for_)
    local loop = rawget(a, "_default_loop") or rawget(b, "_default_loop")
    fail(name, "operand types differ (%s and %s); vyre has no implicit conversions. Fix: "
      .. "convert one side with vyre.cast('%s', e)%s", a.type, b.type, a.type, loop and
      (", or type the loop: %s is u32 because its bounds are plain numbers; "
      .. "k:for_('%s', '%s', from, to, fn)"):format(loop, loop, a.type == "u32" and b.type
      or a.type) or "")
  end
  local rt = op.result == "BOOL" and "bool" or a.type
  return track(E(rt, "(" .. name .. " " .. a.text .. " " .. b.text .. ")"))
end

local function unop(op, a)
  a = coerce(a, nil, op.name)
  local rt = op.result == "BOOL" and "bool" or a.type
  return track(E(rt, "(" .. op.name .. " " .. a.text .. ")"))
end

-- Each op becomes its method (e:band(x) for and, e:bnot() for not: Lua keywords) and
-- its Lua operators (+ for add, // and / for div, unary - for neg, ~ for not, ...).
for _, op in ipairs(OPS) do
  local build
  if op.arity == 2 then
    build = function(a, b) return binop(op, a, b) end
  else
    build = function(a) return unop(op, a) end
  end
  methods[op.method] = build
  for _, mm in ipairs(op.metamethods) do Expr[mm] = build end
end

-- Subgroup ops (docs/SUBGROUPS.md). A lane, mask or delta given as a Lua number is a
-- u32 literal; ballot/all/any take a bool expression, and all/any give one, tracked like
-- a comparison so that one built but never used is reported.
local SUBGROUP_OPS = { "add", "min", "max", "and", "or", "xor" }
local IS_SUBGROUP_OP = set_of(SUBGROUP_OPS)

local function subgroup_value(v, where)
  if not is_expr(v) then
    coerce(v, nil, where) -- raises the right error for plain values and pending atomics
  end
  rawset(v, "_used", true)
  return v
end

for _, name in ipairs({ "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down" }) do
  methods[name] = function(v, lane)
    v = subgroup_value(v, name)
    lane = coerce(lane, "u32", name)
    return E(v.type, "(" .. name .. " " .. v.text .. " " .. lane.text .. ")")
  end
end

for _, name in ipairs({ "subgroup_reduce", "subgroup_scan" }) do
  methods[name] = function(v, op)
    v = subgroup_value(v, name)
    if not IS_SUBGROUP_OP[op] then
      fail(name, "unknown combining op %s. Fix: use %s, e.g. v:%s('add')", tostring(op),
        or_list(SUBGROUP_OPS), name)
    end
    return E(v.type, "(" .. name .. " " .. op .. " " .. v.text .. ")")
  end
end

-- v:match_any(): the u32 mask of the lanes whose v has the same bits as this lane's.
function methods.match_any(v)
  v = subgroup_value(v, "match_any")
  return E("u32", "(match_any " .. v.text .. ")")
end

function methods.subgroup_all(c)
  return track(E("bool", "(subgroup_all " .. coerce(c, "bool", "subgroup_all").text .. ")"))
end

function methods.subgroup_any(c)
  return track(E("bool", "(subgroup_any " .. coerce(c, "bool", "subgroup_any").text .. ")"))
end

function methods.cast(a, t) return M.cast(t, a) end
function methods.bitcast(a, t) return M.bitcast(t, a) end

--- v:set(e) on a variable made by k:let / k:var.
function methods.set(v, e)
  local k = rawget(v, "_k")
  if not k then
    fail("set", "%s is not a variable. Fix: make one with k:var(name, init)", v.text)
  end
  k:_emit("(set " .. v.text .. " " .. coerce(e, v.type, "set").text .. ")")
end

Expr.__index = methods
Expr.__tostring = function(e) return e.text end
Expr.__pow = function() fail("^", "there is no power operator. Fix: multiply, or use exp/log") end
local function no_compare()
  fail("comparison", "Lua turns < <= > >= into booleans, so they cannot build expressions. "
    .. "Fix: use a:lt(b), a:le(b), a:gt(b), a:ge(b), a:eq(b), a:ne(b)")
end
Expr.__lt, Expr.__le = no_compare, no_compare

--- vyre.lit(type, value) -> a typed literal expression.
function M.lit(t, v)
  check_type(t, "vyre.lit")
  return E(t, lit_text(t, v, "vyre.lit"))
end

function M.cast(t, e)
  check_type(t, "cast")
  e = coerce(e, t, "cast")
  return E(t, "(cast " .. t .. " " .. e.text .. ")")
end

function M.bitcast(t, e)
  check_type(t, "bitcast")
  e = coerce(e, nil, "bitcast")
  return E(t, "(bitcast " .. t .. " " .. e.text .. ")")
end

function M.select(c, a, b)
  c = coerce(c, "bool", "select")
  local t = type_of(a, b)
  a, b = coerce(a, t, "select"), coerce(b, t, "select")
  if a.type ~= b.type then
    fail("select", "the two arms have different types (%s and %s). Fix: cast one arm",
      a.type, b.type)
  end
  return E(a.type, "(select " .. c.text .. " " .. a.text .. " " .. b.text .. ")")
end

function M.fma(a, b, c)
  local t = type_of(a, b, c)
  a, b, c = coerce(a, t, "fma"), coerce(b, t, "fma"), coerce(c, t, "fma")
  return E(t, "(fma " .. a.text .. " " .. b.text .. " " .. c.text .. ")")
end

-- Declarations -------------------------------------------------------------------

local ACCESS = { read = true, write = true, read_write = true }

--- vyre.buffer(name, type, access [, count]); access defaults to "read_write".
function M.buffer(name, t, access, count)
  check_name(name, "vyre.buffer")
  check_type(t, "vyre.buffer")
  access = access or "read_write"
  if not ACCESS[access] then
    fail("vyre.buffer", "access %s is not read, write or read_write. Fix: e.g. "
      .. "vyre.buffer('%s', '%s', 'read')", tostring(access), name, t)
  end
  if count ~= nil and (math.type(count) ~= "integer" or count < 0) then
    fail("vyre.buffer", "count must be a non-negative integer (got %s). Fix: e.g. "
      .. "vyre.buffer('%s', '%s', '%s', 1024), or leave it out to size at run time",
      tostring(count), name, t, access)
  end
  return { kind = "buffer", name = name, type = t, access = access, count = count or 0 }
end

function M.shared(name, t, count)
  check_name(name, "vyre.shared")
  check_type(t, "vyre.shared")
  if math.type(count) ~= "integer" or count < 1 then
    fail("vyre.shared", "count must be a positive integer (got %s). Fix: "
      .. "vyre.shared('%s', '%s', 256)", tostring(count), name, t)
  end
  return { kind = "shared", name = name, type = t, count = count }
end

function M.param(name, t)
  check_name(name, "vyre.param")
  check_type(t, "vyre.param")
  return { kind = "param", name = name, type = t }
end

--- vyre.worklist(name, type): a device worklist (ARCHITECTURE.md §2). In the body
--- k.NAME[i] reads current item i, k.NAME:len() counts them and k.NAME:push(v) appends v
--- to the next round's items; the host passes a be:worklist(type, capacity).
function M.worklist(name, t)
  check_name(name, "vyre.worklist")
  check_type(t, "vyre.worklist")
  if t == "bool" then
    fail("vyre.worklist", "worklist items cannot be bool. Fix: vyre.worklist('%s', 'u32') with "
      .. "0/1 items", name)
  end
  return { kind = "worklist", name = name, type = t }
end

local function decl_text(d)
  if d.kind == "buffer" then
    return string.format("(buffer %s %s %s%s)", d.name, d.type, d.access,
      d.count > 0 and (" " .. d.count) or "")
  elseif d.kind == "shared" then
    return string.format("(shared %s %s %d)", d.name, d.type, d.count)
  elseif d.kind == "worklist" then
    return string.format("(worklist %s %s)", d.name, d.type)
  end
  return string.format("(param %s %s)", d.name, d.type)
end

-- Buffer handles: k.buf[i] loads, k.buf[i] = v stores, k.buf:len() -------------

local Handle = { __name = "vyre.BufferHandle" }
local handle_methods = {}

function handle_methods.len(h) return E("u32", "(len " .. h._decl.name .. ")") end
function handle_methods.load(h, i) return h._k:load(h, i) end
function handle_methods.store(h, i, v) return h._k:store(h, i, v) end
--- k.NAME:push(v) on a worklist: appends v (of the item type) to the next round's items.
function handle_methods.push(h, v) return h._k:push(h, v) end

Handle.__index = function(h, key)
  if type(key) == "string" then
    local m = handle_methods[key]
    if m then return m end
    fail(h._decl.name, "buffer handles have no field '%s'. Fix: index with an expression "
      .. "(k.%s[i]) or call :len()", key, h._decl.name)
  end
  return h._k:load(h, key)
end
Handle.__newindex = function(h, key, v)
  if h._decl.kind == "worklist" then
    fail(h._decl.name, "a worklist's current items are read-only. Fix: append with "
      .. "k.%s:push(v)", h._decl.name)
  end
  h._k:store(h, key, v)
end
Handle.__tostring = function(h) return "vyre.BufferHandle(" .. h._decl.name .. ")" end

-- The builder ---------------------------------------------------------------------

local Builder = { __name = "vyre.ProgramBuilder" }
local B = {}

local BUILTINS = { gid = true, lid = true, wgid = true, wgsize = true, ngroups = true }

local function builtin_proxy(name)
  return setmetatable({}, { __index = function(_, axis)
    if axis ~= "x" and axis ~= "y" and axis ~= "z" then
      fail(name, "axis must be x, y or z (got %s). Fix: k.%s.x", tostring(axis), name)
    end
    return E("u32", "(" .. name .. " " .. axis .. ")")
  end })
end

Builder.__index = function(k, key)
  local m = B[key]
  if m then return m end
  if BUILTINS[key] then return builtin_proxy(key) end
  local h = rawget(k, "_handles")[key]
  if h then return h end
  fail("k." .. tostring(key), "program '%s' has no declaration '%s'. Fix: declare it with "
    .. "vyre.buffer/vyre.shared/vyre.param/vyre.worklist", rawget(k, "_name"), tostring(key))
end

-- Appends a statement to the open block, with the user's line and, for if/for, the
-- blocks inside it (so a validator path like body[2].then[0] maps back to a line).
function B:_emit(text, inner)
  local blk = self._stack[#self._stack]
  blk[#blk + 1] = text
  blk.sites[#blk] = site()
  blk.inner[#blk] = inner
  return #blk, blk
end

-- Names are global to a program's text, but in the DSL they are scoped like Lua locals:
-- a name already taken (a declaration, another let, a sibling loop's variable) gets a
-- suffix. Code refers to variables through the objects k:let/k:for_ return, so helpers
-- that each k:let("tmp", ...) compose.
local function unique_name(k, name)
  local taken = rawget(k, "_names")
  local n, candidate = 1, name
  while taken[candidate] do
    n = n + 1
    local suffix = "_" .. n
    candidate = name:sub(1, 64 - #suffix) .. suffix
  end
  taken[candidate] = true
  return candidate
end

local function buf_decl(k, buf, where)
  if getmetatable(buf) == Handle then return buf._decl end
  if type(buf) == "string" then
    local h = rawget(k, "_handles")[buf]
    if h and getmetatable(h) == Handle then return h._decl end
  end
  fail(where, "%s is not a buffer, shared array or worklist of this program. Fix: pass k.NAME",
    tostring(buf))
end

local function index_expr(i, where)
  return coerce(i, type_of(i) or "u32", where)
end

function B:load(buf, i)
  local d = buf_decl(self, buf, "load")
  return E(d.type, "(load " .. d.name .. " " .. index_expr(i, "load").text .. ")")
end

function B:store(buf, i, v)
  local d = buf_decl(self, buf, "store")
  self:_emit("(store " .. d.name .. " " .. index_expr(i, "store").text .. " "
    .. coerce(v, d.type, "store").text .. ")")
end

--- k:push(wl, v): appends v to worklist wl's next-round items (same as k.wl:push(v)).
function B:push(wl, v)
  local d = buf_decl(self, wl, "push")
  if d.kind ~= "worklist" then
    fail("k:push", "'%s' is a %s, not a worklist. Fix: store with k.%s[i] = v, or declare "
      .. "vyre.worklist('%s', '%s')", d.name, d.kind, d.name, d.name, d.type)
  end
  self:_emit("(push " .. d.name .. " " .. coerce(v, d.type, "push").text .. ")")
end

function B:len(buf)
  return E("u32", "(len " .. buf_decl(self, buf, "len").name .. ")")
end

local function make_var(k, t, name)
  return setmetatable({ type = t, text = name, _k = k }, Expr)
end

local function auto_name(k)
  k._auto = k._auto + 1
  return "_v" .. k._auto
end

-- The DSL's own fix for a validator problem, chosen by the problem's stable code and its
-- structured cast (the type a conversion fixes it with), so the validator's wording, which
-- names text-format syntax, is never parsed. A code not listed keeps the validator's fix.
local DSL_FIX = {
  ["workgroup-size"] = "give every axis at least 1 and at most 1024 invocations in all, "
    .. "e.g. {workgroup = 256}",
  ["undeclared-name"] = "declare it first: vyre.buffer, vyre.shared or vyre.param in the spec "
    .. "table, or k:let('name', e) in the body",
  ["not-a-buffer"] = "append to a worklist with k.name:push(v); read it with k.name[i] and "
    .. "k.name:len()",
  ["not-a-value"] = "read an element with k.name[i] or the count with k.name:len()",
  ["index-type"] = "wrap the index in vyre.cast('%s', e)",
  ["lane-type"] = "wrap it in vyre.cast('%s', e)",
  ["loop-type"] = "loop bounds are i32, u32, i64 or u64: use vyre.cast('%s', e)",
  ["type-mismatch"] = "convert the other operand with vyre.cast('%s', e) so the types agree",
  ["condition-type"] = "compare it first, e.g. c:ne(0)",
  ["set-not-variable"] = "copy it into a variable with k:let('name', e) and set that, or store "
    .. "into memory with k.name[i] = v",
  ["converge-flag"] = "declare the flag as vyre.buffer('name', 'u32', 'read_write') (u32, i32 "
    .. "or bool, access write or read_write): the loop zeroes flag[0] each round",
  ["operand-type"] = "give the operation operands of the kind it takes: vyre.cast('type', e) "
    .. "converts a value, vyre.bitcast('u32', x) reaches a float's bits, x:ne(0) makes a "
    .. "bool, and a * b + c is the integer form of vyre.fma",
}

local function dsl_fix(pr)
  local fix = DSL_FIX[pr.code]
  if pr.cast and (not fix or not fix:find("%s", 1, true)) then
    return string.format("convert it with vyre.cast('%s', e)", pr.cast)
  end
  if not fix then return pr.fix end
  return (fix:gsub("%%s", pr.cast or "type"))
end

-- The user's line of the statement a validator path (body[2].then[0].value) names.
local function path_site(root, path, fallback)
  local blk, at = root, fallback
  local after_stmt = false
  for seg, idx in path:gmatch("(%a+)%[(%d+)%]") do
    if seg == "decls" then return fallback end
    if after_stmt then
      local inner = blk.inner[at.pos] or {}
      blk = inner[seg] or inner.body
      if not blk then return at.site end
    end
    local pos = tonumber(idx) + 1
    at = { site = blk.sites[pos] or at.site, pos = pos }
    after_stmt = true
  end
  return at.site or fallback
end

-- let/var: binds e (or the pending atomic just emitted) to a new variable.
local function bind_var(k, name, e, where)
  if name ~= nil and type(name) ~= "string" then
    name, e = nil, name
  end
  name = unique_name(k, check_name(name or auto_name(k), where))
  if getmetatable(e) == Pending then
    local blk = k._stack[#k._stack]
    if e.block ~= blk or e.pos ~= #blk then
      fail(where, "an atomic's old value must be bound right where the atomic is made. Fix: "
        .. "k:let('%s', k:atomic(...)) in one statement", name)
    end
    blk[e.pos] = "(let " .. name .. " " .. e.text .. ")"
    e.block = false
    return make_var(k, e.type, name)
  end
  e = coerce(e, nil, where)
  k:_emit("(let " .. name .. " " .. e.text .. ")")
  return make_var(k, e.type, name)
end

--- k:let(name, e) -> variable expression (also k:let(e) with a generated name).
function B:let(name, e) return bind_var(self, name, e, "k:let") end
--- k:var(name, init) -> variable with :set(e).
function B:var(name, e) return bind_var(self, name, e, "k:var") end

--- k:set(v, e): the same as v:set(e) (the builder is not needed to assign).
function B.set(_, v, e) return methods.set(v, e) end

local function block(k, fn, ...)
  local blk = { sites = {}, inner = {} }
  k._stack[#k._stack + 1] = blk
  if fn ~= nil then
    if type(fn) ~= "function" then
      k._stack[#k._stack] = nil
      fail("block", "expected a function (got %s). Fix: pass function() ... end", type(fn))
    end
    fn(...)
  end
  k._stack[#k._stack] = nil
  return table.concat(blk, " "), blk
end

--- k:when(cond, then_fn [, else_fn])
function B:when(cond, then_fn, else_fn)
  cond = coerce(cond, "bool", "k:when")
  if cond.type ~= "bool" then
    fail("k:when", "the condition %s is %s, not bool. Fix: compare it, e.g. x:ne(0)",
      cond.text, cond.type)
  end
  local t, tblk = block(self, then_fn, self)
  local text = "(if " .. cond.text .. " (then " .. t .. ")"
  local eblk
  if else_fn ~= nil then
    local e
    e, eblk = block(self, else_fn, self)
    if e ~= "" then text = text .. " (else " .. e .. ")" end
  end
  self:_emit(text .. ")", { ["then"] = tblk, ["else"] = eblk })
end

local LOOP_TYPES = { i32 = true, u32 = true, i64 = true, u64 = true }

--- k:for_(var, [type,] from, to [, step], fn): half-open loop; fn receives the loop
--- variable. Its type: the type name given second, else the type of a typed bound (an
--- expression or vyre.lit), else u32 (plain Lua numbers). Typed bounds of another type
--- than the loop's raise here, at the user's line, not later at a use of the variable.
function B:for_(var, from, to, step, fn, extra)
  local t
  if type(from) == "string" then
    t, from, to, step, fn = from, to, step, fn, extra
    if not LOOP_TYPES[t] then
      fail("k:for_", "the loop type %s is not an integer type. Fix: k:for_(name, 'i32', "
        .. "from, to, fn) with one of i32, u32, i64, u64", t)
    end
  end
  if fn == nil and type(step) == "function" then step, fn = nil, step end
  var = unique_name(self, check_name(var, "k:for_"))
  local why = t and "the type given" or "the first typed bound's type"
  local default = t == nil and type_of(from, to, step) == nil
  t = t or type_of(from, to, step) or "u32"
  if not LOOP_TYPES[t] then
    fail("k:for_", "the loop bounds are %s, not an integer. Fix: vyre.cast('i32', ...) "
      .. "them, or k:for_(name, 'i32', from, to, fn)", t)
  end
  local parts = { from = from, to = to, step = step }
  for _, part in ipairs({ "from", "to", "step" }) do
    local x = parts[part]
    if is_expr(x) and x.type ~= t then
      fail("k:for_", "the loop %s is %s but the loop variable is %s (%s). Fix: "
        .. "vyre.cast('%s', %s), or k:for_(name, '%s', from, to, fn) for a %s loop", part,
        x.type, t, why, t, part, x.type, x.type)
    end
  end
  from, to = coerce(from, t, "k:for_"), coerce(to, t, "k:for_")
  step = coerce(step == nil and 1 or step, t, "k:for_")
  local v = E(t, var)
  if default then rawset(v, "_default_loop", var) end -- named in a type mismatch (binop)
  local body, bblk = block(self, fn, v, self)
  self:_emit("(for " .. var .. " " .. from.text .. " " .. to.text .. " " .. step.text
    .. (body ~= "" and (" " .. body) or "") .. ")", { body = bblk })
end

--- k:atomic(op, buf, i, v [, desired]) emits the atomic; k:let(name, k:atomic(...))
--- binds its old value. For cas: k:atomic("cas", buf, i, expected, desired).
function B:atomic(op, buf, i, v, desired)
  if not ATOMIC_OPS[op] then
    fail("k:atomic", "unknown atomic op %s. Fix: use %s", tostring(op), or_list(ATOMIC_LIST))
  end
  local d = buf_decl(self, buf, "k:atomic")
  local text = "(atomic " .. op .. " " .. d.name .. " " .. index_expr(i, "k:atomic").text
    .. " " .. coerce(v, d.type, "k:atomic").text
  if op == "cas" then
    if desired == nil then
      fail("k:atomic", "cas needs an expected and a desired value. Fix: "
        .. "k:atomic('cas', buf, i, expected, desired)")
    end
    text = text .. " " .. coerce(desired, d.type, "k:atomic").text
  end
  text = text .. ")"
  local pos, blk = self:_emit(text)
  return setmetatable({ type = d.type, text = text, block = blk, pos = pos }, Pending)
end

--- k:subgroup_size() (32), k:subgroup_lane(), k:ballot(c): docs/SUBGROUPS.md.
function B.subgroup_size() return E("u32", "(subgroup_size)") end
function B.subgroup_lane() return E("u32", "(subgroup_lane)") end
function B.ballot(_, c) return E("u32", "(ballot " .. coerce(c, "bool", "k:ballot").text .. ")") end

function B:barrier() self:_emit("(barrier)") end
--- k:grid_barrier(): every invocation of the dispatch meets here (ARCHITECTURE.md §3);
--- variables declared before it are not visible after it.
function B:grid_barrier() self:_emit("(grid_barrier)") end
--- k:converge(flag, max, fn): FLAG[0] = 0, then rounds of fn's statements while a round
--- leaves flag[0] non-zero and fewer than max (u32) rounds ran. On a worklist
--- (k:converge(k.frontier, max, fn)) each round ends by advancing it, and the loop stops
--- after a round that pushed nothing (or overflowed it, or max rounds).
function B:converge(flag, max, fn)
  local d = buf_decl(self, flag, "k:converge")
  max = coerce(max, "u32", "k:converge")
  local body, bblk = block(self, fn, self)
  self:_emit("(converge " .. d.name .. " " .. max.text
    .. (body ~= "" and (" " .. body) or "") .. ")", { body = bblk })
end
function B:break_() self:_emit("(break)") end
function B:return_() self:_emit("(return)") end

-- Programs ------------------------------------------------------------------------

local function workgroup_text(wg)
  if wg == nil then wg = 1 end
  if type(wg) == "number" then wg = { wg } end
  if type(wg) ~= "table" then
    fail("vyre.program", "workgroup must be a number or {x, y, z}. Fix: {workgroup = 256}")
  end
  local parts = {}
  for a = 1, 3 do
    local v = wg[a] or wg[({ "x", "y", "z" })[a]] or 1
    if math.type(v) ~= "integer" or v < 1 then
      fail("vyre.program", "workgroup axis %d must be a positive integer (got %s). Fix: "
        .. "{workgroup = {256, 1, 1}}", a, tostring(v))
    end
    parts[a] = tostring(v)
  end
  return "(workgroup " .. table.concat(parts, " ") .. ")"
end

--- vyre.program(name, {workgroup = 256 | {x, y, z}, decl...}, function(k) ... end)
--- -> validated vyre.Program; raises listing every problem if it is invalid.
function M.program(name, spec, fn)
  check_name(name, "vyre.program")
  if type(spec) ~= "table" then
    fail("vyre.program", "second argument must be a table {workgroup = ..., decls...}. Fix: "
      .. "vyre.program('%s', {workgroup = 64, vyre.buffer(...)}, function(k) ... end)", name)
  end
  if type(fn) ~= "function" then
    fail("vyre.program", "third argument must be the body function(k). Fix: pass "
      .. "function(k) ... end")
  end
  for key in pairs(spec) do
    if math.type(key) ~= "integer" and key ~= "workgroup" then
      fail("vyre.program", "unknown spec key '%s'. Fix: the spec table takes workgroup = ... "
        .. "and the declarations as a list: {workgroup = 64, vyre.buffer(...), ...}",
        tostring(key))
    end
  end
  local k = setmetatable({ _name = name, _handles = {}, _stack = {}, _auto = 0, _names = {},
    _bools = {} }, Builder)
  local program_site = site()
  local lines = { "(program " .. name .. " " .. workgroup_text(spec.workgroup) }
  for _, d in ipairs(spec) do
    if type(d) ~= "table" or not d.kind then
      fail("vyre.program", "declarations must come from vyre.buffer, vyre.shared, vyre.param "
        .. "or vyre.worklist "
        .. "(got %s). Fix: list them in the spec table, e.g. {workgroup = 64, "
        .. "vyre.buffer('x', 'f32', 'read')}", tostring(d))
    end
    lines[#lines + 1] = "  " .. decl_text(d)
    k._names[d.name] = true
    if d.kind == "param" then
      k._handles[d.name] = E(d.type, d.name)
    else
      k._handles[d.name] = setmetatable({ _k = k, _decl = d }, Handle)
    end
  end
  building[#building + 1] = k
  local ran, body, root = pcall(block, k, fn, k)
  building[#building] = nil
  if not ran then error(body, 0) end
  for _, made in ipairs(k._bools) do
    if not rawget(made.expr, "_used") then
      Err.raise("arg", string.format("vyre.program: %s: the condition %s is built but never "
        .. "used: Lua's 'and'/'or' keep only one operand (a and b is b) and drop the other. "
        .. "Fix: combine conditions with a:land(b) or a:lor(b)", made.site, made.expr.text), 0)
    end
  end
  if body ~= "" then lines[#lines + 1] = "  " .. body end
  local text = table.concat(lines, "\n") .. ")\n"
  local ok, p = pcall(core.parse, text)
  if not ok then
    Err.raise("internal", "vyre.program: the generated text does not parse (" .. tostring(p)
      .. "). Text:\n" .. text, 2)
  end
  local valid, problems = core.validate(p)
  if not valid then
    -- The first problem, at the line that built the statement, with a DSL-style fix.
    local pr = problems[1]
    local more = #problems > 1 and string.format(" (%d more problems in this program; the "
      .. "first may cause the others)", #problems - 1) or ""
    local at = path_site(root, pr.path, program_site)
    Err.raise("validate", string.format("vyre.program: %s: %s%s. Fix: %s", at,
      pr.message:gsub("%.$", ""), more, dsl_fix(pr)), 0, { site = at, problems = problems })
  end
  return p
end

-- The public methods of the builder k and of its buffer handles (k.buf), as a type's
-- metatable shows them to vyre.help (help.LUA_TYPES): help(k.converge) finds its entry,
-- and spec/62 fails on a method without one. _emit and other "_" names are internal.
do
  local public = {}
  for name, fn in pairs(B) do
    if not name:find("^_") then public[name] = fn end
  end
  M.Builder = { __index = public }
  M.BufferHandle = { __index = handle_methods }
end

return M
