-- vyre.egraph.costfn — extraction cost functions written as expressions (egg's
-- CostFunction), compiled into the Bellman-Ford kernels of extraction (docs/EGRAPH.md,
-- "Cost functions").
--
-- An expression sees one e-node: its op's children's class costs (c1 .. cN, `sum`,
-- `max`), its arity and, for a leaf, its payload as an integer: an i64 payload as it is,
-- a sym payload as its symbol number, an f64 payload's value truncated toward zero
-- (saturating, NaN -> 0: vyre's float -> int cast, the same on both backends; as an
-- f64 value under an i64 leaf converts in rules), never the double's raw bits. It is
-- compiled once per op into one kernel (a chain of `if op == k`), so a sweep over the
-- rows costs the same whatever the function. Arithmetic is i64 (wrapping, as in
-- rules). A row whose child
-- has no finite cost yet has none either; a result outside [1, 2^62] is counted and
-- raised, and so is a chosen e-node whose cost is not greater than each of its
-- children's (the choices would not form a DAG, so the term would be infinite).
local U = require("vyre.lib.shared")
local S = require("vyre.egraph.store")
local rules = require("vyre.egraph.rules")
local P = require("vyre.egraph.payload")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)

local M = {}

M.INF = "18446744073709551615u64"
M.MAXCOST = 1 << 62
M.MAXCHILD = 8

local BIN = { ["<"] = "lt", ["<="] = "le", [">"] = "gt", [">="] = "ge", ["=="] = "eq",
  ["!="] = "ne" }
local FOLD = { ["+"] = "add", ["*"] = "mul", max = "max", min = "min" }

local HELP = "an integer, payload, arity, sum, max, c1 .. cN, (+ e e ...), (- e e), "
  .. "(* e e ...), (max e ...), (min e ...), (abs e), (if test e e) with tests (< e e), "
  .. "(<= e e), (> e e), (>= e e), (== e e), (!= e e), (and ...), (or ...), (not t)"

--- Compiles expression s (parsed S-expression) for an op of `arity` into vyre text;
--- `want` is "num" or "bool". Raises with the op and the expression's text.
local function compile(fname, s, arity, want, text, opname, ptype)
  local function bad(what)
    S.raise(fname, ("the cost expression '%s' of op '%s': %s"):format(text, opname, what),
      "write " .. HELP)
  end
  local function go(e, kind)
    if type(e) == "string" then
      if kind ~= "num" then bad(("'%s' is a number where a test is needed"):format(e)) end
      local i = math.tointeger(tonumber(e))
      if i then return ("%di64"):format(i) end
      if e == "payload" then
        -- pl holds the payload's bits; an f64 leaf's value is the double they encode
        return ptype == "f64" and "(cast i64 (bitcast f64 pl))" or "pl"
      end
      if e == "arity" then return ("%di64"):format(arity) end
      if e == "sum" then return "sm" end
      if e == "max" then return "mx" end
      local k = e:match("^c(%d+)$")
      if k then
        k = tonumber(k)
        if k > M.MAXCHILD then bad(("'%s': only c1 .. c%d are named; use sum or max"):format(e,
          M.MAXCHILD)) end
        if k < 1 or k > arity then
          bad(("'%s' names child %d, but the op has %d children"):format(e, k, arity))
        end
        return ("c%d"):format(k)
      end
      bad(("'%s' is not a name this compiler knows"):format(e))
    end
    local f = e[1]
    if type(f) ~= "string" then bad("a list must start with a function name") end
    local n = #e - 1
    local function args(k2)
      local a = {}
      for i = 2, #e do a[i - 1] = go(e[i], k2) end
      return a
    end
    if kind == "bool" then
      if BIN[f] then
        if n ~= 2 then bad(("(%s ...) takes 2 arguments, got %d"):format(f, n)) end
        local a = args("num")
        return ("(%s %s %s)"):format(BIN[f], a[1], a[2])
      end
      if f == "not" then
        if n ~= 1 then bad("(not t) takes 1 argument") end
        return ("(lnot %s)"):format(go(e[2], "bool"))
      end
      if f == "and" or f == "or" then
        if n < 1 then bad(("(%s ...) needs at least 1 test"):format(f)) end
        local a = args("bool")
        local out = a[1]
        for i = 2, #a do out = ("(%s %s %s)"):format(f == "and" and "land" or "lor", out, a[i]) end
        return out
      end
      bad(("(%s ...) is not a test"):format(f))
    end
    if FOLD[f] then
      if n < 1 then bad(("(%s ...) needs at least 1 argument"):format(f)) end
      local a = args("num")
      local out = a[1]
      for i = 2, #a do out = ("(%s %s %s)"):format(FOLD[f], out, a[i]) end
      return out
    end
    if f == "-" then
      if n ~= 2 then bad("(- a b) takes 2 arguments") end
      local a = args("num")
      return ("(sub %s %s)"):format(a[1], a[2])
    end
    if f == "abs" then
      if n ~= 1 then bad("(abs e) takes 1 argument") end
      return ("(abs %s)"):format(go(e[2], "num"))
    end
    if f == "if" then
      if n ~= 3 then bad("(if test a b) takes 3 arguments") end
      return ("(select %s %s %s)"):format(go(e[2], "bool"), go(e[3], "num"), go(e[4], "num"))
    end
    bad(("(%s ...) is not a function of cost expressions"):format(f))
  end
  return go(s, want)
end

--- True when `cost` asks for expressions (a string, or a table with a string value).
function M.is_expr(cost)
  if type(cost) == "string" then return true end
  if type(cost) ~= "table" then return false end
  for _, v in pairs(cost) do
    if type(v) == "string" then return true end
  end
  return false
end

--- The per-op vyre expressions of `cost` (a string for every op, or a table op name ->
--- expression string or integer; an integer c means c + sum, the op-table meaning).
function M.compile(eg, fname, cost)
  local out = {}
  for i, name in ipairs(eg.reg.names) do
    local e = type(cost) == "string" and cost or cost[name]
    if math.type(e) == "integer" then
      if e < 1 or e > (1 << 40) then
        S.raise(fname, ("the cost of op '%s' must be an integer in [1, 2^40] or an "
          .. "expression, got %d"):format(name, e), "give every registered op a positive cost")
      end
      e = ("(+ %d sum)"):format(e)
    end
    if type(e) ~= "string" then
      S.raise(fname, ("op '%s' has no cost (got %s)"):format(name, tostring(e)),
        "give every registered op an integer or an expression string, e.g. \"(+ 1 sum)\"")
    end
    local ok, s = pcall(rules.sexp, fname, e)
    if not ok then error(s, 0) end
    out[i] = compile(fname, s, eg.reg.arity[i], "num", e, name, P.type_of(eg, i - 1))
  end
  return out
end

-- The row-cost statements of the compiled expressions: sets s (u64, INF when the row is
-- subsumed or a child has no finite cost), bad (1 when the expression's value is out of
-- range), mc (the largest child cost, for the DAG check of eg_xbest).
local function rowcost(exprs, arities)
  local disp = {}
  for i, e in ipairs(exprs) do
    disp[#disp + 1] = ("      (if (eq op %du32) (then (set v %s)))"):format(i - 1, e)
  end
  local maxar = 0
  for i = 1, #exprs do maxar = math.max(maxar, arities[i]) end
  local cs = {}
  for k = 1, math.min(maxar, M.MAXCHILD) do
    cs[#cs + 1] = ("      (let c%d 0i64)\n      (if (land (lnot leaf) (gt len %du32))\n"
      .. "        (then (set c%d (bitcast i64 (load ccost (load children (add o %du32)))))))")
      :format(k, k - 1, k, k - 1)
  end
  return U.fill([[
      (let op (load row_op r))
      (let o (load row_off r))
      (let len (load row_len r))
      (let leaf (ne (load isleaf op) 0u32))
      (let dd (select (ne (and (load row_epoch r) 2147483648u32) 0u32) 1u32 0u32))
      (let sm 0i64)
      (let mx 0i64)
      (let mc 0u64)
      (if (lnot leaf)
        (then
          (for k 0u32 len 1u32
            (let cc (load ccost (load children (add o k))))
            (if (eq cc $INF) (then (set dd 1u32)))
            (set mc (max mc cc))
            (set sm (add sm (bitcast i64 cc)))
            (set mx (max mx (bitcast i64 cc))))))
      (let pl 0i64)
      (if leaf (then (set pl (bitcast i64 (or (cast u64 (load children o))
        (shl (cast u64 (load children (add o 1u32))) 32u64))))))
      (let dead (ne dd 0u32))
$CS
      (let v 0i64)
$DISP
      (let bad (land (lnot dead) (lor (lt v 1i64) (gt v $MAXi64))))
      (let s (select (lor dead bad) $INF (bitcast u64 v)))]], {
    INF = M.INF, MAX = tostring(M.MAXCOST), CS = table.concat(cs, "\n"),
    DISP = table.concat(disp, "\n") })
end

local COST = [[
(program eg_xcost (workgroup 256)
  (columns read row_epoch isleaf children row_class row_op row_off row_len)
  (buffer ccost u64 read_write)
  (columns read_write stat)
  (param n u32)
  (param slot u32)
  (let r (gid x))
  (if (lt r n)
    (then
$ROWCOST
      (let cls (load row_class r))
      (if (lt s (load ccost cls))
        (then
          (let old (atomic min ccost cls s))
          (if (lt s old) (then (atomic add stat slot 1u32))))))))
]]

local BEST = [[
(program eg_xbest (workgroup 256)
  (columns read row_epoch isleaf children row_class row_op row_off row_len)
  (buffer ccost u64 read)
  (buffer best u32 read_write)
  (columns read_write stat)
  (param n u32)
  (let r (gid x))
  (if (lt r n)
    (then
$ROWCOST
      (if bad (then (atomic add stat 8u32 1u32)))
      (let cls (load row_class r))
      (if (land (ne s $INF) (eq s (load ccost cls)))
        (then
          (if (le s mc) (then (atomic add stat 9u32 1u32)))
          (atomic min best cls r))))))
]]

local function kernel(be, name, text)
  return U.kernel(be, "egraph:" .. name .. ":" .. text, function() return SC.expand(text) end)
end

--- The sweep and best kernels of the compiled expressions.
function M.kernels(be, exprs, arities)
  local rc = rowcost(exprs, arities)
  return kernel(be, "xcost", U.fill(COST, { ROWCOST = rc })),
    kernel(be, "xbest", U.fill(BEST, { ROWCOST = rc, INF = M.INF }))
end

return M
