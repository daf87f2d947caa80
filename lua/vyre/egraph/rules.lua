-- vyre.egraph.rules — rewrite rules written as S-expressions (docs/EGRAPH.md, "Rules"),
-- parsed and checked against the e-graph's ops once, when eg:rule is called.
--
--   pattern  := ?var | (Op pattern...) | (Leaf payload)
--   payload  := integer | ?var                          (left-hand side)
--   payload  := integer | ?var | (+ p p) | (- p p) | (* p p) | (neg p)   (right-hand side)
--   when     := (== e e) | (!= e e) | (< e e) | (<= e e) | (> e e) | (>= e e)
--               | (and w w ...) | (or w w ...) | (not w);  e := ?var | integer | (+ e e) ...
--               | analyses: (const ?x) (const? ?x) (value NAME ?x) (has NAME ?x), and of a
--               "set" analysis (member NAME ?x k) (empty NAME ?x) (size NAME ?x)
--               (subset NAME ?x ?y) (disjoint NAME ?x ?y)
--
-- A variable under an op of arity >= 1 stands for an e-class (a "class" variable); the
-- variable of a leaf's payload stands for the 64-bit payload (a "payload" variable).
-- A rule's left-hand side is one pattern or a list of patterns (a multi-pattern rule,
-- whose patterns share variables). Its right-hand side is one pattern (united with the
-- root of the first left pattern) or a list of {term, term} pairs to unite.
local S = require("vyre.egraph.store")
local P = require("vyre.egraph.payload")

local R = {}

-- The payload type of each payload variable of a rule, kept beside its vars table.
local TYPES = setmetatable({}, { __mode = "k" })
function R.types(vars)
  local t = TYPES[vars]
  if not t then
    t = {}
    TYPES[vars] = t
  end
  return t
end

local function tokenize(fname, text)
  local toks, i, n = {}, 1, #text
  while i <= n do
    local c = text:sub(i, i)
    if c:match("%s") then
      i = i + 1
    elseif c == "(" or c == ")" then
      toks[#toks + 1] = c
      i = i + 1
    else
      local j = i
      while j <= n and not text:sub(j, j):match("[%s()]") do j = j + 1 end
      toks[#toks + 1] = text:sub(i, j - 1)
      i = j
    end
  end
  if #toks == 0 then
    S.raise(fname, "an empty pattern", "write a pattern such as \"(Add ?a ?b)\"")
  end
  return toks
end

--- Parses one S-expression into nested Lua lists of atoms (strings).
function R.sexp(fname, text)
  if type(text) ~= "string" then
    S.raise(fname, ("a pattern must be a string, got %s"):format(type(text)),
      "write patterns as S-expressions such as \"(Add ?a ?b)\"")
  end
  local toks, pos = tokenize(fname, text), 1
  local function item()
    local t = toks[pos]
    if t == nil then
      S.raise(fname, ("'%s' ends early (a ')' is missing)"):format(text), "close every '('")
    end
    pos = pos + 1
    if t == ")" then
      S.raise(fname, ("'%s' has an unexpected ')'"):format(text), "balance the parentheses")
    end
    if t ~= "(" then return t end
    local list = {}
    while toks[pos] ~= ")" do
      if toks[pos] == nil then
        S.raise(fname, ("'%s' ends early (a ')' is missing)"):format(text), "close every '('")
      end
      list[#list + 1] = item()
    end
    pos = pos + 1
    return list
  end
  local v = item()
  if pos <= #toks then
    S.raise(fname, ("'%s' has text after the pattern"):format(text),
      "write one pattern per string")
  end
  return v
end

local function is_var(a) return type(a) == "string" and a:match("^%?[%a_][%w_]*$") ~= nil end
local function is_int(a) return type(a) == "string" and math.tointeger(tonumber(a)) ~= nil end

local ARITH = { ["+"] = 2, ["-"] = 2, ["*"] = 2, neg = 1, ["/"] = 2 }
local CMP = { ["=="] = "eq", ["!="] = "ne", ["<"] = "lt", ["<="] = "le", [">"] = "gt",
  [">="] = "ge" }

-- A payload expression: {kind="int", value} | {kind="num", value} | {kind="pvar", name}
-- | {kind="arith", fn, args}, each with ty, the type it computes in ("i64" or "f64").
-- pt is the payload type of the leaf op it stands under (payload.lua): a literal is read
-- as that type; on the right-hand side, arithmetic computes in it.
local function payload(fname, eg, s, side, vars, text, pt, inner)
  local ty = P.arith(pt)
  if not inner and type(s) == "string" and not is_var(s) then
    local bits = P.literal(eg, pt, s)
    if bits then return { kind = "int", value = bits, ty = ty, bits = true } end
  elseif inner and type(s) == "string" and tonumber(s) and not is_var(s) then
    if ty == "f64" then return { kind = "num", value = tonumber(s) + 0.0, ty = "f64" } end
    if is_int(s) then return { kind = "int", value = math.tointeger(tonumber(s)), ty = "i64" } end
  end
  if is_var(s) then
    local name = s:sub(2)
    local types = R.types(vars)
    if side == "lhs" then
      if vars[name] and vars[name] ~= "payload" then
        S.raise(fname, ("'%s' uses ?%s both as an e-class and as a payload"):format(text, name),
          "use different variable names")
      end
      if types[name] and types[name] ~= pt then
        S.raise(fname, ("'%s' uses payload variable ?%s under leaves of types %s and %s")
          :format(text, name, types[name], pt), "use different variable names")
      end
      vars[name] = "payload"
      types[name] = pt
    elseif vars[name] ~= "payload" then
      S.raise(fname, ("'%s' uses payload variable ?%s, which the left-hand side does not bind as a "
        .. "payload"):format(text, name), "bind it under a leaf op on the left, e.g. (Const ?x)")
    end
    return { kind = "pvar", name = name, ty = P.arith(types[name]), pt = types[name] }
  end
  if side == "rhs" and type(s) == "table" and ARITH[s[1]] and #s == ARITH[s[1]] + 1
    and (s[1] ~= "/" or ty == "f64") then
    local args = {}
    for k = 2, #s do args[k - 1] = payload(fname, eg, s[k], side, vars, text, pt, true) end
    return { kind = "arith", fn = s[1], args = args, ty = ty }
  end
  S.raise(fname, ("'%s': a leaf's payload must be %s or a ?variable%s"):format(text,
    pt == "f64" and "a number" or pt == "sym" and "a symbol" or "an integer",
    side == "rhs" and (" or (+ a b), (- a b), (* a b), (neg a)" .. (ty == "f64"
    and ", (/ a b)" or "")) or ""), "write e.g. (Const 0) or (Const ?x)")
end

-- A term: {kind="var", name} | {kind="node", op, args} | {kind="leaf", op, payload}
local function term(fname, eg, s, side, vars, text)
  if is_var(s) then
    local name = s:sub(2)
    if side == "lhs" then
      if vars[name] == "payload" then
        S.raise(fname, ("'%s' uses ?%s both as an e-class and as a payload"):format(text, name),
          "use different variable names")
      end
      vars[name] = "class"
    elseif vars[name] ~= "class" then
      S.raise(fname, ("'%s' uses ?%s, which no left-hand pattern binds to an e-class"):format(
        text, name), "use only variables bound by the left-hand side")
    end
    return { kind = "var", name = name }
  end
  if type(s) ~= "table" or type(s[1]) ~= "string" then
    S.raise(fname, ("'%s': expected a ?variable or (Op ...), got %s"):format(text,
      type(s) == "table" and "a list" or ("'" .. tostring(s) .. "'")),
      "write terms such as (Add ?a (Const 1))")
  end
  local op = eg.reg.byname[s[1]]
  if not op then
    S.raise(fname, ("'%s' uses unknown op '%s'"):format(text, s[1]),
      ("register it first with eg:op(\"%s\", arity)"):format(s[1]))
  end
  local arity = eg.reg.arity[op + 1]
  if arity == 0 then
    if #s ~= 2 then
      S.raise(fname, ("'%s': leaf op '%s' takes one payload"):format(text, s[1]),
        ("write (%s 0) or (%s ?x)"):format(s[1], s[1]))
    end
    return { kind = "leaf", op = op, payload = payload(fname, eg, s[2], side, vars, text,
      P.type_of(eg, op)) }
  end
  if #s - 1 ~= arity then
    S.raise(fname, ("'%s': '%s' takes %d children, got %d"):format(text, s[1], arity, #s - 1),
      ("give '%s' %d arguments"):format(s[1], arity))
  end
  local args = {}
  for k = 2, #s do args[k - 1] = term(fname, eg, s[k], side, vars, text) end
  return { kind = "node", op = op, args = args }
end

-- A guard expression over bound variables, each node with ty, the type it computes in
-- ("i64", "f64" or "bool"): an operation computes in f64 when an operand does.
local function guard(fname, eg, s, vars, text)
  if is_int(s) then return { kind = "int", value = math.tointeger(tonumber(s)), ty = "i64" } end
  if type(s) == "string" and not is_var(s) and tonumber(s) then
    return { kind = "num", value = tonumber(s) + 0.0, ty = "f64" }
  end
  if is_var(s) then
    local name = s:sub(2)
    if not vars[name] then
      S.raise(fname, ("when '%s' uses ?%s, which the left-hand side does not bind"):format(text,
        name), "use variables of the left-hand side")
    end
    if vars[name] == "class" then return { kind = "cvar", name = name, ty = "i64" } end
    local pt = R.types(vars)[name]
    return { kind = "pvar", name = name, ty = P.arith(pt), pt = pt }
  end
  if type(s) == "table" and (s[1] == "const" or s[1] == "const?") and #s == 2
    and is_var(s[2]) then
    -- the constant analysis of a class variable's e-class (analysis.lua)
    local name = s[2]:sub(2)
    if vars[name] ~= "class" then
      S.raise(fname, ("when '%s': (%s ?%s) needs an e-class variable of the left-hand side")
        :format(text, s[1], name), "apply const to a variable bound under an op, e.g. (Div ?a ?b)")
    end
    local ty = eg.an_spec and P.arith(P.type_of(eg, eg.an_spec.leaf)) or "i64"
    return { kind = s[1] == "const" and "aval" or "ahas", name = name,
      ty = s[1] == "const" and ty or "bool" }
  end
  local preds = require("vyre.egraph.uset").PREDS
  if type(s) == "table" and preds[s[1]] then
    -- a "set" analysis's predicates (uset.lua), on the device: (member NAME ?x k),
    -- (empty NAME ?x), (size NAME ?x), (subset NAME ?x ?y), (disjoint NAME ?x ?y)
    local f = s[1]
    local nset = preds[f]
    local form = f == "member" and "(member NAME ?x k)" or nset == 2
      and ("(%s NAME ?x ?y)"):format(f) or ("(%s NAME ?x)"):format(f)
    if #s ~= 2 + nset + (f == "member" and 1 or 0) or type(s[2]) ~= "string" then
      S.raise(fname, ("when '%s': (%s ...) takes %d operands, got %d"):format(text, f,
        1 + nset + (f == "member" and 1 or 0), #s - 1), ("write %s: NAME a \"set\" analysis, "
        .. "?x%s e-class variables"):format(form, nset == 2 and " and ?y" or ""))
    end
    local an = eg.analyses and eg.analyses[s[2]]
    if not an then
      S.raise(fname, ("when '%s' reads analysis '%s', which the e-graph does not have"):format(
        text, s[2]), "declare it first with eg:analysis(name, {type = \"set\", make =})")
    end
    if an.ty ~= "set" then
      S.raise(fname, ("when '%s': (%s %s ...) needs a \"set\" analysis; '%s' is of type "
        .. "\"%s\""):format(text, f, s[2], s[2], an.ty),
        ("read a scalar with (value %s ?x)%s"):format(s[2], an.ty == "const"
          and (" and (has %s ?x)"):format(s[2]) or ""))
    end
    local names = {}
    for i = 1, nset do
      local v = s[2 + i]
      if not is_var(v) or vars[v:sub(2)] ~= "class" then
        S.raise(fname, ("when '%s': %s needs an e-class variable of the left-hand side as "
          .. "operand %d, got %s"):format(text, form, i + 1, type(v) == "string" and v
          or "an expression"), "apply it to a variable bound under an op, e.g. ?e in "
          .. "(Let ?v ?e ?b)")
      end
      names[i] = v:sub(2)
    end
    local args = {}
    if f == "member" then
      args[1] = guard(fname, eg, s[#s], vars, text)
      if args[1].ty ~= "i64" then
        S.raise(fname, ("when '%s': (member NAME ?x k) needs an i64 symbol number k, got a "
          .. "%s expression"):format(text, args[1].ty), "pass a symbol's number: a payload "
          .. "variable of a \"sym\" leaf, (value NAME ?v) of an i64 analysis, or an integer")
      end
    end
    return { kind = "sop", fn = f, an = s[2], rec = an, names = names, args = args,
      ty = f == "size" and "i64" or "bool" }
  end
  if type(s) == "table" and (s[1] == "value" or s[1] == "has") and #s == 3 and is_var(s[3]) then
    -- a user analysis's value (uanalysis.lua)
    local name = s[3]:sub(2)
    local an = eg.analyses and eg.analyses[s[2]]
    if not an then
      S.raise(fname, ("when '%s' reads analysis '%s', which the e-graph does not have"):format(
        text, tostring(s[2])), "declare it first with eg:analysis(name, {type =, make =, "
        .. "merge =})")
    end
    if vars[name] ~= "class" then
      S.raise(fname, ("when '%s': (value %s ?%s) needs an e-class variable of the left-hand "
        .. "side"):format(text, s[2], name), "apply it to a variable bound under an op")
    end
    if s[1] == "has" and an.ty ~= "const" then
      S.raise(fname, ("when '%s': (has %s ?%s) needs a \"const\" analysis"):format(text, s[2],
        name), ("read the value with (value %s ?%s)"):format(s[2], name))
    end
    if an.ty == "set" then
      S.raise(fname, ("when '%s': (%s %s ?%s) reads \"set\" analysis '%s', which has no "
        .. "single value"):format(text, s[1], s[2], name, s[2]), ("test the set: (member %s ?%s "
        .. "k), (empty %s ?%s), (size %s ?%s), (subset %s ?%s ?y) or (disjoint %s ?%s ?y)")
        :format(s[2], name, s[2], name, s[2], name, s[2], name, s[2], name))
    end
    local ty = an.ty == "const" and an.of or an.ty
    if s[1] == "has" then
      return { kind = "uhas", an = s[2], name = name, ty = "bool", const = true }
    end
    return { kind = "uval", an = s[2], name = name, ty = ty, const = an.ty == "const" }
  end
  if type(s) == "table" then
    local f = s[1]
    if CMP[f] and #s == 3 or ARITH[f] and #s == ARITH[f] + 1 or (f == "and" or f == "or")
      and #s >= 3 or f == "not" and #s == 2 then
      local args = {}
      local ty = "i64"
      for k = 2, #s do
        args[k - 1] = guard(fname, eg, s[k], vars, text)
        if args[k - 1].ty == "f64" then ty = "f64" end
      end
      if f == "/" and ty ~= "f64" then
        S.raise(fname, ("when '%s' divides integers"):format(text),
          "divide f64 values only (payloads of an f64 leaf op, or a number literal)")
      end
      local kind = CMP[f] and "cmp" or ARITH[f] and "arith" or "logic"
      return { kind = kind, fn = f, args = args, ty = kind == "arith" and ty or "bool" }
    end
  end
  S.raise(fname, ("when '%s' is not a predicate this compiler knows"):format(text),
    "use (== a b) (!= a b) (< a b) (<= a b) (> a b) (>= a b), and/or/not, + - * / neg, "
    .. "?vars, numbers, (const ?x), (const? ?x), (value NAME ?x), (has NAME ?x) and a set's "
    .. "(member NAME ?x k), (empty NAME ?x), (size NAME ?x), (subset NAME ?x ?y), "
    .. "(disjoint NAME ?x ?y); or pass a Lua function "
    .. "as opts.guard")
end

-- Refuses a left-hand side whose matching kernels vyre cannot compile (match.lua,
-- "How deep a pattern may be"), with the limit, rather than at eg:run. The kernels are
-- built as the search builds them: `when` on the device for a single pattern, a flag
-- column for a multi-pattern or guarded rule.
local function check_depth(fname, pats, texts, when, guarded)
  local match = require("vyre.egraph.match")
  local single = #pats == 1
  if pats[1].kind == "var" then return end -- one small kernel of its own (match.var_text)
  local function short(t) return #t <= 60 and t or (t:sub(1, 57) .. "...") end
  for i, pat in ipairs(pats) do
    local dev_when = single and when or nil
    local levels = match.levels(pat, dev_when)
    local fix = ("write a shallower pattern: a chain of one-child ops may be %d ops deep "
      .. "(each nested sub-pattern costs 2 of the %d statement levels, each repeated "
      .. "variable, literal payload or when-test 1, the kernel itself %d); split a deeper "
      .. "rewrite into several rules through an intermediate op"):format(match.MAX_CHAIN,
      match.MAX_NESTING, match.OWN_LEVELS)
    if levels > match.MAX_NESTING then
      S.raise(fname, ("left-hand pattern '%s' is too deep to match on the device: its "
        .. "matching kernel would nest %d statement levels, more than vyre's limit of %d")
        :format(short(texts[i]), levels, match.MAX_NESTING), fix)
    end
    local problem = match.problem(pat, dev_when, not single or guarded)
    if problem then
      S.raise(fname, ("left-hand pattern '%s' cannot be matched on the device: its "
        .. "matching kernel is not a valid program (%s)"):format(short(texts[i]), problem),
        "write a shallower pattern or a shorter when predicate")
    end
  end
end

--- Parses and checks a rule; returns the rule record.
function R.compile(eg, fname, name, lhs, rhs, opts)
  if type(name) ~= "string" or name == "" then
    S.raise(fname, "argument 1 (name) must be a non-empty string",
      "name the rule, e.g. \"comm-add\"")
  end
  opts = opts or {}
  if type(opts) ~= "table" then
    S.raise(fname, "argument 4 (opts) must be a table", "pass {when = ..., guard = ...} or nothing")
  end
  for k in pairs(opts) do
    if k ~= "when" and k ~= "guard" and k ~= "ruleset" and k ~= "subsume" then
      S.raise(fname, ("unknown option '%s'"):format(tostring(k)), "use when = \"(!= ?a ?b)\", "
        .. "guard = function(s) ... end, ruleset = \"name\" or subsume = true")
    end
  end
  if opts.subsume ~= nil and type(opts.subsume) ~= "boolean" then
    S.raise(fname, "opts.subsume must be a boolean", "pass subsume = true or leave it out")
  end
  if opts.subsume and (type(lhs) == "table" and #lhs ~= 1 or opts.guard ~= nil) then
    S.raise(fname, "subsume = true needs a rule of one left-hand pattern without a Lua guard",
      "subsume in a rule of one pattern (a `when` predicate is fine), or call eg:subsume(term)")
  end
  local vars = {}
  local lhs_list = type(lhs) == "table" and lhs or { lhs }
  if #lhs_list == 0 then
    S.raise(fname, "the left-hand side has no pattern", "pass a pattern or a list of patterns")
  end
  local pats = {}
  for i, text in ipairs(lhs_list) do
    local t = term(fname, eg, R.sexp(fname, text), "lhs", vars, text)
    if t.kind == "var" and (#lhs_list > 1 or opts.subsume) then
      -- a single bare variable matches every e-class (egg's `?a => (+ ?a 0)`)
      S.raise(fname, ("left-hand pattern '%s' is a bare variable in a %s"):format(text,
        opts.subsume and "rule with subsume = true" or "multi-pattern rule"),
        "match an op at the root, e.g. (Add ?a ?b); a bare ?a is a rule of one pattern")
    end
    pats[i] = t
  end
  local unions, applier = {}, nil
  if type(rhs) == "function" then
    applier = rhs -- a Lua applier (applier.lua), run on the host per match
  elseif type(rhs) == "string" then
    unions[1] = { { kind = "root" }, term(fname, eg, R.sexp(fname, rhs), "rhs", vars, rhs) }
  elseif type(rhs) == "table" and #rhs > 0 then
    for i, pr in ipairs(rhs) do
      if type(pr) ~= "table" or #pr ~= 2 then
        S.raise(fname, ("right-hand side entry %d is not a pair {term, term}"):format(i),
          "pass a pattern string or {{\"?a\", \"(F ?b)\"}, ...}")
      end
      unions[i] = { term(fname, eg, R.sexp(fname, pr[1]), "rhs", vars, pr[1]),
        term(fname, eg, R.sexp(fname, pr[2]), "rhs", vars, pr[2]) }
    end
  else
    S.raise(fname, ("argument 3 (rhs) must be a pattern string, a list of pairs or a Lua "
      .. "function (an applier), got %s"):format(type(rhs)), "pass e.g. \"(Add ?b ?a)\"")
  end
  local when
  if opts.when ~= nil then
    if type(opts.when) ~= "string" then
      S.raise(fname, "opts.when must be a string predicate", "e.g. when = \"(!= ?x 0)\"")
    end
    when = guard(fname, eg, R.sexp(fname, opts.when), vars, opts.when)
    if R.uses_analysis(when) then
      if not eg.an_spec then
        S.raise(fname, ("when '%s' reads the constant analysis, which the e-graph does not "
          .. "have"):format(opts.when), "declare it first with eg:analysis(\"const\", {...})")
      end
    end
    if R.uses_analysis(when) or next(R.values_read(when)) then
      if #lhs_list ~= 1 then
        S.raise(fname, ("when '%s' reads an analysis in a multi-pattern rule")
          :format(opts.when),
          "read analyses ((const ?x), (value NAME ?x)) in rules of one left-hand pattern")
      end
    end
    -- the set analyses read: the device kernels hold their words (match.when_sig)
    local sets = {}
    R.sets_read(when, sets)
    if #sets > 0 then when.sets = sets end
  end
  if opts.guard ~= nil and type(opts.guard) ~= "function" then
    S.raise(fname, "opts.guard must be a function(s) -> boolean",
      "pass a Lua function of the substitution")
  end
  check_depth(fname, pats, lhs_list, when, opts.guard ~= nil)
  local names = {}
  for v in pairs(vars) do names[#names + 1] = v end
  table.sort(names)
  return { name = name, lhs = lhs_list, rhs = rhs, pats = pats, unions = unions, vars = vars,
    varnames = names, when = when, when_text = opts.when, guard = opts.guard, applier = applier,
    subsume = opts.subsume or nil }
end

--- Parses a pattern for eg:search and eg:lookup: returns the pattern record and its
--- variables {name = "class" | "payload"}; ground = true refuses variables.
function R.pattern(eg, fname, text, ground)
  local vars = {}
  local t = term(fname, eg, R.sexp(fname, text), "lhs", vars, text)
  if t.kind == "var" then
    S.raise(fname, ("pattern '%s' is a bare variable"):format(text),
      "match an op at the root, e.g. (Add ?a ?b)")
  end
  if ground and next(vars) then
    S.raise(fname, ("term '%s' has variables"):format(text),
      "pass a term without ?variables (use eg:search for patterns)")
  end
  check_depth(fname, { t }, { text }, nil, false)
  return t, vars
end

--- The user analyses expression e reads ((value NAME ?x), (has NAME ?x)), as a table
--- {NAME = true when a "const" analysis (its state buffer is read too), else false}.
function R.values_read(e, out)
  out = out or {}
  if not e then return out end
  if e.kind == "uval" or e.kind == "uhas" or e.kind == "sop" then
    out[e.an] = out[e.an] or e.const or false
  end
  for _, a in ipairs(e.args or {}) do R.values_read(a, out) end
  return out
end

--- Appends to out the "set" analysis records expression e's set predicates read.
function R.sets_read(e, out)
  if not e then return out end
  if e.kind == "sop" then out[#out + 1] = e.rec end
  for _, a in ipairs(e.args or {}) do R.sets_read(a, out) end
  return out
end

--- true when expression e reads the constant analysis ((const ?x) or (const? ?x)).
function R.uses_analysis(e)
  if not e then return false end
  if e.kind == "aval" or e.kind == "ahas" then return true end
  for _, a in ipairs(e.args or {}) do
    if R.uses_analysis(a) then return true end
  end
  return false
end

--- Evaluates a payload/guard expression in Lua (host guards, the oracle): env maps
--- variable names to integers (class ids or payloads).
function R.eval(e, env)
  local k = e.kind
  if k == "int" or k == "num" then return e.value end
  if k == "cvar" then return env[e.name] end
  if k == "pvar" then
    local v = env[e.name]
    if e.pt == "f64" and math.type(v) == "integer" then return P.bits_f64(v) end
    return v
  end
  local a = {}
  for i, x in ipairs(e.args) do a[i] = R.eval(x, env) end
  local f = e.fn
  if f == "+" then return a[1] + a[2] end
  if f == "-" then return a[1] - a[2] end
  if f == "*" then return a[1] * a[2] end
  if f == "neg" then return -a[1] end
  if f == "/" then return a[1] / a[2] end
  if f == "==" then return a[1] == a[2] end
  if f == "!=" then return a[1] ~= a[2] end
  if f == "<" then return a[1] < a[2] end
  if f == "<=" then return a[1] <= a[2] end
  if f == ">" then return a[1] > a[2] end
  if f == ">=" then return a[1] >= a[2] end
  if f == "not" then return not a[1] end
  if f == "and" then
    for _, v in ipairs(a) do if not v then return false end end
    return true
  end
  for _, v in ipairs(a) do if v then return true end end
  return false
end

return R
