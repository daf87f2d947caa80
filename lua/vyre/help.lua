-- vyre.help — help text for every public function, method, type and DSL operator, and
-- the lookup behind vyre.help(x). The texts are tables of strings (vyre/help/api.lua
-- for the module and the userdata types, vyre/help/dsl.lua for the DSL and vyre.lib,
-- vyre/help/egraph.lua for vyre.egraph, vyre/help/planning.lua for the policy,
-- profiles, plan view and planners);
-- operator entries are completed from core.ops() and the _timed variants of vyre.lib
-- from their plain function. spec/62_help_spec.lua checks that every public function
-- has an entry and that every entry names something that exists.
--   vyre.help()             topics          vyre.help(vyre.parse)   a function
--   vyre.help(be)           its type        vyre.help("Buffer:upload" | "upload" | "sqrt")
local core = require("vyre.core")
local api = require("vyre.help.api")
local dsl = require("vyre.help.dsl")
local egraph = require("vyre.help.egraph")
local planning = require("vyre.help.planning")
local multigpu = require("vyre.help.multigpu")

local H = {}

-- The userdata and DSL metatable names, and the help key of each.
H.TYPES = {
  ["vyre.Program"] = "Program", ["vyre.Array"] = "Array", ["vyre.Backend"] = "Backend",
  ["vyre.Buffer"] = "Buffer", ["vyre.Kernel"] = "Kernel", ["vyre.Launch"] = "Launch",
  ["vyre.Graph"] = "Graph", ["vyre.Expr"] = "Expr", ["vyre.ProgramBuilder"] = "Builder",
  ["vyre.BufferHandle"] = "Builder", ["vyre.EGraph"] = "EGraph", ["vyre.Plan"] = "Plan",
  ["vyre.Group"] = "Group", ["vyre.Collective"] = "Collective",
  ["vyre.Worklist"] = "Worklist",
}

-- Types whose metatable a Lua module makes, not the C module: the module and the field
-- that holds it (the registry holds only the C types, each with __gc; spec/09).
H.LUA_TYPES = { ["vyre.EGraph"] = { "vyre.egraph", "EGraph" },
  ["vyre.ProgramBuilder"] = { "vyre.dsl", "Builder" },
  ["vyre.BufferHandle"] = { "vyre.dsl", "BufferHandle" },
  ["vyre.Plan"] = { "vyre.plan_view", "metatable" } }

-- The modules whose help lists their functions, and that vyre.help(module) knows.
H.MODULES = { "vyre.cuda", "vyre.reference", "vyre.lib", "vyre.egraph", "vyre.policy",
  "vyre.profiles", "vyre.plan_view" }
for _, n in ipairs({ "capability", "compaction", "convergence", "fusion", "multiquery",
  "occupancy", "passes", "session", "speedup_gate", "topology", "waves", "workqueue" }) do
  H.MODULES[#H.MODULES + 1] = "vyre.planners." .. n
end
local is_module = {}
for _, m in ipairs(H.MODULES) do is_module[m] = true end

local cache

local function op_entry(op)
  local desc = dsl.OPS[op.name]
  if not desc then return nil end
  local call = op.arity == 2 and ("a:%s(b) -> Expr"):format(op.method)
    or ("a:%s() -> Expr"):format(op.method)
  local sym = { __add = "+", __sub = "-", __mul = "*", __div = "/", __idiv = "//",
    __mod = "%", __band = "&", __bor = "|", __bxor = "~", __shl = "<<", __shr = ">>",
    __unm = "-a", __bnot = "~a" }
  local ops = {}
  for _, mm in ipairs(op.metamethods) do ops[#ops + 1] = sym[mm] or mm end
  local lines = {
    call .. (#ops > 0 and ("   (also " .. table.concat(ops, " ") .. ")") or ""),
    ("(%s%s) — %s."):format(op.name, op.arity == 2 and " a b" or " a", desc),
    ("Operands: %s (%s); result: %s%s."):format(op.operands, table.concat(op.types, " "),
      op.result == "BOOL" and "bool" or "the operand type",
      op.approximate and "; approximate on the GPU within a ULP bound (docs/ULP.md)" or ""),
  }
  return table.concat(lines, "\n")
end

--- Every entry: key -> text.
function H.entries()
  if cache then return cache end
  local e = {}
  for k, v in pairs(api) do e[k] = v end
  for _, t in ipairs({ dsl.ENTRIES, egraph, planning, multigpu }) do
    for k, v in pairs(t) do e[k] = v end
  end
  for k, v in pairs(dsl.ENTRIES) do
    local name = k:match("^vyre%.lib%.([%w_]+)$")
    local untimed = { release = true, geometry = true, scratch = true, steps = true,
      kernel_cache = true }
    if name and not untimed[name] then
      local call, rest = v:match("^([^\n]*)\n(.*)$")
      call = call:gsub("^lib%." .. name, "lib." .. name .. "_timed")
      e[k .. "_timed"] = call .. ", timing\n" .. rest .. " Also returns the timing of its "
        .. "sequence {wall_ns, device_ns, enqueue_ns, wait_ns}."
    end
  end
  for _, op in ipairs(core.ops()) do e["Expr:" .. op.method] = op_entry(op) end
  cache = e
  return e
end

--- The sorted list of every key.
function H.topics()
  local t = {}
  for k in pairs(H.entries()) do t[#t + 1] = k end
  table.sort(t)
  return t
end

-- Function values -> key, built on first use from the modules and method tables.
local by_function

local function methods_of(tname)
  local lua_type = H.LUA_TYPES[tname]
  if lua_type then
    -- A Lua type is its own __index: its methods are the fields that are not
    -- metamethods (__close, __tostring).
    local mt = require(lua_type[1])[lua_type[2]]
    local m = {}
    for k, v in pairs(type(mt) == "table" and mt.__index or {}) do
      if not tostring(k):find("^__") then m[k] = v end
    end
    return m
  end
  return require("vyre.core").methods(tname)
end
H.methods_of = methods_of

local function function_keys()
  if by_function then return by_function end
  by_function = {}
  local function add(tbl, prefix)
    for k, v in pairs(tbl or {}) do
      if type(v) == "function" and not by_function[v] then by_function[v] = prefix .. k end
    end
  end
  local vyre = require("vyre")
  add(vyre, "vyre.")
  for _, m in ipairs(H.MODULES) do
    local ok, mod = pcall(require, m)
    if ok then add(mod, m .. ".") end
  end
  for tname, key in pairs(H.TYPES) do add(methods_of(tname), key .. ":") end
  local okl, lib = pcall(require, "vyre.lib")
  if okl then add(lib.steps, "vyre.lib.steps.") end
  local expr_mt = getmetatable(vyre.lit("u32", 0))
  if expr_mt and type(expr_mt.__index) == "table" then add(expr_mt.__index, "Expr:") end
  return by_function
end

-- Type entry with the first line of each of its methods.
local function type_text(key)
  local e = H.entries()
  local lines = { e[key], "", "Methods:" }
  local prefix = key .. ":"
  for _, k in ipairs(H.topics()) do
    if k:sub(1, #prefix) == prefix then
      lines[#lines + 1] = "  " .. e[k]:match("^[^\n]*")
    end
  end
  if #lines == 3 then lines[3] = nil end
  return table.concat(lines, "\n")
end

local function module_text(key)
  local e = H.entries()
  local lines = { e[key], "" }
  local prefix = key .. "."
  for _, k in ipairs(H.topics()) do
    if k:sub(1, #prefix) == prefix and not k:find(".", #prefix + 1, true) then
      lines[#lines + 1] = "  " .. e[k]:match("^[^\n]*")
    end
  end
  return table.concat(lines, "\n")
end

local function text_of_key(key)
  local e = H.entries()
  if not e[key] then return nil end
  if not key:find("[:.]") or is_module[key] then
    return (key:find("^vyre") and module_text or type_text)(key)
  end
  return e[key]
end

local function overview()
  local groups, order = {}, {}
  for _, k in ipairs(H.topics()) do
    local g = k:match("^(vyre%.[%w_]+)%.") or k:match("^(%a+):") or (k:find("^vyre") and "vyre")
      or k
    if g == "vyre.version" or g == "vyre.types" or g == "vyre.core" then g = "vyre" end
    if not groups[g] then
      groups[g] = {}
      order[#order + 1] = g
    end
    -- Members by their name under the group ("fusion.plan" under vyre.planners).
    if k ~= g then
      groups[g][#groups[g] + 1] = k:sub(1, #g + 1) == g .. "." and k:sub(#g + 2)
        or k:match("[:.]([%w_]+)$") or k
    end
  end
  local lines = { "vyre.help(x): x is a function, an object, a module or a name. Topics:" }
  for _, g in ipairs(order) do
    lines[#lines + 1] = ("  %-15s %s"):format(g, table.concat(groups[g], " "))
  end
  lines[#lines + 1] = "Operators have the Expr: key of their DSL method (help(\"sqrt\"), "
    .. "help(\":land\")); `vyre COMMAND --help` covers the command line."
  return table.concat(lines, "\n")
end

-- A name as the user may write it -> list of matching keys.
local function resolve(name)
  local e = H.entries()
  name = name:gsub("^%s+", ""):gsub("%s+$", ""):gsub("%(%)$", "")
  if e[name] then return { name } end
  local tname = H.TYPES[name] or H.TYPES["vyre." .. name]
  if tname then return { tname } end
  local owner, sep, member = name:match("^([%w_.]*)([:.])([%w_]+)$")
  if owner then
    local t = H.TYPES[owner] or H.TYPES["vyre." .. owner]
    if t and e[t .. ":" .. member] then return { t .. ":" .. member } end
    if owner == "k" and e["Builder:" .. member] then return { "Builder:" .. member } end
    -- The receiver names the help texts use (be:run, eg:find) name their type.
    local alias = ({ be = "Backend", buf = "Buffer", eg = "EGraph", g = "Graph",
      l = "Launch", wl = "Worklist" })[owner]
    if alias and e[alias .. ":" .. member] then return { alias .. ":" .. member } end
    if e["vyre." .. name] then return { "vyre." .. name } end
    -- require("vyre.cuda") is the whole library: vyre.cuda.program is vyre.program
    if owner == "vyre.cuda" and e["vyre." .. member] then return { "vyre." .. member } end
    if sep == ":" or owner == "" then name = member end
  end
  local found = {}
  for _, k in ipairs(H.topics()) do
    if k:match("[:.]" .. name:gsub("%p", "%%%0") .. "$") then found[#found + 1] = k end
  end
  if #found == 0 then
    for _, op in ipairs(core.ops()) do
      if op.name == name then found[1] = "Expr:" .. op.method end
    end
  end
  return found
end

--- The help text for x, or nil + a message saying what was not found.
function H.text(x)
  if x == nil then return overview() end
  local tx = type(x)
  if tx == "function" then
    local key = function_keys()[x]
    if key then return text_of_key(key) end
    return nil, "vyre.help: this function is not part of vyre's public API. Fix: "
      .. "vyre.help() lists the topics"
  end
  if tx == "userdata" or tx == "table" then
    local mt = getmetatable(x)
    local key = type(mt) == "table" and H.TYPES[mt.__name]
    if key then return text_of_key(key) end
    local vyre = require("vyre")
    if x == vyre then return text_of_key("vyre") end
    for _, m in ipairs(H.MODULES) do
      if package.loaded[m] == x and H.entries()[m] then return text_of_key(m) end
    end
    return nil, ("vyre.help: no help for this %s. Fix: pass a vyre object, function or "
      .. "name; vyre.help() lists the topics"):format(tx)
  end
  if tx ~= "string" then
    return nil, ("vyre.help: no help for a %s. Fix: pass a function, an object or a name")
      :format(tx)
  end
  local keys = resolve(x)
  if #keys == 1 then return text_of_key(keys[1]) end
  if #keys > 1 then
    local e, lines = H.entries(), { ("'%s' is one of %d:"):format(x, #keys) }
    for _, k in ipairs(keys) do
      lines[#lines + 1] = ("  %-24s %s"):format(k, e[k]:match("^[^\n]*"))
    end
    return table.concat(lines, "\n")
  end
  local near = {}
  for _, k in ipairs(H.topics()) do
    if #near < 8 and k:lower():find(x:lower(), 1, true) then near[#near + 1] = k end
  end
  return nil, ("vyre.help: no help for '%s'.%s Fix: vyre.help() lists the topics"):format(x,
    #near > 0 and (" Close: " .. table.concat(near, ", ") .. ".") or "")
end

--- vyre.help(x): prints the text (or what was not found).
function H.help(x)
  local text, why = H.text(x)
  print(text or why)
end

return H
