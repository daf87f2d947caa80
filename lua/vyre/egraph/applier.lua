-- vyre.egraph.applier — custom appliers written as Lua functions (docs/EGRAPH.md, "Lua
-- appliers"; the role of egg's `Applier` and `ConditionalApplier`).
--
--   eg:rule("let-lam-diff", "(Let ?v1 ?e (Lam ?v2 ?body))", function(s, ctx)
--     if ctx.value("fv", s.e) & ctx.value("fv", s.v2) == 0 then
--       return "(Lam ?v2 (Let ?v1 ?e ?body))"
--     end
--     local fresh = ctx.leaf("Sym", "_" .. s.root)
--     return "(Lam ?fresh (Let ?v1 ?e (Let ?v2 (Var ?fresh) ?body)))", { fresh = fresh }
--   end, { when = "(!= ?v1 ?v2)" })
--
-- The search is the device's, as for any rule (with `when` on the device); the matches'
-- substitutions are then read back and the function runs once per match on the host, so
-- this is the slow path: a download of the substitutions, a Lua call per match and
-- e-nodes staged one by one (uploaded together before the next device step). Use a
-- right-hand pattern where one can say the same.
--
-- The function gets s (the substitution: s.root the matched e-class, class variables as
-- e-class ids, payload variables as Lua values of their leaf's type) and ctx:
--   ctx.value(name, c)   c's value in user analysis name (as of the iteration's search)
--   ctx.const(c)         the constant analysis: value or nil, "none" | "one" | "conflict"
--   ctx.add(term [, extra]) adds a term (S-expression; ?vars from s or from extra, a
--                        table name -> e-class id or payload) and returns its e-class id
--   ctx.leaf(op, value)  adds a leaf; ctx.union(a, b) unites two e-classes
-- It returns nothing (no rewrite), a term (text, with optional extra bindings) or an
-- e-class id to unite with s.root, or a list of such terms and ids.
-- With explanations (explain.lua) its unions are logged as the rule's: each result is
-- united with the left-hand side instantiated anew (one rewrite from it, as for pattern
-- rules of one pattern; a bare-variable or multi-pattern rule unites s.root), and
-- ctx.union(a, b) joins a and b as one step of the rule. They are united together after
-- the rule's last match (one union_many) instead of staged.
local S = require("vyre.egraph.store")
local P = require("vyre.egraph.payload")
local callback = require("vyre.callback")

local AP = {}

-- The substitutions (column-major, layout lay) as Lua tables, and each one's payload
-- variables as raw bits (for explanations' left-hand instances).
local function rows(eg, rule, sub, m, lay)
  local a = sub:download({ count = m * lay.ncols })
  local types = require("vyre.egraph.rules").types(rule.vars)
  local out, raw = {}, {}
  for i = 1, m do
    local r, rb = { root = a[i] }, {}
    for name, col in pairs(lay.class) do r[name] = a[col * m + i] end
    for name, col in pairs(lay.payload) do
      local bits = a[col * m + i] | (a[(col + 1) * m + i] << 32)
      local t = types[name]
      rb[name] = bits
      r[name] = t == "f64" and P.bits_f64(bits) or t == "sym" and (P.name(eg, bits) or bits)
        or bits
    end
    out[i], raw[i] = r, rb
  end
  return out, raw
end

-- Explanations (explain.lua): stages the left-hand pattern t instantiated with match r
-- (class variables as their ids, payload variables as their bits rb) and returns its id,
-- as saturate.apply does for pattern rules, so the logged union joins lhs[s] and the
-- applier's result, one rewrite apart; the rebuild finds lhs[s] congruent to the match.
local function lhs_instance(eg, t, r, rb)
  if t.kind == "var" then return r[t.name] end
  if t.kind == "leaf" then
    local p = t.payload
    local b = p.kind == "pvar" and rb[p.name] or p.value
    return S.stage(eg, t.op, { b & 0xffffffff, (b >> 32) & 0xffffffff })
  end
  local kids = {}
  for k, a in ipairs(t.args) do kids[k] = lhs_instance(eg, a, r, rb) end
  return S.stage(eg, t.op, kids)
end

-- Adds term s (parsed S-expression) with bindings env; returns its e-class id.
local function build(eg, fname, rname, s, env, text)
  local function bad(msg, fix)
    S.raise(fname, ("the applier of rule '%s' returned term '%s': %s"):format(rname, text, msg),
      fix)
  end
  local function go(x)
    if type(x) == "string" then
      if x:match("^%?") then
        local v = env[x:sub(2)]
        if math.type(v) ~= "integer" or v < 0 or v >= eg.nids then
          bad(("?%s is not bound to an e-class id"):format(x:sub(2)),
            "bind it in the left-hand side or in the extra table the applier returns")
        end
        return v
      end
      bad(("'%s' is not a term"):format(x), "write (Op ...) or a ?variable")
    end
    local op = eg.reg.byname[x[1]]
    if not op then bad(("unknown op '%s'"):format(tostring(x[1])), "register it with eg:op") end
    local arity = eg.reg.arity[op + 1]
    if arity == 0 then
      if #x ~= 2 then bad(("leaf '%s' takes one payload"):format(x[1]), "write (Op payload)") end
      local p = x[2]
      local bits
      if type(p) == "string" and p:match("^%?") then
        bits = P.encode(eg, op, env[p:sub(2)])
      else
        bits = P.literal(eg, P.type_of(eg, op), p)
      end
      if not bits then
        bad(("the payload of '%s' is not a %s"):format(x[1], P.type_of(eg, op)),
          "pass a literal or a payload variable of the leaf's type")
      end
      return S.stage(eg, op, { bits & 0xffffffff, (bits >> 32) & 0xffffffff })
    end
    if #x - 1 ~= arity then
      bad(("'%s' takes %d children, got %d"):format(x[1], arity, #x - 1),
        ("give it %d"):format(arity))
    end
    local kids = {}
    for k = 2, #x do kids[k - 1] = go(x[k]) end
    return S.stage(eg, op, kids)
  end
  return go(s)
end

--- Applies the m matches of a rule whose right-hand side is a Lua function.
function AP.apply(eg, fname, rule, sub, m, lay)
  if m == 0 then return 0 end
  local list, raw = rows(eg, rule, sub, m, lay)
  -- with explanations the unions are collected and united at the end as the rule's
  -- (eg.xwhy), not staged as user unions
  local xpairs = eg.xlog and {}
  local function unite(a, b)
    if xpairs then
      xpairs[#xpairs + 1], xpairs[#xpairs + 2] = a, b
    else
      eg:union(a, b)
    end
  end
  local cache = {}
  local function term(text, env)
    local parsed = cache[text]
    if not parsed then
      parsed = require("vyre.egraph.rules").sexp(fname, text)
      cache[text] = parsed
    end
    return build(eg, fname, rule.name, parsed, env, text)
  end
  local vals = {}
  local consts
  local ctx = {}
  function ctx.value(name, c)
    local an = eg.analyses and eg.analyses[name]
    if not an then
      error(("ctx.value: the e-graph has no analysis '%s'. Fix: declare it with "
        .. "eg:analysis"):format(tostring(name)), 2)
    end
    if not vals[name] then vals[name] = require("vyre.egraph.uanalysis").values(eg, name) end
    return vals[name][c]
  end
  function ctx.const(c)
    if not eg.an_spec or not eg.an_state then return nil, "none" end
    if not consts then
      local n = math.min(eg.dev.nids, #eg.an_state, #eg.an_val)
      consts = { st = eg.an_state:download({ count = n }), v = eg.an_val:download({ count = n }) }
    end
    local st = consts.st[c + 1] or 0
    if st == 1 then return P.decode(eg, eg.an_spec.leaf, consts.v[c + 1]), "one" end
    return nil, st == 2 and "conflict" or "none"
  end
  local cur
  function ctx.add(text, extra)
    local env = {}
    for k, v in pairs(cur) do env[k] = v end
    for k, v in pairs(extra or {}) do env[k] = v end
    return term(text, env)
  end
  function ctx.leaf(op, value) return eg:leaf(op, value) end
  function ctx.union(a, b)
    S.check_id(eg, fname, a, "ctx.union argument 1")
    S.check_id(eg, fname, b, "ctx.union argument 2")
    unite(a, b)
  end
  local what = ("the applier of rule '%s'"):format(rule.name)
  local fix = ("make the applier of rule '%s' return nil, a term, an e-class id or a list "
    .. "of them, without raising or yielding"):format(rule.name)
  for i, r in ipairs(list) do
    cur = r
    local ok, res, extra = callback.call(what, function(s, c)
      local a, b = rule.applier(s, c)
      return a, b
    end, r, ctx)
    if not ok then S.raise(fname, res, fix) end
    local outs = type(res) == "table" and res or { res }
    for _, o in ipairs(outs) do
      local id = o
      if type(o) == "string" then
        local env = {}
        for k, v in pairs(r) do env[k] = v end
        for k, v in pairs(extra or {}) do env[k] = v end
        id = term(o, env)
      end
      if math.type(id) ~= "integer" or id < 0 or id >= eg.nids then
        S.raise(fname, ("%s returned %s"):format(what, tostring(o)), fix)
      end
      local from = r.root
      if xpairs and #rule.pats == 1 and rule.pats[1].kind ~= "var" then
        from = lhs_instance(eg, rule.pats[1], r, raw[i])
      end
      unite(from, id)
    end
  end
  if xpairs and #xpairs > 0 then
    eg.xwhy = 2 + rule.xindex
    local ok, err = pcall(S.union_many, eg, fname, xpairs)
    eg.xwhy = nil
    if not ok then error(err, 0) end
  end
  return 0
end

return AP
