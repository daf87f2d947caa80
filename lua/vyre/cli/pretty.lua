-- vyre.cli.pretty — values as readable text, for the REPL and `vyre run`: tables with
-- sorted keys, nested and indented when long, cycles marked; vyre.Arrays with their
-- type, length and first/last elements; other vyre objects through their __tostring.
--   local pretty = require("vyre.cli.pretty")
--   pretty(v [, {width = 80, depth = 4, items = 50, head = 8, tail = 4}]) -> string
local C = require("vyre.cli.common")

local M = {}

local DEFAULTS = { width = 80, depth = 4, items = 50, head = 8, tail = 4 }

local function type_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and type(mt.__name) == "string" and mt.__name or nil
end

local function is_ident(s)
  return type(s) == "string" and s:match("^[%a_][%w_]*$") ~= nil
end

local function key_order(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then
    if ta == "number" then return true end
    if tb == "number" then return false end
    return ta < tb
  end
  if ta == "number" or ta == "string" then return a < b end
  return tostring(a) < tostring(b)
end

--- "vyre.Array(f32, 5) [1.0, 2.0, 3.0, 4.0, 5.0]" (first head and last tail elements).
function M.array(a, o)
  o = o or DEFAULTS
  if a.type == "void" or a.type == nil then return tostring(a) end
  local items = C.array_items(a, o.head or DEFAULTS.head, o.tail or DEFAULTS.tail)
  return ("vyre.Array(%s, %d) [%s]"):format(a.type, #a, table.concat(items, ", "))
end

local render

local function scalar(v, nested)
  local t = type(v)
  if t == "string" then return nested and ("%q"):format(v):gsub("\\\n", "\\n") or v end
  if t == "number" and math.type(v) == "float" then
    return C.float_text(v, "f64")
  end
  local name = t == "userdata" and type_name(v)
  if name == "vyre.Array" then return M.array(v) end
  return tostring(v)
end

-- Renders table t at depth d; seen holds the tables on the current path (cycles).
local function render_table(t, o, d, seen, indent)
  local name = type_name(t)
  if name and getmetatable(t).__tostring then return tostring(t) end
  if seen[t] then return "<cycle>" end
  if d > o.depth then return "{…}" end
  seen[t] = true
  local keys, n = {}, #t
  for k in pairs(t) do
    if not (math.type(k) == "integer" and k >= 1 and k <= n) then keys[#keys + 1] = k end
  end
  table.sort(keys, key_order)
  local parts = {}
  for i = 1, n do
    if #parts >= o.items then break end
    parts[#parts + 1] = render(t[i], o, d + 1, seen, indent .. "  ")
  end
  for _, k in ipairs(keys) do
    if #parts >= o.items then break end
    local ks = is_ident(k) and k or "[" .. render(k, o, d + 1, seen, indent .. "  ") .. "]"
    parts[#parts + 1] = ks .. " = " .. render(t[k], o, d + 1, seen, indent .. "  ")
  end
  local total = n + #keys
  if total > #parts then parts[#parts + 1] = ("… (%d more)"):format(total - #parts) end
  seen[t] = nil
  if #parts == 0 then return "{}" end
  local flat = "{" .. table.concat(parts, ", ") .. "}"
  if #flat + #indent <= o.width and not flat:find("\n", 1, true) then return flat end
  if #keys == 0 and not flat:find("\n", 1, true) then
    -- A long list of scalars: as many per line as fit, rather than one per line.
    local lines, line = {}, ""
    for i, p in ipairs(parts) do
      local piece = p .. (i < #parts and "," or "")
      if line ~= "" and #indent + 2 + #line + 1 + #piece > o.width then
        lines[#lines + 1] = line
        line = piece
      else
        line = line == "" and piece or (line .. " " .. piece)
      end
    end
    lines[#lines + 1] = line
    return "{\n" .. indent .. "  " .. table.concat(lines, "\n" .. indent .. "  ") .. "\n"
      .. indent .. "}"
  end
  return "{\n" .. indent .. "  " .. table.concat(parts, ",\n" .. indent .. "  ") .. "\n"
    .. indent .. "}"
end

render = function(v, o, d, seen, indent)
  if type(v) == "table" then return render_table(v, o, d, seen, indent) end
  return scalar(v, true)
end

--- Text of v. A top-level string is itself (not quoted); nested strings are quoted.
function M.format(v, opts)
  local o = {}
  for k, dv in pairs(DEFAULTS) do o[k] = opts and opts[k] or dv end
  if type(v) == "table" then return render_table(v, o, 1, {}, "") end
  return scalar(v, false)
end

return setmetatable(M, { __call = function(_, v, opts) return M.format(v, opts) end })
