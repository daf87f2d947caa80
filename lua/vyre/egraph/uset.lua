-- vyre.egraph.uset — set-valued e-class analyses: multi-word bitsets (docs/EGRAPH.md,
-- "User analyses", type "set").
--
--   eg:analysis("fv", {type = "set", words = 4, make = {Sym = "(bit payload)",
--     Var = "(child 0)", Lam = "(band (child 1) (bnot (child 0)))"}})
--
-- A value is a set of symbols (payload.lua's interned strings) held as `words` i64 words
-- per id (symbol s is bit s % 64 of word s // 64), so an analysis holds 64 * words
-- symbols; words is fixed at declaration, 1 to MAX_WORDS (64 words, 4096 symbols). The
-- join is the union (bor of each word) and bottom the empty set: the merge is fixed, not
-- written. When the e-graph has interned more symbols than the analysis can hold, its
-- computation stops with an error that names the words needed, instead of wrapping
-- symbols onto each other (the i64 bitsets of uanalysis.lua take symbols mod 64).
--
-- make's expressions, word by word (each word of the result from the same word of the
-- operands): (bit payload) the leaf's symbol (a "sym" leaf op only), (child k), empty,
-- (bor x y ...), (band x y ...), (bnot x) (the complement within the words). They
-- compile to one sweep kernel (the words unrolled) and to Lua closures (the oracle).
-- The sweeps are uanalysis.lua's: Jacobi from bottom, the class's value the union of its
-- rows' makes, until no word changes.
local S = require("vyre.egraph.store")
local P = require("vyre.egraph.payload")

local US = {}

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
  if k == "bnot" then return ("(xor %s -1i64)"):format(code(e.args[1], w, nw)) end
  local op = k == "bor" and "or" or "and"
  local s = code(e.args[1], w, nw)
  for i = 2, #e.args do s = ("(%s %s %s)"):format(op, s, code(e.args[i], w, nw)) end
  return s
end

-- The Lua value of expression e: a list of nw words.
local function eval(e, nw, pay, kids)
  local k, out = e.kind, {}
  if k == "child" then
    for w = 1, nw do out[w] = kids[e.k + 1][w] end
    return out
  end
  for w = 1, nw do out[w] = 0 end
  if k == "empty" then return out end
  if k == "bit" then
    if pay // 64 < nw then out[pay // 64 + 1] = 1 << (pay % 64) end
    return out
  end
  local a = {}
  for i, x in ipairs(e.args) do a[i] = eval(x, nw, pay, kids) end
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

--- Declares a "set" analysis into an (uanalysis.lua's record): an.words, an.make,
--- an.makefn, an.merge, an.bottom (a list of words).
function US.declare(eg, fname, an, spec)
  for k in pairs(spec) do
    if k ~= "type" and k ~= "words" and k ~= "make" then
      S.raise(fname, ("a \"set\" analysis has no option '%s'"):format(tostring(k)),
        "use type, words and make (the merge is the union, bottom the empty set)")
    end
  end
  local nw = spec.words
  if math.type(nw) ~= "integer" or nw < 1 or nw > US.MAX_WORDS then
    S.raise(fname, ("words must be an integer in [1, %d] (64 symbols a word), got %s"):format(
      US.MAX_WORDS, tostring(nw)), ("pass words = math.ceil(symbols / 64); at most %d symbols "
      .. "fit"):format(64 * US.MAX_WORDS))
  end
  an.words = nw
  an.bottom = {}
  for w = 1, nw do an.bottom[w] = 0 end
  an.merge = function(a, b)
    local out = {}
    for w = 1, nw do out[w] = a[w] | b[w] end
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
    local e = parse(fname, sx, { arity = arity, sym = arity == 0 and P.type_of(eg, op) == "sym" },
      what, text)
    an.make[op] = e
    an.makefn[op] = function(pay, kids) return eval(e, nw, pay, kids) end
  end
  an.ops = {}
  for op in pairs(an.make) do an.ops[#an.ops + 1] = op end
  table.sort(an.ops)
  an.deps, an.modifies = {}, {}
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
  return US.sweep_program(an.name, "", table.concat(lets, "\n"), table.concat(arms, "\n"),
    table.concat(stores, "\n"))
end

--- Raises when the e-graph has more symbols than set analysis an holds.
function US.check(eg, fname, an)
  local nsym = eg.syms and #eg.syms.names or 0
  if nsym > 64 * an.words then
    S.raise(fname, ("analysis '%s' holds %d symbols (words = %d) but the e-graph has %d")
      :format(an.name, 64 * an.words, an.words, nsym),
      ("declare it with words = %d or more (at most %d, %d symbols)"):format(
        (nsym + 63) // 64, US.MAX_WORDS, 64 * US.MAX_WORDS))
  end
end

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
