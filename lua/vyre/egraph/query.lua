-- vyre.egraph.query — reading an e-graph without changing it (docs/EGRAPH.md,
-- "Queries"): eg:search(pattern) -> substitutions, eg:lookup(term) -> e-class or nil,
-- eg:equiv(t1, t2) (egglog's `check`).
--
-- All three run the e-matching pipeline of match.lua on the rebuilt graph (a rebuild
-- first when the graph changed since the last one: it adds nothing, it only restores
-- congruence). A ground term is a pattern without variables: after a rebuild each
-- (op, canonical children) is one row, so a term matches at most one e-node, and its
-- e-class is the term's. The indexes are kept in eg.qidx until the graph changes
-- (store.changed) or eg:run builds its own in the same scratch buffers.
local S = require("vyre.egraph.store")
local R = require("vyre.egraph.rebuild")
local rules = require("vyre.egraph.rules")
local match = require("vyre.egraph.match")

local Q = {}

local function ready(eg, fname)
  if not eg.clean then R.rebuild(eg, fname) end
  S.settle(eg)
  if not eg.qidx then eg.qidx = match.index(eg, fname) end
  return eg.qidx
end

-- The matches of pattern record pat (layout lay) as Lua rows: [0] the root's e-class,
-- class variables by name, payload variables as 64-bit integers.
local function rows(eg, fname, pat, lay)
  local idx = ready(eg, fname)
  local m, sub = match.search(eg, fname, idx, pat, lay, nil, "query", 0)
  local out = {}
  if m == 0 then return out end
  local a = sub:download({ first = 1, count = m * lay.ncols })
  for i = 1, m do
    local r = { [0] = a[i], row = lay.row and a[lay.row * m + i] or nil }
    for name, col in pairs(lay.class) do r[name] = a[col * m + i] end
    for name, col in pairs(lay.payload) do
      r[name] = a[col * m + i] | (a[(col + 1) * m + i] << 32)
    end
    out[i] = r
  end
  return out
end

--- eg:search(pattern) -> {{root = e-class, var = value, ...}, ...} in the device's match
--- order (the same on both backends).
function Q.search(eg, fname, text)
  local pat, vars = rules.pattern(eg, fname, text)
  local lay = match.layout(pat)
  local types = rules.types(vars)
  local P = require("vyre.egraph.payload")
  local out = {}
  for i, r in ipairs(rows(eg, fname, pat, lay)) do
    r.root = r[0]
    r[0] = nil
    -- payloads as Lua values of their leaf's type (payload.lua)
    for name, t in pairs(types) do
      if t == "f64" then r[name] = P.bits_f64(r[name])
      elseif t == "sym" then r[name] = P.name(eg, r[name]) or r[name] end
    end
    out[i] = r
  end
  return out
end

--- The e-class of ground term `t` (an S-expression, or an e-class id passed through
--- canonical), or nil when the e-graph does not hold it.
function Q.lookup(eg, fname, t)
  if math.type(t) == "integer" then
    S.check_id(eg, fname, t, "the e-class id")
    ready(eg, fname)
    return eg.parent:download({ first = t + 1, count = 1 })[1]
  end
  if type(t) ~= "string" then
    S.raise(fname, ("a term must be an S-expression string or an e-class id, got %s"):format(
      type(t)), "pass e.g. \"(Add (Num 1) (Num 2))\"")
  end
  local pat = rules.pattern(eg, fname, t, true)
  local lay = match.layout(pat, false, true)
  lay.withsub = true -- a subsumed term is still in the e-graph
  local r = rows(eg, fname, pat, lay)[1]
  if not r then return nil end
  return eg.parent:download({ first = r[0] + 1, count = 1 })[1], r, lay
end

--- egglog's delete: removes the e-node of ground term t from the e-graph (its e-class
--- id stays; e-nodes that have it as a child stay); returns the e-class it was in, or
--- nil when the e-graph does not hold it.
function Q.delete(eg, fname, t)
  if type(t) ~= "string" then
    S.raise(fname, ("the term must be an S-expression string, got %s"):format(type(t)),
      "pass e.g. \"(Add (Num 1) (Num 2))\"")
  end
  local c, r = Q.lookup(eg, fname, t)
  if not c then return nil end
  R.drop_rows(eg, fname, { r.row })
  -- old matches may derive the term again: the next search of every rule is a full one
  for _, rule in ipairs(eg.rule_list or {}) do rule.since = nil end
  return c
end

--- egglog's subsume: marks the e-node of ground term t subsumed (rules no longer match
--- it, extraction skips it, lookups still find it); returns its e-class, or nil when
--- the e-graph does not hold it (nothing is added).
function Q.subsume(eg, fname, t)
  if type(t) ~= "string" then
    S.raise(fname, ("the term must be an S-expression string, got %s"):format(type(t)),
      "pass e.g. \"(Add (Num 1) (Num 2))\"")
  end
  local c, r = Q.lookup(eg, fname, t)
  if not c then return nil end
  local row = S.exact(eg, "subsume_row", 1)
  row:upload({ r.row })
  require("vyre.egraph.saturate").subsume(eg, fname, row, 1, 0)
  return c
end

--- true when t1 and t2 (terms or e-class ids) are both in the e-graph, in one e-class.
function Q.equiv(eg, fname, t1, t2)
  local a = Q.lookup(eg, fname, t1)
  local b = Q.lookup(eg, fname, t2)
  return a ~= nil and a == b
end

return Q
