-- vyre.egraph.uset — set-valued e-class analyses: multi-word bitsets (docs/EGRAPH.md,
-- "User analyses", type "set").
--
--   eg:analysis("fv", {type = "set", words = 4, make = {Sym = "(bit payload)",
--     Var = "(child 0)", Lam = "(band (child 1) (bnot (child 0)))"}})
--
-- A value is a set of symbols (payload.lua's interned strings) held as `words` i64 words
-- per id (symbol s is bit s % 64 of word s // 64), so an analysis holds 64 * words
-- symbols. words = "auto" (the default) follows the interned symbols (US.fit: the next
-- power of two of the words needed, up to MAX_WORDS = 64 words, 4096 symbols; the
-- kernels that hold the words are re-made when it grows); an integer fixes it. The
-- join is the union (bor of each word) and bottom the empty set: the merge is fixed, not
-- written. When the e-graph has interned more symbols than the analysis can hold, its
-- computation stops with an error that names the words needed, instead of wrapping
-- symbols onto each other (the i64 bitsets of uanalysis.lua take symbols mod 64).
-- Set predicates (member, size, empty, subset, disjoint) compile here for `when`
-- (match.lua) and for makes and modify (uanalysis.lua).
--
-- make's expressions, word by word (each word of the result from the same word of the
-- operands): (bit payload) the leaf's symbol (a "sym" leaf op only), (child k),
-- (get NAME k|self) of an earlier "set" analysis, empty,
-- (bor x y ...), (band x y ...), (bnot x) (the complement within the words). They
-- compile to one sweep kernel (the words unrolled) and to Lua closures (the oracle).
-- The sweeps are uanalysis.lua's: Jacobi from bottom, the class's value the union of its
-- rows' makes, until no word changes.
local S = require("vyre.egraph.store")
local P = require("vyre.egraph.payload")

local US = {}

--- The k of (get NAME k) (a child number of the e-node's op, or "self"), or bad() with
--- a Fix; shared by the set and the scalar expression languages.
function US.get_child(s, env, bad)
  local k = s[3] == "self" and "self" or math.tointeger(tonumber(s[3]))
  if k == nil or k ~= "self" and (k < 0 or k >= env.arity) then
    bad(("(get NAME k) needs k in [0, %d) or self for this op"):format(env.arity),
      "number the children from 0, or write self for the e-node's own class")
  end
  return k
end

US.MAX_WORDS = 64

local function parse(fname, s, env, what, text)
  local function bad(msg, fix)
    S.raise(fname, ("%s '%s': %s"):format(what, text, msg), fix or
      "a set analysis's make uses (bit payload), (child k), empty, bor, band and bnot "
      .. "(docs/EGRAPH.md, \"User analyses\")")
  end
  if s == "empty" then return { kind = "empty" } end
  if type(s) ~= "table" or type(s[1]) ~= "string" then bad("expected (op args...) or empty") end
  local f = s[1]
  if f == "bit" then
    if #s ~= 2 or s[2] ~= "payload" then bad("(bit payload) is the one singleton set") end
    if not env.sym then
      bad("(bit payload) needs a leaf op of payload type \"sym\"",
        "register the leaf with eg:op(name, 0, \"sym\")")
    end
    return { kind = "bit" }
  end
  if f == "child" then
    local k = #s == 2 and math.tointeger(tonumber(s[2]))
    if not k or k < 0 or k >= env.arity then
      bad(("(child k) needs k in [0, %d) for this op"):format(env.arity),
        "number the children from 0")
    end
    return { kind = "child", k = k }
  end
  if f == "get" then
    -- (get NAME k|self): a "set" analysis declared before this one (uanalysis.lua's rule:
    -- declaration order is the dependency order)
    if #s ~= 3 or type(s[2]) ~= "string" then
      bad("(get NAME k) takes an analysis name and a child number k (or self)")
    end
    local dep = env.deps.lookup(s[2])
    if not dep then
      bad(("(get %s ...) names no analysis declared before this one"):format(s[2]),
        "declare the analysis it reads first (an analysis cannot read itself: use (child k))")
    end
    if dep.ty ~= "set" then
      bad(("(get %s ...) reads a \"%s\" analysis in a set's make"):format(s[2], dep.ty),
        "a set analysis's make reads \"set\" analyses only; test scalar values in a scalar "
        .. "analysis")
    end
    local k = US.get_child(s, env, bad)
    env.deps.used[dep.name] = true
    return { kind = "get", dep = dep, k = k }
  end
  local args = {}
  for i = 2, #s do args[i - 1] = parse(fname, s[i], env, what, text) end
  if f == "bnot" then
    if #args ~= 1 then bad("(bnot x) takes 1 operand") end
    return { kind = "bnot", args = args }
  end
  if f == "bor" or f == "band" then
    if #args < 2 then bad(("(%s x y ...) takes 2 or more operands"):format(f)) end
    return { kind = f, args = args }
  end
  bad(("unknown operation '%s'"):format(f))
end

-- The vyre code of word w of expression e (a Lua number w, unrolled); nw words per id.
local function code(e, w, nw)
  local k = e.kind
  if k == "empty" then return "0i64" end
  if k == "bit" then
    return ("(select (eq (shr (load children o) 6u32) %du32) "
      .. "(shl 1i64 (cast i64 (and (load children o) 63u32))) 0i64)"):format(w)
  end
  if k == "child" then
    return ("(load vin (add (mul (load children (add o %du32)) %du32) %du32))"):format(e.k, nw, w)
  end
  if k == "get" then
    -- the dep's words past its own are empty (a fixed-words dep smaller than this one)
    if w >= e.dep.words then return "0i64" end
    local at = e.k == "self" and "c" or ("(load children (add o %du32))"):format(e.k)
    return ("(load dep_%s (add (mul %s %du32) %du32))"):format(e.dep.name, at, e.dep.words, w)
  end
  if k == "bnot" then return ("(xor %s -1i64)"):format(code(e.args[1], w, nw)) end
  local op = k == "bor" and "or" or "and"
  local s = code(e.args[1], w, nw)
  for i = 2, #e.args do s = ("(%s %s %s)"):format(op, s, code(e.args[i], w, nw)) end
  return s
end

-- The Lua value of expression e: a list of nw words.
local function eval(e, nw, pay, kids, get)
  local k, out = e.kind, {}
  if k == "child" then
    for w = 1, nw do out[w] = kids[e.k + 1][w] end
    return out
  end
  if k == "get" then
    local v = get(e.dep.name, e.k)
    for w = 1, nw do out[w] = v[w] or 0 end
    return out
  end
  for w = 1, nw do out[w] = 0 end
  if k == "empty" then return out end
  if k == "bit" then
    if pay // 64 < nw then out[pay // 64 + 1] = 1 << (pay % 64) end
    return out
  end
  local a = {}
  for i, x in ipairs(e.args) do a[i] = eval(x, nw, pay, kids, get) end
  for w = 1, nw do
    if k == "bnot" then out[w] = ~a[1][w]
    else
      local v = a[1][w]
      for i = 2, #a do v = k == "bor" and (v | a[i][w]) or (v & a[i][w]) end
      out[w] = v
    end
  end
  return out
end

--- Sets an.words to nw and an.bottom (the empty set) to nw zero words.
function US.resize(an, nw)
  an.words = nw
  an.bottom = {}
  for w = 1, nw do an.bottom[w] = 0 end
end

--- Declares a "set" analysis into an (uanalysis.lua's record): an.words (an.auto when
--- they follow the symbols), an.make, an.makefn, an.merge, an.bottom (a list of words),
--- an.deps. deps: uanalysis.lua's {used, lookup} of the analyses declared before.
function US.declare(eg, fname, an, spec, deps)
  for k in pairs(spec) do
    if k ~= "type" and k ~= "words" and k ~= "make" and k ~= "modify" then
      S.raise(fname, ("a \"set\" analysis has no option '%s'"):format(tostring(k)),
        "use type, words, make and modify (the merge is the union, bottom the empty set)")
    end
  end
  local nw = spec.words
  if nw == nil or nw == "auto" then
    -- the words follow the interned symbols (US.fit, before each computation)
    an.auto, nw = true, 1
  elseif math.type(nw) ~= "integer" or nw < 1 or nw > US.MAX_WORDS then
    S.raise(fname, ("words must be \"auto\" or an integer in [1, %d] (64 symbols a word), "
      .. "got %s"):format(US.MAX_WORDS, tostring(nw)), ("leave words out (\"auto\": they follow "
      .. "the symbols), or pass words = math.ceil(symbols / 64); at most %d symbols fit")
      :format(64 * US.MAX_WORDS))
  end
  US.resize(an, nw)
  -- merge and the makes read an.words when called: an "auto" analysis's words grow
  an.merge = function(a, b)
    local out = {}
    for w = 1, an.words do out[w] = (a[w] or 0) | (b[w] or 0) end
    return out
  end
  local ops = {}
  for opname in pairs(spec.make) do ops[#ops + 1] = opname end
  table.sort(ops, function(x, y) return tostring(x) < tostring(y) end)
  for _, opname in ipairs(ops) do
    local op = S.opid(eg, fname, opname)
    local arity = eg.reg.arity[op + 1]
    local text = spec.make[opname]
    local what = "make of '" .. tostring(opname) .. "'"
    if type(text) ~= "string" then
      S.raise(fname, ("%s must be an expression string"):format(what),
        "write it as an S-expression, e.g. \"(bor (child 0) (child 1))\"")
    end
    local sx = text == "empty" and "empty" or require("vyre.egraph.rules").sexp(fname, text)
    local e = parse(fname, sx, { arity = arity, deps = deps,
      sym = arity == 0 and P.type_of(eg, op) == "sym" }, what, text)
    an.make[op] = e
    an.makefn[op] = function(pay, kids, get) return eval(e, an.words, pay, kids, get) end
  end
  an.ops = {}
  for op in pairs(an.make) do an.ops[#an.ops + 1] = op end
  table.sort(an.ops)
  an.deps = {}
  for dn in pairs(deps.used) do an.deps[#an.deps + 1] = dn end
  table.sort(an.deps)
end

--- The text of an analysis's sweep kernel eg_an_NAME, shared by every analysis type: one
--- invocation per class c < n sets up its value (pre), folds every e-node of a canonical
--- class into it (arms: per op, with r, op and o bound), stores it and sets `changed` when
--- it moved (post), and counts the classes that changed in stat[slot]. decls: declarations
--- after vout (each line ending in a newline).
function US.sweep_program(name, decls, pre, arms, post)
  return ([[
(program eg_an_%s (workgroup 256)
  (columns read parent)
  (buffer cls_rows u32 read)
  (buffer cstart u32 read)
  (buffer cend u32 read)
  (columns read row_op row_off children)
  (buffer vin i64 read)
  (buffer vout i64 write)
%s  (columns read_write stat)
  (param n u32)
  (param slot u32)
  (let c (gid x))
  (let changed 0u32)
  (if (lt c n)
    (then
%s
      (if (eq (load parent c) c)
        (then
          (for q (load cstart c) (load cend c) 1u32
            (let r (load cls_rows q))
            (let op (load row_op r))
            (let o (load row_off r))
%s)))
%s))
  (let cs (subgroup_reduce add changed))
  (if (land (eq (subgroup_lane) 0u32) (ne cs 0u32)) (then (atomic add stat slot cs))))
]]):format(name, decls, pre, arms, post)
end

--- The sweep kernel's text of set analysis an.
function US.sweep_text(_, an)
  local nw = an.words
  local lets, arms, stores = {}, {}, {}
  for w = 0, nw - 1 do
    lets[#lets + 1] = ("      (let v%d 0i64)"):format(w)
    stores[#stores + 1] = ("      (store vout (add (mul c %du32) %du32) v%d)\n"
      .. "      (if (ne v%d (load vin (add (mul c %du32) %du32))) (then (set changed 1u32)))")
      :format(nw, w, w, w, nw, w)
  end
  for _, op in ipairs(an.ops) do
    local sets = {}
    for w = 0, nw - 1 do
      sets[#sets + 1] = ("(set v%d (or v%d %s))"):format(w, w, code(an.make[op], w, nw))
    end
    arms[#arms + 1] = ("            (if (eq op %du32) (then %s))"):format(op,
      table.concat(sets, " "))
  end
  local decls = {}
  for _, dn in ipairs(an.deps) do
    decls[#decls + 1] = ("  (buffer dep_%s i64 read)\n"):format(dn)
  end
  return US.sweep_program(an.name, table.concat(decls), table.concat(lets, "\n"),
    table.concat(arms, "\n"), table.concat(stores, "\n"))
end

--- The words set analysis an needs for the e-graph's symbols: an "auto" analysis takes
--- the next power of two of ceil(symbols / 64) (so its kernels are re-made at most 7
--- times), a fixed one keeps its own. Raises when the symbols do not fit. Returns true
--- when an.words changed (the caller re-makes the kernels and buffers).
function US.fit(eg, fname, an)
  local nsym = eg.syms and #eg.syms.names or 0
  local need = math.max(1, (nsym + 63) // 64)
  if an.auto then
    if need > US.MAX_WORDS then
      S.raise(fname, ("analysis '%s' would need %d words for the e-graph's %d symbols, more "
        .. "than the %d words (%d symbols) a set holds"):format(an.name, need, nsym,
        US.MAX_WORDS, 64 * US.MAX_WORDS), "intern fewer symbols (e.g. one e-graph per "
        .. "independent term), or track a subset of them with an i64 bitset analysis")
    end
    local nw = 1
    while nw < need do nw = nw * 2 end
    if nw == an.words then return false end
    US.resize(an, nw)
    return true
  end
  if nsym > 64 * an.words then
    S.raise(fname, ("analysis '%s' holds %d symbols (words = %d) but the e-graph has %d")
      :format(an.name, 64 * an.words, an.words, nsym),
      ("declare it with words = %d or more (at most %d, %d symbols), or leave words out "
      .. "(\"auto\")"):format((nsym + 63) // 64, US.MAX_WORDS, 64 * US.MAX_WORDS))
  end
  return false
end

-- Set predicates, shared by `when` (match.lua), scalar makes and modify (uanalysis.lua).
-- A set operand is {word = function(idx) -> i64 code of word idx (u32 code), nw = words}.

-- The balanced tree of op over codes t (depth log2 #t: a 64-word set stays shallow).
local function tree(op, t)
  while #t > 1 do
    local n = {}
    for i = 1, #t, 2 do
      n[#n + 1] = t[i + 1] and ("(%s %s %s)"):format(op, t[i], t[i + 1]) or t[i]
    end
    t = n
  end
  return t[1]
end

local function wordat(x, w)
  if w >= x.nw then return "0i64" end
  return x.word(("%du32"):format(w))
end

--- The device code of set predicate f over set operands xs (and k, i64 code, for
--- member): returns code and its type ("bool" or "i64").
function US.pred_code(f, xs, k)
  local a, b = xs[1], xs[2]
  if f == "member" then
    -- a symbol outside the words is not a member (and reads word 0, never past the end)
    local inr = ("(land (ge %s 0i64) (lt %s %di64))"):format(k, k, 64 * a.nw)
    return ("(land %s (ne (and %s (shl 1i64 (and %s 63i64))) 0i64))"):format(inr,
      a.word(("(cast u32 (select %s (shr %s 6i64) 0i64))"):format(inr, k)), k), "bool"
  end
  local nw = math.max(a.nw, b and b.nw or 0)
  local t = {}
  for w = 0, nw - 1 do
    local x = wordat(a, w)
    if f == "size" then t[#t + 1] = ("(popcount %s)"):format(x)
    elseif f == "empty" then t[#t + 1] = x
    elseif f == "subset" then t[#t + 1] = ("(and %s (xor %s -1i64))"):format(x, wordat(b, w))
    else t[#t + 1] = ("(and %s %s)"):format(x, wordat(b, w)) end
  end
  if f == "size" then return tree("add", t), "i64" end
  return ("(eq %s 0i64)"):format(tree("or", t)), "bool"
end

local function popcount(x)
  local n = 0
  while x ~= 0 do
    x = x & (x - 1)
    n = n + 1
  end
  return n
end

--- The Lua value of set predicate f over word lists a, b (and symbol k for member).
function US.pred_lua(f, a, b, k)
  if f == "member" then
    if k < 0 or k >= 64 * #a then return false end
    return (a[k // 64 + 1] >> (k % 64)) & 1 == 1
  end
  local nw = math.max(#a, b and #b or 0)
  local n = 0
  for w = 1, nw do
    local x = a[w] or 0
    if f == "size" then n = n + popcount(x)
    elseif f == "empty" then n = n | x
    elseif f == "subset" then n = n | (x & ~(b[w] or 0))
    else n = n | (x & (b[w] or 0)) end
  end
  if f == "size" then return n end
  return n == 0
end

--- The arity of each set predicate (its set operands; member adds a symbol).
US.PREDS = { member = 1, size = 1, empty = 1, subset = 2, disjoint = 2 }

--- The Lua value (a list of words) of class root from the downloaded words w (by id).
function US.word_list(an, w, root)
  local out = {}
  for i = 1, an.words do out[i] = w[root * an.words + i] end
  return out
end

--- The symbols (their strings, sorted by number) of a set value.
function US.symbols(eg, words)
  local out = {}
  for w, x in ipairs(words) do
    for b = 0, 63 do
      if x & (1 << b) ~= 0 then out[#out + 1] = P.name(eg, (w - 1) * 64 + b) end
    end
  end
  return out
end

return US
