-- vyre.egraph.image_analyses — the analyses' section of the device image (docs/EGRAPH.md,
-- "The device image", format version 3).
--
-- An analysis is declared by data: its name and the spec table the user passed to
-- eg:analysis (expression strings, op names or ids, numbers, booleans, tables of them).
-- Everything else an analysis holds (the parsed trees, the Lua closures merge and makefn,
-- the kernel texts, the values) is derived from that data by the declaration, so the
-- image keeps each declaration as a copy of its spec, in declaration order (the order
-- is the dependency order of (get NAME k)), and from_image declares them again in that
-- order through the same eg:analysis path. Nothing here knows the options: a new option
-- of a spec is saved and loaded as it is, without special cases.
--
-- The values are not saved: they are a function of the rebuilt graph (every analysis is
-- recomputed from bottom on each rebuilt graph), and a loaded graph counts as not
-- rebuilt, so the first read rebuilds, indexes and recomputes them, giving the saved
-- graph's values (docs/EGRAPH.md says what that costs).
--
-- A declaration that holds something that is not data (a Lua function, userdata, a
-- table with a metatable, a cycle) cannot be saved: eg:image refuses it, naming the
-- analysis and where in its spec, unless called with {analyses = false}.
local S = require("vyre.egraph.store")
local E = require("vyre.errors")

local M = {}

-- bounds of a loaded section: a spec nested deeper than this is not one of vyre's
M.MAX_DEPTH = 32
M.MAX_ANALYSES = 1024

local function key_text(k)
  if type(k) == "string" and k:match("^[%a_][%w_]*$") then return "." .. k end
  if type(k) == "string" then return ("[%q]"):format(k) end
  return "[" .. tostring(k) .. "]"
end

-- A copy of plain data v (strings, numbers, booleans, tables of them with string or
-- number keys); returns copy, nil, or partial copy and a description of the first thing
-- that is not data ("a function at spec.make.F").
local function copy(v, path, open, depth)
  local t = type(v)
  if t == "string" or t == "boolean" then return v end
  if t == "number" then
    if v ~= v then return nil, "NaN at " .. path end
    return v
  end
  if t ~= "table" then return nil, ("a %s at %s"):format(t, path) end
  if getmetatable(v) ~= nil then return nil, "a table with a metatable at " .. path end
  if open[v] then return nil, "a cycle at " .. path end
  if depth >= M.MAX_DEPTH then
    return nil, ("tables nested deeper than %d at %s"):format(M.MAX_DEPTH, path)
  end
  open[v] = true
  local out = {}
  for k, x in next, v do
    local kt = type(k)
    if kt ~= "string" and (kt ~= "number" or k ~= k) then
      open[v] = nil
      return out, ("a %s key at %s"):format(kt, path)
    end
    local c, bad = copy(x, path .. key_text(k), open, depth + 1)
    if bad then
      open[v] = nil
      return out, bad
    end
    out[k] = c
  end
  open[v] = nil
  return out
end
M.copy = copy

--- Records analysis name's declaration (spec as the user gave it, copied now so later
--- changes to the table do not reach the image) after eg:analysis accepted it. "const"
--- declared again replaces the built-in analysis: its old entry goes, the new one is last.
function M.record(eg, name, spec)
  local list = eg.an_decls or {}
  if name == "const" then
    for i = #list, 1, -1 do
      if list[i].name == "const" then table.remove(list, i) end
    end
  end
  local c, bad = copy(spec, "spec", {}, 0)
  list[#list + 1] = { name = name, spec = c, bad = bad }
  eg.an_decls = list
end

--- eg:analysis(name, spec): declares (analysis.lua, uanalysis.lua) and records it.
function M.declare(eg, fname, name, spec)
  require("vyre.egraph.analysis").declare(eg, fname, name, spec)
  M.record(eg, name, spec)
end

--- The section eg:image writes: {{name =, spec =}, ...} in declaration order (copies),
--- or false with opts.analyses == false. Raises, before the image is made, for a
--- declaration that is not data.
function M.section(eg, fname, keep)
  if keep == false then return false end
  local out = {}
  for i, d in ipairs(eg.an_decls or {}) do
    if d.bad then
      S.raise(fname, ("analysis '%s' cannot be saved in the image: its declaration holds %s, "
        .. "which is not data"):format(d.name, d.bad), "declare it with data only (expression "
        .. "strings, op names, numbers, booleans and tables of them), or make the image with "
        .. "eg:image{analyses = false} and declare the analyses again after from_image")
    end
    out[i] = { name = d.name, spec = (copy(d.spec, "spec", {}, 0)) }
  end
  return out
end

--- Checks spans.analyses's shape on the host (no allocation): nil before version 3, a list
--- of {name =, spec =} or false from it. Returns the list ({} for none).
function M.check(fname, spans, ver)
  local a = spans.analyses
  local function bad(what)
    S.raise(fname, what, "pass the span table eg:image() returned, unchanged (its analyses "
      .. "are a list of {name =, spec =}, or false when made with {analyses = false})")
  end
  if ver < 3 then
    if a ~= nil or spans.nanalyses ~= nil then
      bad(("spans.analyses or spans.nanalyses is set but spans.version is %d (analyses are "
        .. "in images from version 3)"):format(ver))
    end
    return {}
  end
  -- the count, kept apart from the list, finds a list cut short (a lost last entry would
  -- otherwise load as an e-graph without that analysis)
  local want = spans.nanalyses
  if math.type(want) ~= "integer" or want < 0 then
    bad(("spans.nanalyses must be the number of analyses, got %s"):format(tostring(want)))
  end
  if a == false then
    if want ~= 0 then bad(("spans.analyses is false but spans.nanalyses is %d"):format(want)) end
    return {}
  end
  if a == nil then bad("spans.analyses is missing (a version 3 span table has it)") end
  if type(a) ~= "table" or getmetatable(a) ~= nil then
    bad("spans.analyses must be a list of {name =, spec =} or false, got " .. type(a))
  end
  local n = 0
  for k in next, a do
    if math.type(k) ~= "integer" or k < 1 or a[k] == nil then
      bad(("spans.analyses is not a list (key %s)"):format(tostring(k)))
    end
    n = n + 1
  end
  if n ~= #a then bad("spans.analyses is not a list (it has holes)") end
  if n > M.MAX_ANALYSES then
    bad(("spans.analyses has %d entries, more than %d"):format(n, M.MAX_ANALYSES))
  end
  if n ~= want then
    bad(("spans.analyses has %d entries but spans.nanalyses is %d (cut short?)"):format(n, want))
  end
  local seen = {}
  for i = 1, n do
    local d = a[i]
    local at = ("spans.analyses[%d]"):format(i)
    if type(d) ~= "table" then bad(("%s is a %s, not {name =, spec =}"):format(at, type(d))) end
    for k in next, d do
      if k ~= "name" and k ~= "spec" then
        bad(("%s has a field %s (only name and spec)"):format(at, tostring(k)))
      end
    end
    local name = d.name
    if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") or #name > 40 then
      bad(("%s.name must be an analysis name, got %s"):format(at, type(name) == "string"
        and ("'" .. name .. "'") or type(name)))
    end
    if seen[name] then bad(("%s ('%s') names an analysis declared before it"):format(at, name)) end
    seen[name] = true
    if type(d.spec) ~= "table" then
      bad(("%s.spec must be a table, got %s"):format(at, type(d.spec)))
    end
    local _, what = copy(d.spec, at .. ".spec", {}, 0)
    if what then bad(("%s ('%s') holds %s, not data"):format(at, name, what)) end
  end
  return a
end

--- Declares the section's analyses on eg, in order (through M.declare, so they are
--- recorded again for the next image). On a declaration the e-graph refuses, calls
--- fail() (which frees what from_image made) and raises naming the entry.
function M.load(eg, fname, list, fail)
  for i, d in ipairs(list) do
    local ok, err = pcall(M.declare, eg, "analysis", d.name, (copy(d.spec, "spec", {}, 0)))
    if not ok then
      fail()
      local msg, fix = E.parts(err)
      msg = msg:gsub("^vyre%.EGraph:analysis: ", ""):gsub("%.$", "")
      S.raise(fname, ("spans.analyses[%d] ('%s') does not declare on this e-graph: %s")
        :format(i, d.name, msg), "pass the span table eg:image() returned, unchanged"
        .. (fix and (" (the declaration's own fix: " .. fix .. ")") or ""))
    end
  end
end

return M
