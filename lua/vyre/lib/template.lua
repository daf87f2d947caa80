-- vyre.lib.template — the one way vyre.lib writes its kernels (docs/LIB.md, "How a lib
-- kernel is written"): templates of vyre's text format with checked parameters and
-- hygienic local names.
--
--   local T = require("vyre.lib.template")
--   local FOLD = T.new("fold", "(let @acc $INIT) (set $OUT (add @acc $X))")
--   local text = T.text(KERNEL{ T = "f32", BODY = FOLD{ INIT = "0u32", OUT = "s", X = "v" } })
--
-- * `$NAME` (capitals and digits) or `${NAME}` (capitals, digits, `_`) is a parameter. An
--   instance `tmpl{...}` must give every parameter the text uses and nothing else: a
--   missing or an unused one is an error when the instance is made, never silent text.
--   The names of vyre.lib.geometry (WG, TILE, ...) are parameters every template has,
--   with the geometry's values: a kernel never writes a tile size by hand.
-- * A value is a string or number (put in as it is: an expression, a type, a name the
--   caller owns), an instance (rendered in place) or a list of those (one a line).
-- * `@name` is a local of the template. In the instance at the root of T.text it is
--   written `name`; in a nested instance (a fragment) it becomes `_<tmpl>_<k>_name`,
--   k counting the instances of that template in the text, so two uses of one fragment,
--   or a fragment and its caller, never bind the same name. Plain names starting with
--   `_` are refused in templates: that spelling belongs to the fragments' locals. A
--   fragment gives results to its caller through names the caller passes (`$OUT`):
--   text given as an instance's argument is the text of the template whose parameter
--   the instance fills, so `@name` there is that template's local (a fragment nested
--   in a fragment names the outer one's locals as its outputs).
-- Rendering is deterministic: the same instance gives the same text (the PTX and module
-- caches key on the program hash of that text).
local E = require("vyre.errors")
local G = require("vyre.lib.geometry")

local T = {}

local TEMPLATE = { __name = "vyre.lib.Template" }
TEMPLATE.__index = TEMPLATE
local INSTANCE = { __name = "vyre.lib.TemplateInstance" }

local function fail(name, what)
  E.raise("internal", ("vyre.lib internal: template %s: %s"):format(name, what), 3)
end

-- Calls fn(param) for every parameter of text ($NAME or ${NAME}).
local function each_param(text, fn)
  for braced in text:gmatch("%$(%b{})") do fn(braced:sub(2, -2)) end
  for plain in text:gmatch("%$(%u[%u%d]*)") do fn(plain) end
end

--- A template named name (letters and digits: it prefixes the locals of its fragments).
function T.new(name, text)
  if type(name) ~= "string" or not name:find("^%a%w*$") then
    fail(tostring(name), "a template name is letters and digits")
  end
  local params = {}
  each_param(text, function(p)
    if not p:find("^%u[%u%d_]*$") then fail(name, "bad parameter name ${" .. p .. "}") end
    params[p] = true
  end)
  local reserved = text:match("[%s(](_[%w_]*)")
  if reserved then
    fail(name, "the name " .. reserved .. " starts with _, which belongs to hygienic "
      .. "locals: write @" .. reserved:sub(2) .. " for a local")
  end
  return setmetatable({ name = name, text = text, params = params }, TEMPLATE)
end

local function check_value(name, k, v)
  local tv = type(v)
  if tv == "string" or tv == "number" or getmetatable(v) == INSTANCE then return end
  if tv == "table" and getmetatable(v) == nil then
    for i = 1, #v do check_value(name, k .. "[" .. i .. "]", v[i]) end
    return
  end
  fail(name, ("parameter $%s is a %s, not text, a number, an instance or a list"):format(
    k, tv))
end

--- tmpl{...}: an instance, its arguments checked against the parameters the text uses.
function TEMPLATE.__call(tmpl, args)
  args = args or {}
  for k, v in pairs(args) do
    if G[k] ~= nil then
      fail(tmpl.name, "$" .. k .. " is vyre.lib.geometry's: change it there, not per kernel")
    end
    if not tmpl.params[k] then fail(tmpl.name, "parameter $" .. tostring(k) .. " is unused") end
    check_value(tmpl.name, k, v)
  end
  for p in pairs(tmpl.params) do
    if args[p] == nil and G[p] == nil then fail(tmpl.name, "parameter $" .. p .. " is missing") end
  end
  return setmetatable({ tmpl = tmpl, args = args }, INSTANCE)
end

function T.is_instance(v) return getmetatable(v) == INSTANCE end

local render

-- The text of value v of a parameter of template instance `owner` (its locals' prefix
-- `own`; `outer`: the prefix of the scope that wrote the instance's arguments).
local function value_text(v, counts, own, outer)
  if type(v) == "table" then
    -- an instance fills owner's parameter: its own text arguments were written for it
    -- where owner's text is in scope, so they resolve @names with owner's prefix
    if getmetatable(v) == INSTANCE then return render(v, counts, own) end
    local parts = {}
    for i = 1, #v do parts[i] = value_text(v[i], counts, own, outer) end
    return table.concat(parts, "\n")
  end
  -- plain text belongs to the scope that wrote it: its @names are that scope's locals
  -- (how a fragment's caller names its own locals as the fragment's outputs)
  return (tostring(v):gsub("@([%a_][%w_]*)", function(n) return outer .. n end))
end

-- inst's text; outer: the prefix of the template whose parameter inst fills (nil at the
-- root, whose locals are written plain).
function render(inst, counts, outer)
  local tmpl, args = inst.tmpl, inst.args
  local prefix = ""
  if outer then
    local k = (counts[tmpl.name] or 0) + 1
    counts[tmpl.name] = k
    prefix = ("_%s_%d_"):format(tmpl.name, k)
  end
  -- locals first, on the template's own text: the values put in below are the caller's
  local text = tmpl.text:gsub("@([%a_][%w_]*)", function(n) return prefix .. n end)
  -- each use of an instance renders afresh: a fragment put in twice gets two prefixes.
  -- Text values belong to the scope that wrote the instance (outer); instance values
  -- fill this template's parameters, so their text values belong to this one.
  local function sub(p)
    local v = args[p]
    if v == nil then return tostring(G[p]) end
    return value_text(v, counts, prefix, outer or "")
  end
  -- values go in through markers, so that a value is never scanned for parameters
  local vals = {}
  local function mark(p)
    vals[#vals + 1] = sub(p)
    return "\0" .. #vals .. "\0"
  end
  text = text:gsub("%$(%b{})", function(b) return mark(b:sub(2, -2)) end)
  text = text:gsub("%$(%u[%u%d]*)", mark)
  return (text:gsub("%z(%d+)%z", function(i) return vals[tonumber(i)] end))
end

--- The text of instance inst (its @locals unprefixed; its fragments' prefixed).
function T.text(inst)
  if getmetatable(inst) ~= INSTANCE then
    E.raise("internal", "vyre.lib internal: template.text takes an instance (tmpl{...})", 2)
  end
  return render(inst, {}, nil)
end

--- tmpl{...} rendered at once (T.text(tmpl(args))).
function TEMPLATE.render(tmpl, args)
  return T.text(tmpl(args))
end

return T
