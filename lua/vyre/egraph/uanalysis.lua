-- vyre.egraph.uanalysis — user-defined e-class analyses on the device (docs/EGRAPH.md,
-- "User analyses").
--
--   eg:analysis("fv", {type = "i64", bottom = -1,
--     make = {Sym = "(bit payload)", Var = "(child 0)", Lam = "(band (child 1) (bnot (child 0)))"},
--     merge = "(band a b)",
--     modify = {leaf = "Op", when = "(...v...)", payload = "(...v...)", prune = false}})
--
-- Each e-class holds one value of the analysis's type (i64, f64, bool or const), as a 64-bit
-- word per id (the f64's bits, 0 or 1 for bool). `make` gives, per op, the value of one
-- e-node from its payload and its children's values; `merge` joins two values; `bottom`
-- is the value of a class before any make (merge's unit). make and merge are written in
-- a small expression language (below), compiled to one vyre sweep kernel per analysis and
-- to Lua closures (the specs' oracle, eg:value's checks and the join-law spec).
--
-- Like the constant analysis (analysis.lua) the values are recomputed on every rebuilt
-- graph by Jacobi sweeps (Kleene iteration from bottom): each canonical class becomes
-- the merge of bottom and the makes of its rows, from the previous sweep's values,
-- double-buffered, until a sweep changes no word. Unlike the constant analysis the
-- previous value is not joined in: a make may be antitone in a child whose value is fixed
-- (the free-variable analysis removes a binder's symbol, (bnot (child 0))), and joining
-- the first sweep's guess for that child would keep a wrong value for ever. When merge is
-- a join of a lattice of finite height and each make is monotone in the children whose
-- values still change, the sweeps climb and end; the rows are visited in a fixed order,
-- so the values are the same on both backends. Otherwise (a counter, a make that
-- flips) they may not settle: the sweeps stop with an error after 2 * ids + 256 of them.
--
-- The expression language (S-expressions):
--   literals   integers (i64), numbers with a point or exponent (f64), true, false
--   variables  a, b (merge's operands), v (modify's value), payload (the leaf's payload:
--              i64, f64, or a symbol's number), (child k) (child k's value)
--   arithmetic (+ x y) (- x y) (* x y) (/ x y) (neg x) (min x y) (max x y): i64 wraps;
--              an operation with an f64 operand computes in f64; / only in f64
--   bits       (band x y) (bor x y) (bxor x y) (bnot x) (shl x k) (shr x k) (sar x k)
--              (bit k) = 1 << k, shift counts taken mod 64 (shr logical, sar arithmetic)
--   logic      (== x y) (!= x y) (< x y) (<= x y) (> x y) (>= x y) (and ...) (or ...) (not x)
--   other      (if c x y), (f64 x), (i64 x) (f64 -> i64 truncates)
--   analyses   (get NAME k), (get NAME self) (make only): analysis NAME's value of child k
--              or of the e-node's own class; NAME an analysis declared before this one
--              (declaration order is the dependency order: no cycles; compute_all runs
--              them in it on each rebuilt graph). A "const" NAME gives a constant (read
--              with one? and val, in a make of any type), a "set" NAME a set operand
--   sets       (member S k) (size S) (empty S) (subset S T) (disjoint S T): S, T a "set"
--              analysis's (get NAME k) or, in its own modify, v (uset.lua's pred_code)
--   constants  (type "const"; one? and val anywhere) none, (one x), (one? c), (val c): the
--              none < one(x) <
--              conflict lattice of the built-in analysis, with its join and bottom none;
--              stored as a state word and a value word per id, and (unlike the other
--              types) the previous value is joined in at every sweep, as analysis.lua's
--
-- type "set" (sets of symbols in several words per id) is uset.lua's.
-- modify is one table {leaf, when, payload, prune} or a list of them: each adds the leaf
-- (leaf payload(v)) to the classes where when(v) holds (analysis.lua's constant folding
-- shares UA.rounds, UA.flags and UA.add_flagged), then prune keeps only their leaves.
local U = require("vyre.lib.util")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)
local Err = require("vyre.errors")
local scan = require("vyre.lib.scan")
local S = require("vyre.egraph.store")
local P = require("vyre.egraph.payload")

local UA = {}

local TYPES = { i64 = true, f64 = true, bool = true, const = true, set = true }
local US = require("vyre.egraph.uset")
local BIN = { ["+"] = "add", ["-"] = "sub", ["*"] = "mul", ["/"] = "div", min = "min",
  max = "max", band = "and", bor = "or", bxor = "xor", ["=="] = "eq", ["!="] = "ne",
  ["<"] = "lt", ["<="] = "le", [">"] = "gt", [">="] = "ge" }
local CMP = { ["=="] = true, ["!="] = true, ["<"] = true, ["<="] = true, [">"] = true,
  [">="] = true }
local BITS = { band = true, bor = true, bxor = true, bnot = true, shl = true, shr = true,
  sar = true, bit = true }

-- Parsing ------------------------------------------------------------------------------

local function sexp(fname, text, what)
  if type(text) == "number" or type(text) == "boolean" then return tostring(text) end
  if type(text) ~= "string" then
    S.raise(fname, ("%s must be an expression string, got %s"):format(what, type(text)),
      "write it as an S-expression, e.g. \"(bor a b)\"")
  end
  return require("vyre.egraph.rules").sexp(fname, text)
end

-- Parses expression s into a typed tree {kind, ty, ...}. env: {a = ty, b = ty, v = ty,
-- child = ty or nil, payload = ty or nil}.
local function parse(fname, s, env, what, text)
  local function bad(msg, fix)
    S.raise(fname, ("%s '%s': %s"):format(what, text, msg), fix or
      "see docs/EGRAPH.md, \"User analyses\", for the expression language")
  end
  if type(s) == "string" then
    if s == "true" or s == "false" then
      return { kind = "lit", ty = "bool", value = s == "true" }
    end
    if s == "none" and env.of then return { kind = "none", ty = "const", of = env.of } end
    local n = tonumber(s)
    if n then
      if math.type(n) == "integer" and not s:find("[%.eEpP]") then
        return { kind = "lit", ty = "i64", value = n }
      end
      if math.type(n) == "integer" then n = n + 0.0 end
      if n ~= n then bad("NaN is not a value") end
      return { kind = "lit", ty = "f64", value = n }
    end
    if env[s] and s ~= "child" then
      return { kind = "var", ty = env[s], name = s, of = env[s] == "const" and env.of or nil }
    end
    bad(("unknown name '%s'"):format(s), ("use %s, literals and (child k)"):format(
      table.concat((function()
        local t = {}
        for k in pairs(env) do if k ~= "child" then t[#t + 1] = k end end
        table.sort(t)
        return t
      end)(), ", ")))
  end
  if type(s) ~= "table" or type(s[1]) ~= "string" then bad("expected (op args...)") end
  local f = s[1]
  if f == "child" then
    local k = #s == 2 and math.tointeger(tonumber(s[2]))
    if not env.child then bad("(child k) is only for make") end
    if not k or k < 0 or k >= env.arity then
      bad(("(child k) needs k in [0, %d) for this op"):format(env.arity),
        "number the children from 0")
    end
    return { kind = "child", ty = env.child, k = k, of = env.child == "const" and env.of or nil }
  end
  if f == "get" then
    -- (get NAME k) / (get NAME self): an analysis declared before this one (the order of
    -- declaration is the dependency order, so the reads form a DAG and cannot cycle)
    if not env.deps then bad("(get NAME k) is only for make",
      "read another analysis in a make; in modify, v is this analysis's value") end
    local dep = type(s[2]) == "string" and env.deps.lookup(s[2])
    if #s ~= 3 or type(s[2]) ~= "string" then bad("(get NAME k) takes an analysis name and "
      .. "a child number k (or self)") end
    if not dep then
      bad(("(get %s ...) names no analysis declared before this one"):format(s[2]),
        "declare the analysis it reads first (reads must not form a cycle; an analysis "
        .. "cannot read itself: use (child k))")
    end
    local k = US.get_child(s, env, bad)
    env.deps.used[dep.name] = true
    -- a "const" dep is a pair (read with one? and val), a "set" dep a set operand (read
    -- with member, size, empty, subset, disjoint): rec gives its words when the text is made
    return { kind = "get", ty = dep.ty, dep = dep.name, k = k, of = dep.of, rec = dep }
  end
  local args = {}
  for i = 2, #s do args[i - 1] = parse(fname, s[i], env, what, text) end
  local n = #args
  -- sets (a "set" analysis read with (get NAME k), or modify's v): predicates only
  if US.PREDS[f] then
    local want_n = US.PREDS[f] + (f == "member" and 1 or 0)
    if n ~= want_n then
      bad(("(%s ...) takes %d operands, got %d"):format(f, want_n, n), f == "member"
        and "write (member S k): a set S and a symbol number k"
        or ("write (%s S%s) over sets"):format(f, US.PREDS[f] == 2 and " T" or ""))
    end
    for i = 1, US.PREDS[f] do
      if args[i].ty ~= "set" then
        bad(("(%s ...) needs a set as operand %d, got a %s value"):format(f, i, args[i].ty),
          "pass (get NAME k) or (get NAME self) of a \"set\" analysis (or v in its modify)")
      end
    end
    if f == "member" and args[2].ty ~= "i64" then
      bad(("(member S k) needs an i64 symbol number k, got a %s value"):format(args[2].ty),
        "pass a symbol's number: payload, an i64 analysis's (get NAME k), or a literal")
    end
    return { kind = "spred", fn = f, ty = f == "size" and "i64" or "bool", args = args }
  end
  for _, a in ipairs(args) do
    if a.ty == "set" then
      bad(("(%s ...) takes values, not sets"):format(f), "test a set with (member S k), "
        .. "(size S), (empty S), (subset S T) or (disjoint S T)")
    end
  end
  -- the constant lattice (type "const"): none, (one x), (one? c), (val c); one? and val
  -- also read a "const" analysis (get NAME k) in a make of any type
  if env.of and f == "one" or f == "one?" or f == "val" then
    if n ~= 1 then bad(("(%s x) takes 1 operand, got %d"):format(f, n)) end
    if f == "one" then
      if args[1].ty == "const" or args[1].ty == "bool" then bad("(one x) needs a number x") end
      return { kind = "one", ty = "const", of = env.of, args = args }
    end
    if args[1].ty ~= "const" then
      bad(("(%s c) needs a constant c, got a %s value"):format(f, args[1].ty),
        "pass (get NAME k) of a \"const\" analysis (or, in one, (child k) or v)")
    end
    return { kind = f == "one?" and "isone" or "val", ty = f == "one?" and "bool"
      or args[1].of, args = args }
  end
  if f == "if" and n == 3 and (args[2].ty == "const" or args[3].ty == "const") then
    for i = 2, 3 do
      if args[i].ty ~= "const" then
        if args[i].ty == "bool" or not env.of then bad("(if c x y) needs x and y of one type") end
        args[i] = { kind = "one", ty = "const", of = env.of, args = { args[i] } }
      end
    end
    if args[2].of ~= args[3].of then
      bad("(if c x y) needs constants x and y of one value type (i64 or f64)",
        "read the value with (val c) and make a constant of this analysis's type with (one x)")
    end
    return { kind = "if", ty = "const", of = args[2].of, args = args }
  end
  for _, a in ipairs(args) do
    if a.ty == "const" then
      bad(("(%s ...) takes values, not constants"):format(f),
        "read a constant with (val c) and (one? c), and make one with (one x) or none")
    end
  end
  local function want(cnt)
    if n ~= cnt then bad(("(%s ...) takes %d operands, got %d"):format(f, cnt, n)) end
  end
  if f == "if" then
    want(3)
    local ty = args[2].ty
    if args[3].ty ~= ty then
      if ty == "bool" or args[3].ty == "bool" then bad("(if c x y) needs x and y of one type") end
      ty = "f64"
    end
    return { kind = "if", ty = ty, args = args }
  end
  if f == "and" or f == "or" then
    if n < 2 then bad(("(%s ...) takes 2 or more operands"):format(f)) end
    return { kind = "logic", fn = f, ty = "bool", args = args }
  end
  if f == "not" then
    want(1)
    return { kind = "logic", fn = f, ty = "bool", args = args }
  end
  if f == "f64" or f == "i64" then
    want(1)
    return { kind = "conv", ty = f, args = args }
  end
  if f == "neg" or f == "bnot" or f == "bit" then
    want(1)
    local ty = f == "neg" and args[1].ty or "i64"
    if f ~= "neg" and args[1].ty ~= "i64" then bad(("(%s x) needs an i64 operand"):format(f)) end
    return { kind = "un", fn = f, ty = ty == "bool" and "i64" or ty, args = args }
  end
  if BIN[f] or f == "shl" or f == "shr" or f == "sar" then
    want(2)
    local ty = (args[1].ty == "f64" or args[2].ty == "f64") and "f64" or "i64"
    if BITS[f] and ty == "f64" then bad(("(%s x y) needs i64 operands"):format(f)) end
    if f == "/" and ty ~= "f64" then bad("(/ x y) divides f64 values only",
      "convert with (f64 x), or use f64 values") end
    return { kind = CMP[f] and "cmp" or "bin", fn = f, ty = CMP[f] and "bool" or ty,
      opty = ty, args = args }
  end
  bad(("unknown operation '%s'"):format(f))
end

-- Code generation (vyre text) ----------------------------------------------------------

local conv = require("vyre.egraph.match").conv

local function decode(word, ty)
  if ty == "f64" then return ("(bitcast f64 %s)"):format(word) end
  if ty == "bool" then return ("(ne %s 0i64)"):format(word) end
  return word
end

local function encode(code, ty)
  if ty == "f64" then return ("(bitcast i64 %s)"):format(code) end
  if ty == "bool" then return ("(select %s 1i64 0i64)"):format(code) end
  return code
end
UA.decode, UA.encode = decode, encode

-- The code of expression e; names maps a, b, v, payload to code; child k reads vin.
-- A constant (type "const") is a pair {st = i64 code (0 none, 1 one, 2 conflict),
-- x = code of its value} (x is 0 unless st is 1).
local code
local function pair(e, names)
  local k = e.kind
  if k == "none" then return { st = "0i64", x = names.zero } end
  if k == "one" then
    return { st = "1i64", x = conv(code(e.args[1], names), e.args[1].ty, names.of) }
  end
  if k == "var" then return names[e.name] end
  if k == "child" then
    local c = ("(load children (add o %du32))"):format(e.k)
    return { st = ("(load sin %s)"):format(c), x = decode(("(load vin %s)"):format(c), names.of) }
  end
  if k == "get" then
    -- a "const" analysis read with (get NAME k|self): its state and value buffers
    local at = e.k == "self" and "c" or ("(load children (add o %du32))"):format(e.k)
    return { st = ("(load dep_%s_st %s)"):format(e.dep, at),
      x = decode(("(load dep_%s %s)"):format(e.dep, at), e.of) }
  end
  -- if
  local c = conv(code(e.args[1], names), e.args[1].ty, "bool")
  local a, b = pair(e.args[2], names), pair(e.args[3], names)
  return { st = ("(select %s %s %s)"):format(c, a.st, b.st),
    x = ("(select %s %s %s)"):format(c, a.x, b.x) }
end

-- The set operand ({word, nw}, uset.lua's) of set-typed expression e: a "set" analysis
-- read with (get NAME k|self), its words at the time the text is made, or modify's v.
local function setop(e, names)
  if e.kind == "var" then return names[e.name] end
  local nw = e.rec.words
  local at = e.k == "self" and "c" or ("(load children (add o %du32))"):format(e.k)
  return { nw = nw, word = function(idx)
    return ("(load dep_%s (add (mul %s %du32) %s))"):format(e.dep, at, nw, idx)
  end }
end

function code(e, names)
  local k = e.kind
  if k == "spred" then
    local xs = {}
    for i = 1, US.PREDS[e.fn] do xs[i] = setop(e.args[i], names) end
    local kc = e.fn == "member" and code(e.args[2], names) or nil
    return (US.pred_code(e.fn, xs, kc))
  end
  if k == "isone" then return ("(eq %s 1i64)"):format(pair(e.args[1], names).st) end
  if k == "val" then return pair(e.args[1], names).x end
  if k == "lit" then
    if e.ty == "bool" then return e.value and "true" or "false" end
    if e.ty == "f64" then return P.f64_lit(e.value) end
    return ("%di64"):format(e.value)
  end
  if k == "var" then return names[e.name] end
  if k == "child" then
    return decode(("(load vin (load children (add o %du32)))"):format(e.k), e.ty)
  end
  if k == "get" then
    local at = e.k == "self" and "c" or ("(load children (add o %du32))"):format(e.k)
    return decode(("(load dep_%s %s)"):format(e.dep, at), e.ty)
  end
  if k == "if" and e.ty == "const" then error("a constant pair has no single code") end
  local a = {}
  for i, x in ipairs(e.args or {}) do a[i] = code(x, names) end
  if k == "if" then
    return ("(select %s %s %s)"):format(conv(a[1], e.args[1].ty, "bool"),
      conv(a[2], e.args[2].ty, e.ty), conv(a[3], e.args[3].ty, e.ty))
  end
  if k == "logic" then
    if e.fn == "not" then return ("(lnot %s)"):format(conv(a[1], e.args[1].ty, "bool")) end
    local op = e.fn == "and" and "land" or "lor"
    local s = conv(a[1], e.args[1].ty, "bool")
    for i = 2, #a do s = ("(%s %s %s)"):format(op, s, conv(a[i], e.args[i].ty, "bool")) end
    return s
  end
  if k == "conv" then return conv(a[1], e.args[1].ty, e.ty) end
  if k == "un" then
    local x = conv(a[1], e.args[1].ty, e.ty)
    if e.fn == "neg" then
      return ("(sub %s %s)"):format(e.ty == "f64" and "0x0p+0f64" or "0i64", x)
    end
    if e.fn == "bnot" then return ("(xor %s -1i64)"):format(x) end
    return ("(shl 1i64 (and %s 63i64))"):format(x)
  end
  local x, y = conv(a[1], e.args[1].ty, e.opty), conv(a[2], e.args[2].ty, e.opty)
  if e.fn == "shl" then return ("(shl %s (and %s 63i64))"):format(x, y) end
  if e.fn == "shr" then
    return ("(bitcast i64 (shr (bitcast u64 %s) (bitcast u64 (and %s 63i64))))"):format(x, y)
  end
  if e.fn == "sar" then return ("(shr %s (and %s 63i64))"):format(x, y) end
  local c = ("(%s %s %s)"):format(BIN[e.fn], x, y)
  -- one zero for f64 results (payload.lua): -0.0 + 0.0 is 0.0
  if k == "bin" and e.ty == "f64" then c = ("(add %s 0x0p+0f64)"):format(c) end
  return c
end

-- Lua closures (the oracle) --------------------------------------------------------------

local function f64_of(x) return math.type(x) == "integer" and x + 0.0 or x end

local function lua_conv(x, from, to)
  if from == to or to == "const" then return x end
  if to == "bool" then return x ~= 0 end
  if from == "bool" then return to == "f64" and (x and 1.0 or 0.0) or (x and 1 or 0) end
  if to == "f64" then return f64_of(x) end
  -- f64 -> i64 truncates toward zero (as the device's cast); out of range is unspecified
  local t = x < 0 and math.ceil(x) or math.floor(x)
  return math.tointeger(t) or 0
end

local function lua_eval(e, env)
  local k = e.kind
  if k == "lit" then return e.value end
  -- constants in Lua: "none", "conflict" or the value itself (one)
  if k == "none" then return "none" end
  if k == "one" then return lua_conv(lua_eval(e.args[1], env), e.args[1].ty, env.of) end
  if k == "isone" then return type(lua_eval(e.args[1], env)) == "number" end
  if k == "val" then
    local c = lua_eval(e.args[1], env)
    if type(c) == "number" then return c end
    return e.ty == "f64" and 0.0 or 0
  end
  if k == "var" then return env[e.name] end
  if k == "child" then return env.children[e.k + 1] end
  if k == "get" then return env.get(e.dep, e.k) end
  if k == "spred" then
    local a = {}
    for i, x in ipairs(e.args) do a[i] = lua_eval(x, env) end
    if e.fn == "member" then return US.pred_lua("member", a[1], nil, a[2]) end
    return US.pred_lua(e.fn, a[1], a[2])
  end
  local a = {}
  for i, x in ipairs(e.args or {}) do a[i] = lua_eval(x, env) end
  if k == "if" then
    if lua_conv(a[1], e.args[1].ty, "bool") then return lua_conv(a[2], e.args[2].ty, e.ty) end
    return lua_conv(a[3], e.args[3].ty, e.ty)
  end
  if k == "logic" then
    if e.fn == "not" then return not lua_conv(a[1], e.args[1].ty, "bool") end
    local all = e.fn == "and"
    for i = 1, #a do
      local b = lua_conv(a[i], e.args[i].ty, "bool")
      if all and not b then return false end
      if not all and b then return true end
    end
    return all
  end
  if k == "conv" then return lua_conv(a[1], e.args[1].ty, e.ty) end
  if k == "un" then
    local x = lua_conv(a[1], e.args[1].ty, e.ty)
    if e.fn == "neg" then return e.ty == "f64" and 0.0 - x or -x end
    if e.fn == "bnot" then return ~x end
    return 1 << (x & 63)
  end
  local x, y = lua_conv(a[1], e.args[1].ty, e.opty), lua_conv(a[2], e.args[2].ty, e.opty)
  local f = e.fn
  local r
  if f == "+" then r = x + y
  elseif f == "-" then r = x - y
  elseif f == "*" then r = x * y
  elseif f == "/" then r = x / y
  elseif f == "min" then r = (y < x) and y or x
  elseif f == "max" then r = (y > x) and y or x
  elseif f == "band" then r = x & y
  elseif f == "bor" then r = x | y
  elseif f == "bxor" then r = x ~ y
  elseif f == "shl" then r = x << (y & 63)
  elseif f == "shr" then r = x >> (y & 63)
  elseif f == "sar" then r = (y & 63) == 63 and (x < 0 and -1 or 0) or x // (1 << (y & 63))
  elseif f == "==" then return x == y
  elseif f == "!=" then return x ~= y
  elseif f == "<" then return x < y
  elseif f == "<=" then return x <= y
  elseif f == ">" then return x > y
  else return x >= y end
  if e.ty == "f64" and r == 0 then r = 0.0 end
  return r
end

-- The Lua value of a stored word, and back.
local function word_value(w, ty)
  if ty == "f64" then return P.bits_f64(w) end
  if ty == "bool" then return w ~= 0 end
  return w
end
local function value_word(x, ty)
  if ty == "f64" then return P.f64_bits(f64_of(x)) end
  if ty == "bool" then return x and 1 or 0 end
  return x
end
UA.word_value, UA.value_word = word_value, value_word

-- Declaration --------------------------------------------------------------------------

-- modify: one table {leaf, when, payload, prune} or a list of them (e.g. a leaf of one op
-- per kind of constant), parsed into an.modifies; v is the class's value (of any type).
local function declare_modifies(eg, fname, an, spec)
  local ty, of = an.ty, an.of
  if spec.modify ~= nil and type(spec.modify) ~= "table" then
    S.raise(fname, "modify must be a table {leaf =, when =, payload =, prune =} or a list "
      .. "of them", "pass e.g. modify = {leaf = \"Num\", when = \"(!= v 0)\"}")
  end
  local mlist = spec.modify == nil and {} or spec.modify[1] == nil and { spec.modify }
    or spec.modify
  an.modifies = {}
  for _, m in ipairs(mlist) do
    if type(m) ~= "table" then
      S.raise(fname, "modify must be a table {leaf =, when =, payload =, prune =} or a list "
        .. "of them", "pass e.g. modify = {leaf = \"Num\", when = \"(!= v 0)\"}")
    end
    for k in pairs(m) do
      if k ~= "leaf" and k ~= "when" and k ~= "payload" and k ~= "prune" then
        S.raise(fname, ("unknown modify option '%s'"):format(tostring(k)),
          "use leaf, when, payload and prune")
      end
    end
    local leaf = S.opid(eg, fname, m.leaf)
    if eg.reg.arity[leaf + 1] ~= 0 then
      S.raise(fname, ("modify's leaf op '%s' has arity %d"):format(eg.reg.names[leaf + 1],
        eg.reg.arity[leaf + 1]), "name a leaf op (arity 0)")
    end
    if m.prune ~= nil and type(m.prune) ~= "boolean" then
      S.raise(fname, "modify.prune must be a boolean", "pass prune = true or leave it out")
    end
    local we = parse(fname, sexp(fname, m.when or (of and "(one? v)" or "true"), "modify.when"),
      { v = ty, of = of }, "modify.when", tostring(m.when))
    if we.ty == "set" or we.ty == "const" then
      S.raise(fname, ("modify.when '%s' is a %s, not a condition"):format(tostring(m.when),
        we.ty == "set" and "set" or "constant"), "test it, e.g. (empty v) or (one? v)")
    end
    local pt = P.type_of(eg, leaf)
    if ty == "set" and m.payload == nil then
      S.raise(fname, "modify.payload is missing (a set is not a payload)",
        "pass a number, e.g. payload = \"(size v)\" or \"0\"")
    end
    local pe = parse(fname, sexp(fname, m.payload or (of and "(val v)" or "v"),
      "modify.payload"), { v = ty, of = of }, "modify.payload", tostring(m.payload))
    if pe.ty == "bool" or pe.ty == "const" or pe.ty == "set" then
      S.raise(fname, "modify.payload must be a number", "pass an i64 or f64 expression of v")
    end
    an.modifies[#an.modifies + 1] = { leaf = leaf, when = we, payload = pe, pt = pt,
      prune = m.prune or false }
  end
end

--- eg:analysis(name, {type =, bottom =, make =, merge =, modify =}) for a name other
--- than "const": records the analysis in eg.analyses[name].
function UA.declare(eg, fname, name, spec)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") or #name > 40 then
    S.raise(fname, ("an analysis name must be an identifier string, got %s"):format(
      type(name) == "string" and ("'" .. name .. "'") or type(name)),
      "use letters, digits and _ (e.g. \"fv\"); \"const\" is the built-in constant analysis")
  end
  if type(spec) ~= "table" then
    S.raise(fname, "argument 2 must be a table {type =, bottom =, make =, merge =, modify =}",
      "pass e.g. {type = \"i64\", bottom = 0, make = {Num = \"payload\"}, merge = \"(max a b)\"}")
  end
  for k in pairs(spec) do
    if spec.type ~= "set" and k ~= "type" and k ~= "bottom" and k ~= "make" and k ~= "merge"
      and k ~= "modify" and k ~= "of" then
      S.raise(fname, ("unknown option '%s'"):format(tostring(k)),
        "use type, of, bottom, make, merge and modify")
    end
  end
  if eg.analyses and eg.analyses[name] then
    S.raise(fname, ("analysis '%s' is declared already"):format(name),
      "declare each analysis once, before the rules that read it")
  end
  local ty = spec.type
  if not TYPES[ty] then
    S.raise(fname, ("type must be \"i64\", \"f64\", \"bool\", \"const\" or \"set\", got %s")
      :format(tostring(ty)), "pick the type of the values (a bitset of up to 64 symbols is an "
      .. "i64, of more a \"set\")")
  end
  if ty == "const" and (spec.merge ~= nil or spec.bottom ~= nil) then
    S.raise(fname, "a \"const\" analysis has the built-in join and bottom none",
      "leave merge and bottom out")
  end
  if spec.of ~= nil and (ty ~= "const" or spec.of ~= "i64" and spec.of ~= "f64") then
    S.raise(fname, "of is the value type of a \"const\" analysis: \"i64\" or \"f64\"",
      "pass type = \"const\", of = \"f64\", or leave of out")
  end
  local of = ty == "const" and (spec.of or "i64") or nil
  local an = { name = name, ty = ty, of = of, make = {}, makefn = {} }
  -- the analyses make may read with (get NAME k): those declared before this one
  local deps = { used = {}, lookup = function(dn)
    return dn ~= name and eg.analyses and eg.analyses[dn] or nil
  end }
  if ty == "set" then
    if type(spec.make) ~= "table" or next(spec.make) == nil then
      S.raise(fname, "make must be a table {op name = expression}",
        "give each op that contributes symbols an expression, e.g. {Sym = \"(bit payload)\"}")
    end
    US.declare(eg, fname, an, spec, deps)
    declare_modifies(eg, fname, an, spec)
    eg.analyses = eg.analyses or {}
    eg.analyses[name] = an
    eg.ua_idx = nil
    eg.analysis_order = eg.analysis_order or {}
    eg.analysis_order[#eg.analysis_order + 1] = name
    return
  end
  if ty == "const" then
    an.bottom = "none"
    an.merge = function(a, b)
      if a == "none" then return b end
      if b == "none" or a == b then return a end
      return "conflict"
    end
  end
  -- bottom: a literal of the type
  local bt = ty ~= "const" and parse(fname, sexp(fname, spec.bottom == nil and (ty == "bool"
    and "false" or ty == "f64" and "0.0" or "0") or spec.bottom, "bottom"), {}, "bottom",
    tostring(spec.bottom))
  if bt and bt.kind ~= "lit" then
    S.raise(fname, "bottom must be a literal", "pass e.g. bottom = 0, -1, 0.0 or false")
  end
  if bt then an.bottom = lua_conv(bt.value, bt.ty, ty) end
  -- merge over a, b
  if spec.merge == nil and ty ~= "const" then
    S.raise(fname, "merge is missing", "pass merge = \"(...)\" over a and b, a join such as "
      .. "\"(max a b)\" or \"(band a b)\"")
  end
  if ty ~= "const" then
    local me = parse(fname, sexp(fname, spec.merge, "merge"), { a = ty, b = ty }, "merge",
      tostring(spec.merge))
    an.merge_e = me
    an.merge = function(a, b) return lua_conv(lua_eval(me, { a = a, b = b }), me.ty, ty) end
  end
  -- make per op
  if type(spec.make) ~= "table" or next(spec.make) == nil then
    S.raise(fname, "make must be a table {op name = expression}",
      "give each op that contributes a value an expression, e.g. {Num = \"payload\"}")
  end
  local ops = {}
  for opname in pairs(spec.make) do ops[#ops + 1] = opname end
  table.sort(ops, function(x, y) return tostring(x) < tostring(y) end)
  for _, opname in ipairs(ops) do
    local op = S.opid(eg, fname, opname)
    local arity = eg.reg.arity[op + 1]
    local env = { child = arity > 0 and ty or nil, arity = arity, of = of,
      payload = arity == 0 and P.arith(P.type_of(eg, op)) or nil, deps = deps }
    local text = spec.make[opname]
    local e = parse(fname, sexp(fname, text, "make of '" .. tostring(opname) .. "'"), env,
      "make of '" .. tostring(opname) .. "'", tostring(text))
    if e.ty == "set" or ty ~= "const" and e.ty == "const" then
      S.raise(fname, ("make of '%s' gives a %s, not a value of type %s"):format(
        tostring(opname), e.ty == "set" and "set" or "constant", ty), e.ty == "set"
        and "test the set with (member S k), (size S), (empty S), (subset S T) or (disjoint S T)"
        or "read the constant with (val c) and (one? c)")
    end
    if ty == "const" and e.ty ~= "const" then
      if e.ty == "bool" then
        S.raise(fname, ("make of '%s' is a boolean"):format(tostring(opname)),
          "return a constant: (one x), none or a number (taken as (one x))")
      end
      e = { kind = "one", ty = "const", args = { e } }
    end
    an.make[op] = e
    -- get(dep, k): dep's value of child k (k 0-based) or of the class (k "self")
    -- a constant read from a "const" analysis of the other value type converts (the
    -- sweep's make_pair does the same on the device)
    local conv_of = ty == "const" and e.of ~= of and e.of
    an.makefn[op] = function(pay, kids, get)
      local r = lua_conv(lua_eval(e, { payload = pay, children = kids, of = of, get = get }),
        e.ty, ty)
      if conv_of and type(r) == "number" then r = lua_conv(r, conv_of, of) end
      return r
    end
  end
  an.ops = {}
  for op in pairs(an.make) do an.ops[#an.ops + 1] = op end
  table.sort(an.ops)
  an.deps = {}
  for dn in pairs(deps.used) do an.deps[#an.deps + 1] = dn end
  table.sort(an.deps)
  declare_modifies(eg, fname, an, spec)
  eg.analyses = eg.analyses or {}
  eg.analyses[name] = an
  eg.ua_idx = nil
  eg.analysis_order = eg.analysis_order or {}
  eg.analysis_order[#eg.analysis_order + 1] = name
end

-- The device ---------------------------------------------------------------------------

-- The sweep of a "const" analysis: the make of each row is a pair (st, x); the join is
-- the built-in one (none the unit, equal values stay, anything else conflict; values
-- compared by their words). vst/vx hold the class's pair, sin/sout the states. As in the
-- built-in constant analysis (analysis.lua) the class's previous value is joined in: the
-- lattice has height 2, so the sweeps end whatever the makes do (a make that gives none
-- for a conflicting child is not monotone), and a user "const" analysis with the
-- built-in's makes gives the built-in's values (spec 97).
-- The buffers of the analyses an's makes read with (get NAME k): dep_NAME, by id.
local function dep_decls(eg, an)
  local t = {}
  for _, dn in ipairs(an.deps) do
    t[#t + 1] = ("  (buffer dep_%s i64 read)\n"):format(dn)
    -- a "const" dep's states too (one? and val read both)
    if eg.analyses[dn].ty == "const" then
      t[#t + 1] = ("  (buffer dep_%s_st i64 read)\n"):format(dn)
    end
  end
  return table.concat(t)
end

local function const_sweep_text(eg, an)
  local of = an.of
  local zero = of == "f64" and "0x0p+0f64" or "0i64"
  local arms = {}
  for _, op in ipairs(an.ops) do
    local names = { zero = zero, of = of }
    if eg.reg.arity[op + 1] == 0 then
      local w = "(bitcast i64 (or (cast u64 (load children o)) "
        .. "(shl (cast u64 (load children (add o 1u32))) 32u64)))"
      names.payload = P.type_of(eg, op) == "f64" and ("(bitcast f64 %s)"):format(w) or w
    end
    local m = pair(an.make[op], names)
    -- a constant read from a "const" analysis of the other value type converts
    if an.make[op].of ~= of then m.x = conv(m.x, an.make[op].of, of) end
    arms[#arms + 1] = (([[
            (if (eq op $OPu32)
              (then
                (let ms$OP $ST)
                (let mx$OP $X)
                (if (eq ms$OP 1i64)
                  (then
                    (if (eq vst 0i64)
                      (then (set vst 1i64) (set vx mx$OP))
                      (else (if (land (eq vst 1i64) (ne $VW $MW)) (then (set vst 2i64)))))))
                (if (eq ms$OP 2i64) (then (set vst 2i64)))))]]):gsub("%$(%u+)", {
      OP = tostring(op), ST = m.st, X = m.x, VW = encode("vx", of),
      MW = encode("mx" .. op, of) }))
  end
  return US.sweep_program(an.name,
    dep_decls(eg, an) .. "  (buffer sin i64 read)\n  (buffer sout i64 write)\n",
    "      (let vst (load sin c))\n      (let vx " .. decode("(load vin c)", of) .. ")",
    table.concat(arms, "\n"), ([[
      (let w (select (eq vst 1i64) %s 0i64))
      (store vout c w)
      (store sout c vst)
      (if (lor (ne w (load vin c)) (ne vst (load sin c))) (then (set changed 1u32)))]]):format(
      encode("vx", of)))
end

local function sweep_text(eg, an)
  if an.ty == "const" then return const_sweep_text(eg, an) end
  local ty = an.ty
  local arms = {}
  for _, op in ipairs(an.ops) do
    local e = an.make[op]
    local names = {}
    if eg.reg.arity[op + 1] == 0 then
      local w = "(bitcast i64 (or (cast u64 (load children o)) "
        .. "(shl (cast u64 (load children (add o 1u32))) 32u64)))"
      names.payload = P.type_of(eg, op) == "f64" and ("(bitcast f64 %s)"):format(w) or w
    end
    local mk = conv(code(e, names), e.ty, ty)
    -- names are unique in a whole vyre program: one make variable per op
    local mg = conv(code(an.merge_e, { a = "v", b = "m" .. op }), an.merge_e.ty, ty)
    arms[#arms + 1] = ("            (if (eq op %du32) (then (let m%d %s) (set v %s)))"):format(
      op, op, mk, mg)
  end
  return US.sweep_program(an.name, dep_decls(eg, an),
    "      (let w0 (load vin c))\n      (let v "
      .. code({ kind = "lit", ty = ty, value = an.bottom }, {}) .. ")",
    table.concat(arms, "\n"), ([[
      (let w %s)
      (store vout c w)
      (if (ne w w0) (then (set changed 1u32)))]]):format(encode("v", ty)))
end

local SWEEPS = 8

local function kernel(be, text)
  return U.kernel(be, "eqsat_ua:" .. text, function() return SC.expand(text) end)
end

--- Computes analysis an on the rebuilt, settled graph with index idx (match.index) into
--- an.val (i64 words by id). Returns the sweeps.
function UA.compute(eg, fname, an, idx)
  local be, nids = eg.be, eg.dev.nids
  local n = math.max(nids, 1)
  -- a set analysis holds an.words words per id (uset.lua); an "auto" one's follow the
  -- symbols, and its kernels are re-made when they grow
  if an.ty == "set" then
    US.fit(eg, fname, an)
    n = n * an.words
  end
  -- the sweep and modify texts hold the words of this analysis and of the sets it reads
  local sig = an.ty == "set" and tostring(an.words) or ""
  for _, dn in ipairs(an.deps) do
    local d = eg.analyses[dn]
    if d.ty == "set" then sig = sig .. "," .. d.words end
  end
  if an.sig ~= sig then
    an.sig, an.text = sig, nil
    for _, m in ipairs(an.modifies) do m.ktexts = nil end
  end
  local bufs = { S.exact(eg, "ua_" .. an.name .. "_a", n, "i64"),
    S.exact(eg, "ua_" .. an.name .. "_b", n, "i64") }
  local init = {}
  local fill = require("vyre.lib.basic").fill_steps
  local sts
  if an.ty == "const" then
    sts = { S.exact(eg, "ua_" .. an.name .. "_sa", n, "i64"),
      S.exact(eg, "ua_" .. an.name .. "_sb", n, "i64") }
    fill(be, bufs[1], 0, n, init)
    fill(be, sts[1], 0, n, init)
  else
    fill(be, bufs[1], an.ty == "set" and 0 or value_word(an.bottom, an.ty), n, init)
  end
  S.run(eg, fname, init)
  local cur, sweeps = 1, 0
  if nids > 0 and eg.dev.nrows > 0 then
    an.text = an.text or (an.ty == "set" and US.sweep_text(eg, an) or sweep_text(eg, an))
    local k = kernel(be, an.text)
    while true do
      local steps = {}
      S.zero_stat(eg, SWEEPS, steps)
      for s = 0, SWEEPS - 1 do
        local nxt = 3 - cur
        steps[#steps + 1] = { k, { parent = eg.parent, cls_rows = idx.cls_rows,
          cstart = idx.cstart, cend = idx.cend, row_op = eg.row_op, row_off = eg.row_off,
          children = eg.children, vin = bufs[cur], vout = bufs[nxt], stat = eg.stat,
          n = nids, slot = s, sin = sts and sts[cur], sout = sts and sts[nxt] }, S.grid(nids) }
        -- the analyses read are computed before this one (declaration order) on this graph
        for _, dn in ipairs(an.deps) do
          local d = eg.analyses[dn]
          steps[#steps][2]["dep_" .. dn] = d.val
          if d.ty == "const" then steps[#steps][2]["dep_" .. dn .. "_st"] = d.st end
        end
        cur = nxt
      end
      local res = S.run(eg, fname, steps, { S.stat_readback(eg, SWEEPS) })
      sweeps = sweeps + SWEEPS
      if res[1][SWEEPS] == 0 then break end
      if sweeps > 2 * nids + 256 then
        S.raise(fname, ("analysis '%s' did not settle after %d sweeps"):format(an.name, sweeps),
          "make merge a join (commutative, associative, idempotent) over values of finite "
          .. "height, and make depend only on its children's values and payload")
      end
    end
  end
  an.val = bufs[cur]
  an.st = sts and sts[cur]
  an.n = nids
  an.sweeps = sweeps
  return sweeps
end

--- Computes every user analysis (and, when declared, the constant one) on the graph.
function UA.compute_all(eg, fname, idx)
  for _, name in ipairs(eg.analysis_order or {}) do
    UA.compute(eg, fname, eg.analyses[name], idx)
  end
end

--- Rebuilds and indexes when needed, then computes the user analyses.
function UA.current(eg, fname)
  if not eg.clean then require("vyre.egraph.rebuild").rebuild(eg, fname) end
  S.settle(eg)
  -- the values stay valid while the query index does (any change drops eg.qidx)
  if eg.qidx and eg.ua_idx == eg.qidx then return eg.qidx end
  local idx = eg.qidx or require("vyre.egraph.match").index(eg, fname)
  eg.qidx = idx
  UA.compute_all(eg, fname, idx)
  eg.ua_idx = idx
  return idx
end

--- eg:value(name, c) -> c's e-class's value in analysis name (a Lua integer, float or
--- boolean).
function UA.value(eg, fname, name, c)
  local an = eg.analyses and eg.analyses[name]
  if not an then
    S.raise(fname, ("the e-graph has no analysis '%s'"):format(tostring(name)),
      "declare it with eg:analysis(name, {type =, make =, merge =})")
  end
  S.check_id(eg, fname, c, "argument 2")
  UA.current(eg, fname)
  local root = eg.parent:download({ first = c + 1, count = 1 })[1]
  if an.ty == "set" then
    return US.word_list(an, an.val:download({ first = root * an.words + 1,
      count = an.words }), 0)
  end
  local w = an.val:download({ first = root + 1, count = 1 })[1]
  if an.ty == "const" then
    local st = an.st:download({ first = root + 1, count = 1 })[1]
    if st == 1 then return word_value(w, an.of), "one" end
    return nil, st == 0 and "none" or "conflict"
  end
  return word_value(w, an.ty)
end

--- All values of analysis name, by canonical id (a host table; the appliers' view).
function UA.values(eg, name)
  local an = eg.analyses[name]
  if not an.val then return {} end
  -- the ids of the graph the values were computed on (new ids have none yet)
  local n = math.min(an.n or 0, #an.val)
  if n == 0 then return {} end
  local out = {}
  if an.ty == "set" then
    n = math.min(an.n, #an.val // an.words)
    local w = an.val:download({ count = n * an.words })
    for i = 0, n - 1 do out[i] = US.word_list(an, w, i) end
    return out
  end
  local w = an.val:download({ count = n })
  if an.ty == "const" then
    -- a constant reaches Lua as its value, or "none" / "conflict"
    local st = an.st:download({ count = n })
    for i = 1, n do
      out[i - 1] = st[i] == 1 and word_value(w[i], an.of) or st[i] == 0 and "none"
        or "conflict"
    end
    return out
  end
  for i = 1, n do out[i - 1] = word_value(w[i], an.ty) end
  return out
end

-- modify ------------------------------------------------------------------------------

-- modify's v: the class's value (a pair for a "const" analysis, from buffer st too).
local function v_names(an)
  if an.ty == "const" then
    local zero = an.of == "f64" and "0x0p+0f64" or "0i64"
    return { v = { st = "(load st c)", x = decode("(load val c)", an.of) }, zero = zero,
      of = an.of }, "  (buffer st i64 read)\n"
  end
  if an.ty == "set" then
    -- a set's words at c (set predicates read them, uset.lua)
    local nw = an.words
    return { v = { nw = nw, word = function(idx)
      return ("(load val (add (mul c %du32) %s))"):format(nw, idx)
    end } }, ""
  end
  return { v = "v" }, ""
end

local function flags_text(an, m)
  local names, stbuf = v_names(an)
  return ([[
(program eg_ua_flags (workgroup 256)
  (columns read parent)
  (buffer cstart u32 read)
  (buffer cend u32 read)
  (buffer val i64 read)
%s  (buffer flag u32 write)
  (param n u32)
  (let c (gid x))
  (if (lt c n)
    (then
      (let v %s)
      (store flag c (select (land (land (eq (load parent c) c)
        (lt (load cstart c) (load cend c))) %s) 1u32 0u32)))))
]]):format(stbuf, (an.ty == "const" or an.ty == "set") and "0i64"
    or decode("(load val c)", an.ty), conv(code(m.when, names), m.when.ty, "bool"))
end

local function pick_text(an, m)
  local names, stbuf = v_names(an)
  local p = code(m.payload, names)
  local bits = m.pt == "f64" and ("(bitcast i64 %s)"):format(conv(p, m.payload.ty, "f64"))
    or conv(p, m.payload.ty, "i64")
  return ([[
(program eg_ua_pick (workgroup 256)
  (buffer flag u32 read)
  (buffer rank u32 read)
  (buffer val i64 read)
%s  (buffer pay i64 write)
  (buffer cls u32 write)
  (param n u32)
  (let c (gid x))
  (if (lt c n)
    (then
      (if (ne (load flag c) 0u32)
        (then
          (let v %s)
          (store pay (load rank c) %s)
          (store cls (load rank c) c))))))
]]):format(stbuf, (an.ty == "const" or an.ty == "set") and "0i64"
    or decode("(load val c)", an.ty), bits)
end

--- Runs flag kernel text (args; it writes flag[c] = 1 for the classes to modify) and an
--- exclusive scan of the flags; returns flag, rank (u32 by id) and the count k.
function UA.flags(eg, fname, text, args)
  local be, nids = eg.be, eg.dev.nids
  local flag, rank = S.exact(eg, "ua_flag", nids), S.exact(eg, "ua_rank", nids)
  local fa = { flag = flag, n = nids }
  for k, v in pairs(args) do fa[k] = v end
  local steps = { { kernel(be, text), fa, S.grid(nids) } }
  scan.steps(be, "u32", "add", true, flag, rank, nids, steps)
  local res = S.run(eg, fname, steps, { { rank, nids, 1 }, { flag, nids, 1 } })
  return flag, rank, res[1][1] + res[2][1]
end

--- The k flagged classes get the leaf e-node whose payload pick kernel text computes
--- (args), united with them (bulk add_many and union_many on the device). Shared by the
--- constant analysis (analysis.lua) and user analyses.
function UA.add_flagged(eg, fname, leaf, flag, rank, k, text, args)
  local be, nids = eg.be, eg.dev.nids
  local pay, cls = S.exact(eg, "ua_pay", k, "i64"), S.exact(eg, "ua_cls", k)
  local pa = { flag = flag, rank = rank, pay = pay, cls = cls, n = nids }
  for kk, v in pairs(args) do pa[kk] = v end
  S.run(eg, fname, { { kernel(be, text), pa, S.grid(nids) } })
  local first = S.add_leaves(eg, fname, leaf, pay)
  local pairs_ = S.exact(eg, "ua_pairs", 2 * k)
  S.run(eg, fname, { { kernel(be, UA.PAIRS), { cls = cls, pairs = pairs_, k = k,
    first = first }, S.grid(k) } })
  -- explanations (on main, explain.lua) read eg.xwhy: these unions are the analysis's
  eg.xwhy = 2
  local ok, err = pcall(S.union_many, eg, fname, pairs_)
  eg.xwhy = nil
  if not ok then error(err, 0) end
end

UA.PAIRS = [[
(program eg_ua_pairs (workgroup 256)
  (buffer cls u32 read)
  (buffer pairs u32 write)
  (param k u32)
  (param first u32)
  (let i (gid x))
  (if (lt i k)
    (then
      (store pairs (mul i 2u32) (load cls i))
      (store pairs (add (mul i 2u32) 1u32) (add first i)))))
]]

local PRUNE = [[
(program eg_ua_prune (workgroup 256)
  (columns read parent row_class row_op isleaf)
  (buffer flag u32 read)
  (buffer keep u32 write)
  (columns read_write stat)
  (param n u32)
  (let r (gid x))
  (let dropped 0u32)
  (if (lt r n)
    (then
      (let k (select (land (ne (load flag (load parent (load row_class r))) 0u32)
        (eq (load isleaf (load row_op r)) 0u32)) 0u32 1u32))
      (store keep r k)
      (set dropped (sub 1u32 k))))
  (let s (subgroup_reduce add dropped))
  (if (land (eq (subgroup_lane) 0u32) (ne s 0u32)) (then (atomic add stat 0u32 s))))
]]

--- Pruning (egg's `retain(is_leaf)` in modify): removes the e-nodes that are not leaves
--- from the classes whose flag (u32 by id, of the settled, rebuilt graph) is 1. Returns
--- the e-nodes removed.
function UA.prune(eg, fname, flag)
  local n = eg.dev.nrows
  if n == 0 then return 0 end
  S.flush(eg)
  local keep = S.exact(eg, "keep", n)
  local steps = {}
  S.zero_stat(eg, 1, steps)
  steps[#steps + 1] = { kernel(eg.be, PRUNE), { parent = eg.parent, row_class = eg.row_class,
    row_op = eg.row_op, isleaf = eg.isleaf, flag = flag, keep = keep, stat = eg.stat, n = n },
    S.grid(n) }
  local res = S.run(eg, fname, steps, { S.stat_readback(eg, 1) })
  local k = res[1][1]
  if k > 0 then require("vyre.egraph.rebuild").keep_rows(eg, fname, keep, k) end
  return k
end

--- Rounds of modify (flags, then leaves added and united, then a rebuild) until a round
--- leaves the e-nodes and classes as they were; then, with prune, the pruning of the
--- flagged classes. flags(idx) runs the flag kernel on the current graph and returns
--- flag, rank, k; add(flag, rank, k) adds the leaves. Returns the rounds.
function UA.rounds(eg, fname, what, flags, add, prune)
  local R = require("vyre.egraph.rebuild")
  local rounds = 0
  while true do
    local idx = UA.current(eg, fname)
    local nodes, classes = eg:size()
    rounds = rounds + 1
    local flag, rank, k = flags(idx)
    if k > 0 then
      add(flag, rank, k)
      R.rebuild(eg, fname)
    end
    local n2, c2 = eg:size()
    if k == 0 or n2 == nodes and c2 == classes then
      -- no merge and no new e-node: the flags (by id) still hold for this graph
      if prune and k > 0 then UA.prune(eg, fname, flag) end
      return rounds
    end
    if rounds > 64 then
      Err.raise("internal", "vyre.EGraph:" .. fname .. (": modify of %s did not settle (a "
        .. "bug in vyre). Fix: please report it with the rules and terms"):format(what), 0)
    end
  end
end

--- modify of every user analysis that has one, on the rebuilt graph. Returns the rounds.
function UA.modify(eg, fname)
  local rounds = 0
  for _, name in ipairs(eg.analysis_order or {}) do
    local an = eg.analyses[name]
    for _, m in ipairs(an.modifies) do
      rounds = rounds + UA.rounds(eg, fname, ("analysis '%s'"):format(name), function(idx)
        -- made after UA.current: a set's words may have grown (UA.compute drops the texts)
        m.ktexts = m.ktexts or { flags = flags_text(an, m), pick = pick_text(an, m) }
        return UA.flags(eg, fname, m.ktexts.flags, { parent = eg.parent, cstart = idx.cstart,
          cend = idx.cend, val = an.val, st = an.st })
      end, function(flag, rank, k)
        UA.add_flagged(eg, fname, m.leaf, flag, rank, k, m.ktexts.pick,
          { val = an.val, st = an.st })
      end, m.prune)
    end
  end
  return rounds
end

return UA
