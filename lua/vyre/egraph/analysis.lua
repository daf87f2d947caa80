-- vyre.egraph.analysis — the built-in constant-folding e-class analysis on the device
-- (docs/EGRAPH.md, "E-class analyses").
--
-- Each e-class holds a value of the lattice none < one(v) < conflict over i64 values:
-- an_state[c] (0 none, 1 one, 2 conflict) and an_val[c] (v when one). `make` of an
-- e-node: a leaf of the constant op gives one(payload); an op folded as + - * (two
-- children) or neg (one) gives one(f(values)) when every child's class is one, else
-- none. `merge` is the join (none is the unit, one(a) with one(a) stays one(a), two
-- different values or conflict give conflict): commutative, associative, idempotent.
--
-- The values are recomputed on every rebuilt graph, not updated per merge: Jacobi
-- sweeps over the canonical classes, each the join of its previous value and the makes
-- of its rows (the class index of match.lua), double-buffered, until a sweep changes
-- nothing. The join with the previous value makes the sweeps inflationary, so they end
-- (every class moves up a lattice of height 2) and, the order of rows being fixed, give
-- the same values on both backends. Recomputing on the merged graph is what egg's
-- rebuild reaches incrementally: a merged class's value is the join of its rows' makes.
-- `modify` (egg's constant folding): every class with one(v) gets the e-node (leaf v)
-- in bulk (add_many and union_many on the device), then a rebuild, until a round adds no
-- e-node and merges nothing.
local U = require("vyre.lib.util")
local Err = require("vyre.errors")
local S = require("vyre.egraph.store")
local R = require("vyre.egraph.rebuild")
local match = require("vyre.egraph.match")
local P = require("vyre.egraph.payload")
local UA = require("vyre.egraph.uanalysis")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)

local AN = {}

local FOLD = { ["+"] = 2, ["-"] = 3, ["*"] = 4, neg = 5, ["/"] = 6 }
local SWEEPS = 8

local function kernel(be, name, text)
  return U.kernel(be, "eqsat_an:" .. name, function() return SC.expand(text) end)
end

-- The fold arithmetic of the sweep in i64 (wrapping) or in f64 (the values' bits; a
-- division folds only by a non-zero divisor, as egg's; -0.0 + 0.0 gives the one zero).
local ARITH_TEXT = {
  i64 = { NEG = "(sub 0i64 va)", ADD = "(add va vb)", SUB = "(sub va vb)", MUL = "(mul va vb)",
    DIV = "0i64", NONZERO = "false" },
  f64 = {},
}
for k, op in pairs({ ADD = "add", SUB = "sub", MUL = "mul", DIV = "div" }) do
  ARITH_TEXT.f64[k] = ("(bitcast i64 (add (%s (bitcast f64 va) (bitcast f64 vb)) 0x0p+0f64))")
    :format(op)
end
ARITH_TEXT.f64.NEG = "(bitcast i64 (add (sub 0x0p+0f64 (bitcast f64 va)) 0x0p+0f64))"
ARITH_TEXT.f64.NONZERO = "(ne (bitcast f64 vb) 0x0p+0f64)"

local SWEEP = [[
(program eg_const_sweep (workgroup 256)
  (columns read parent)
  (buffer cls_rows u32 read)
  (buffer cstart u32 read)
  (buffer cend u32 read)
  (columns read row_op row_off children)
  (buffer fold u32 read)
  (buffer st_in u32 read)
  (buffer val_in i64 read)
  (buffer st_out u32 write)
  (buffer val_out i64 write)
  (columns read_write stat)
  (param n u32)
  (param slot u32)
  (let c (gid x))
  (let changed 0u32)
  (if (lt c n)
    (then
      (let s (load st_in c))
      (let v (load val_in c))
      (if (eq (load parent c) c)
        (then
          (for q (load cstart c) (load cend c) 1u32
            (let r (load cls_rows q))
            (let f (load fold (load row_op r)))
            (let o (load row_off r))
            (let ms 0u32)
            (let mv 0i64)
            (if (eq f 1u32)
              (then
                (set ms 1u32)
                (set mv (bitcast i64 (or (cast u64 (load children o))
                  (shl (cast u64 (load children (add o 1u32))) 32u64))))))
            (if (ge f 2u32)
              (then
                (let a (load children o))
                (let sa (load st_in a))
                (let va (load val_in a))
                (if (eq f 5u32)
                  (then (if (eq sa 1u32) (then (set ms 1u32) (set mv $NEG))))
                  (else
                    (let b (load children (add o 1u32)))
                    (let vb (load val_in b))
                    (if (land (land (eq sa 1u32) (eq (load st_in b) 1u32))
                      (lor (ne f 6u32) $NONZERO))
                      (then
                        (set ms 1u32)
                        (set mv (select (eq f 2u32) $ADD
                          (select (eq f 3u32) $SUB (select (eq f 4u32) $MUL $DIV))))))))))
            (if (eq ms 1u32)
              (then
                (if (eq s 0u32)
                  (then (set s 1u32) (set v mv))
                  (else (if (land (eq s 1u32) (ne v mv)) (then (set s 2u32))))))))))
      (if (eq s 2u32) (then (set v 0i64)))
      (store st_out c s)
      (store val_out c v)
      (if (lor (ne s (load st_in c)) (ne v (load val_in c))) (then (set changed 1u32)))))
  (let cs (subgroup_reduce add changed))
  (if (land (eq (subgroup_lane) 0u32) (ne cs 0u32)) (then (atomic add stat slot cs))))
]]

local FLAGS = [[
(program eg_const_flags (workgroup 256)
  (columns read parent)
  (buffer st u32 read)
  (buffer flag u32 write)
  (param n u32)
  (let c (gid x))
  (if (lt c n)
    (then (store flag c (select (land (eq (load parent c) c) (eq (load st c) 1u32)) 1u32 0u32)))))
]]

local PICK = [[
(program eg_const_pick (workgroup 256)
  (buffer flag u32 read)
  (buffer rank u32 read)
  (buffer val i64 read)
  (buffer pay i64 write)
  (buffer cls u32 write)
  (param n u32)
  (let c (gid x))
  (if (lt c n)
    (then
      (if (ne (load flag c) 0u32)
        (then
          (store pay (load rank c) (load val c))
          (store cls (load rank c) c))))))
]]

--- The lattice's join in Lua (the specs' oracle): values {state, v}.
function AN.join(a, b)
  if a[1] == 0 then return { b[1], b[2] } end
  if b[1] == 0 then return { a[1], a[2] } end
  if a[1] == 2 or b[1] == 2 or a[2] ~= b[2] then return { 2, 0 } end
  return { 1, a[2] }
end

--- eg:analysis("const", {leaf = op, fold = {op = "+" | "-" | "*" | "neg"}, modify =}).
function AN.declare(eg, fname, name, spec)
  if name ~= "const" then return UA.declare(eg, fname, name, spec) end
  if type(spec) ~= "table" then
    S.raise(fname, "argument 2 must be a table {leaf =, fold =, modify =}",
      "pass e.g. {leaf = \"Num\", fold = {Add = \"+\"}, modify = true}")
  end
  for k in pairs(spec) do
    if k ~= "leaf" and k ~= "fold" and k ~= "modify" and k ~= "prune" then
      S.raise(fname, ("unknown option '%s'"):format(tostring(k)),
        "use leaf, fold, modify and prune")
    end
  end
  local leaf = S.opid(eg, fname, spec.leaf)
  if eg.reg.arity[leaf + 1] ~= 0 then
    S.raise(fname, ("leaf op '%s' has arity %d"):format(eg.reg.names[leaf + 1],
      eg.reg.arity[leaf + 1]), "name the leaf op (arity 0) that holds constants")
  end
  local fold = {}
  for opname, f in pairs(spec.fold or {}) do
    local op = S.opid(eg, fname, opname)
    local want = f == "neg" and 1 or 2
    if not FOLD[f] or eg.reg.arity[op + 1] ~= want
      or f == "/" and P.type_of(eg, leaf) ~= "f64" then
      S.raise(fname, ("fold of '%s' must be \"+\", \"-\", \"*\", \"/\" (f64 constants only; "
        .. "arity 2) or \"neg\" (arity 1) matching its arity %d, got %s"):format(opname,
        eg.reg.arity[op + 1], tostring(f)), "e.g. fold = {Add = \"+\", Neg = \"neg\"}")
    end
    fold[op] = FOLD[f]
  end
  if spec.modify ~= nil and type(spec.modify) ~= "boolean" then
    S.raise(fname, "modify must be a boolean", "pass modify = true to add constants' e-nodes")
  end
  if spec.prune ~= nil and (type(spec.prune) ~= "boolean" or spec.prune and not spec.modify) then
    S.raise(fname, "prune must be a boolean, and needs modify = true",
      "pass modify = true, prune = true to keep only the leaves of constant classes")
  end
  eg.an_idx = nil
  eg.an_spec = { leaf = leaf, fold = fold, modify = spec.modify or false,
    prune = spec.prune or false }
end

-- The per-op fold codes (1 the constant leaf) as a device buffer.
local function fold_buffer(eg)
  local a = eg.an_spec
  local codes = {}
  for i = 1, math.max(#eg.reg.names, 1) do codes[i] = a.fold[i - 1] or 0 end
  codes[a.leaf + 1] = 1
  local b = S.exact(eg, "an_fold", #codes)
  b:upload(codes)
  return b
end

--- Computes the analysis on the rebuilt, settled graph with index idx (match.index):
--- eg.an_state, eg.an_val. Returns the number of sweeps.
function AN.compute(eg, fname, idx)
  local be, nids = eg.be, eg.dev.nids
  local n = math.max(nids, 1)
  local st = { S.exact(eg, "an_st_a", n), S.exact(eg, "an_st_b", n) }
  local val = { S.exact(eg, "an_val_a", n, "i64"), S.exact(eg, "an_val_b", n, "i64") }
  st[1]:zero()
  val[1]:zero()
  local cur, sweeps = 1, 0
  if nids > 0 and eg.dev.nrows > 0 then
    local fold = fold_buffer(eg)
    local ty = P.type_of(eg, eg.an_spec.leaf) == "f64" and "f64" or "i64"
    local k = kernel(be, "sweep_" .. ty, (SWEEP:gsub("%$(%u+)", ARITH_TEXT[ty])))
    while true do
      local steps = {}
      S.zero_stat(eg, SWEEPS, steps)
      for s = 0, SWEEPS - 1 do
        local nxt = 3 - cur
        steps[#steps + 1] = { k, { parent = eg.parent, cls_rows = idx.cls_rows,
          cstart = idx.cstart, cend = idx.cend, row_op = eg.row_op, row_off = eg.row_off,
          children = eg.children, fold = fold, st_in = st[cur], val_in = val[cur],
          st_out = st[nxt], val_out = val[nxt], stat = eg.stat, n = nids, slot = s },
          S.grid(nids) }
        cur = nxt
      end
      local res = S.run(eg, fname, steps, { S.stat_readback(eg, SWEEPS) })
      sweeps = sweeps + SWEEPS
      if res[1][SWEEPS] == 0 then break end
      if sweeps > 2 * nids + 2 * SWEEPS then
        Err.raise("internal", "vyre.EGraph:" .. fname
          .. ": the analysis did not converge (a bug in vyre). Fix: "
          .. "please report it with the rules and terms that led here", 0)
      end
    end
  end
  eg.an_state, eg.an_val = st[cur], val[cur]
  return sweeps
end

--- The analysis of the graph as it is now (rebuilds and indexes first when needed).
function AN.current(eg, fname)
  if not eg.clean then R.rebuild(eg, fname) end
  S.settle(eg)
  -- the values stay valid while the query index does (any change drops eg.qidx)
  if eg.qidx and eg.an_idx == eg.qidx then return end
  local idx = eg.qidx or match.index(eg, fname)
  eg.qidx = idx
  AN.compute(eg, fname, idx)
  eg.an_idx = idx
end

--- egg's modify for constant folding, on the rebuilt graph: every class with one value
--- gets the leaf e-node of its value (kernels pick them, one add_many and one union_many
--- add them), then a rebuild, in rounds until one leaves the e-nodes and the partition
--- as they were (uanalysis.rounds); with prune, the constant classes then keep only
--- their leaves (egg's `retain(is_leaf)`). Returns the rounds.
function AN.modify(eg, fname)
  local rounds = UA.modify(eg, fname)
  if not (eg.an_spec and eg.an_spec.modify) then return rounds end
  return rounds + UA.rounds(eg, fname, "constant folding", function(idx)
    AN.compute(eg, fname, idx)
    return UA.flags(eg, fname, FLAGS, { parent = eg.parent, st = eg.an_state })
  end, function(flag, rank, k)
    UA.add_flagged(eg, fname, eg.an_spec.leaf, flag, rank, k, PICK, { val = eg.an_val })
  end, eg.an_spec.prune)
end

--- eg:const(c) -> value | nil, "none" | "one" | "conflict".
function AN.value(eg, fname, c)
  if not eg.an_spec then
    S.raise(fname, "the e-graph has no analysis", "declare it with eg:analysis(\"const\", "
      .. "{leaf = \"Num\", fold = {...}})")
  end
  S.check_id(eg, fname, c, "argument 1")
  AN.current(eg, fname)
  local root = eg.parent:download({ first = c + 1, count = 1 })[1]
  local s = eg.an_state:download({ first = root + 1, count = 1 })[1]
  if s == 1 then
    return P.decode(eg, eg.an_spec.leaf, eg.an_val:download({ first = root + 1, count = 1 })[1]),
      "one"
  end
  return nil, s == 0 and "none" or "conflict"
end

return AN
