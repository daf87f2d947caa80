-- vyre.egraph.kernels — the vyre programs of the e-graph (docs/EGRAPH.md), generated as
-- text and compiled once per backend through vyre.lib's kernel cache, so the reference
-- interpreter runs exactly what the GPU runs.
--
-- Layout they work on (structure of arrays, u32 everywhere):
--   parent[id]        union-find over e-class ids; a root is its own parent, and every
--                     parent pointer goes to a smaller id, so a root is the minimum id of
--                     its set (the canonical id).
--   row_class[r], row_op[r], row_off[r], row_len[r]   one row per e-node;
--   children[w]       child e-class ids; a leaf row (an op of arity 0) holds its 64-bit
--                     payload there as two words (low, high) that are never canonicalised.
--   isleaf[op]        1 for ops of arity 0.
--
-- Union-find on the device is lock-free (ECL-CC style): find walks parent pointers with
-- path halving (plain stores that only ever replace a pointer by an ancestor), and union
-- hooks the larger root under the smaller with a compare-and-swap that expects the root
-- to still be a root. A failed CAS returns a strictly smaller ancestor to continue from,
-- so every union ends even when a load sees a stale pointer. The final pointers (after
-- `eg_compress`, whose walks only read) are the set minima whatever the timing, and each
-- successful CAS merges two sets, so merge counts are exact too.
local U = require("vyre.lib.shared")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)

local K = {}

local INF64 = "18446744073709551615u64"

--- Statements setting variable `r` (already declared, holding a start id) to its root.
local function find(p, r)
  return U.fill([[
(for $Pj 0u32 4294967295u32 1u32
  (let $Pp (load parent $R))
  (if (eq $Pp $R) (then (break)))
  (let $Pg (load parent $Pp))
  (if (ne $Pg $Pp) (then (store parent $R $Pg)))
  (set $R $Pg))]], { P = p, R = r })
end

--- Statements uniting the sets of ids `a` and `b` (u32 expressions); adds 1 to the u32
--- variable `merged` when the call joined two sets.
local function union(p, a, b)
  return U.fill([[
(let $Pa $A)
(let $Pb $B)
(for $Pit 0u32 4294967295u32 1u32
$FINDA
$FINDB
  (if (eq $Pa $Pb) (then (break)))
  (let $Phi (max $Pa $Pb))
  (let $Plo (min $Pa $Pb))
  (let $Pold (atomic cas parent $Phi $Phi $Plo))
  (if (eq $Pold $Phi)
    (then
      (set merged (add merged 1u32))
      (break)))
  (if (eq $Phi $Pa) (then (set $Pa $Pold)) (else (set $Pb $Pold))))]], {
    P = p, A = a, B = b,
    FINDA = "  " .. find(p .. "fa", p .. "a"):gsub("\n", "\n  "),
    FINDB = "  " .. find(p .. "fb", p .. "b"):gsub("\n", "\n  "),
  })
end

K.union = union -- saturate.lua's batched apply unites inside its own kernels

--- Statements adding the u32 variable `v` of every invocation of the subgroup to
--- stat[slot] with one atomic per subgroup (uniform control flow only).
local function count(v, slot, p)
  return U.fill([[
(let $Ps (subgroup_reduce add $V))
(if (land (eq (subgroup_lane) 0u32) (ne $Ps 0u32)) (then (atomic add stat $SLOT $Ps)))]],
    { V = v, SLOT = slot, P = p })
end

--- The row signature of the original system: mix(h, v) = rotl32(h ^ (v + 0x9E3779B9 + (h << 6) +
--- (h >> 2)), 13) * 0x85EBCA6B, seeded mix(mix(0xA24BAED4, op), nchildren), then every
--- word of the children column (for leaves: the payload's two words).
local function mix(p, h, v)
  return U.fill([[
(let $Px (xor $H (add (add (add $V 2654435769u32) (shl $H 6u32)) (shr $H 2u32))))
(set $H (mul (or (shl $Px 13u32) (shr $Px 19u32)) 2246822507u32))]], { P = p, H = h, V = v })
end

K.SEED = 0xA24BAED4

--- Lua model of the signature (for the specs and the host).
K.count = count -- for the batched apply's union kernels

function K.signature(op, words)
  local function m(h, v)
    local x = (h ~ ((v + 0x9E3779B9 + ((h << 6) & 0xffffffff) + (h >> 2)) & 0xffffffff))
    x = ((x << 13) | (x >> 19)) & 0xffffffff
    return (x * 0x85EBCA6B) & 0xffffffff
  end
  local h = m(m(K.SEED, op), #words)
  for _, w in ipairs(words) do h = m(h, w) end
  return h
end

-- text: the program text, or a function making it (called only on a cache miss: the
-- templates filled with U.fill are not re-filled each time an iteration asks for them).
-- "egraph:" .. name, made once per name (every step of an iteration asks for its kernel)
local KEYS = setmetatable({}, { __index = function(k, name)
  local v = "egraph:" .. name
  rawset(k, name, v)
  return v
end })
local function kernel(be, name, text)
  return U.kernel(be, KEYS[name], function()
    return SC.expand(type(text) == "function" and text() or text)
  end)
end

local APPEND_MANY = [[
(program eg_append_many (workgroup 256)
  (buffer src u32 read)
  (columns read_write children row_class row_op row_off row_len parent stat)
  (param n u32)
  (param arity u32)
  (param op u32)
  (param row0 u32)
  (param id0 u32)
  (param word0 u32)
  (let i (gid x))
  (let bad 0u32)
  (if (lt i n)
    (then
      (let r (add row0 i))
      (let w (add word0 (mul i arity)))
      (store row_class r (add id0 i))
      (store row_op r op)
      (store row_off r w)
      (store row_len r arity)
      (store parent (add id0 i) (add id0 i))
      (for k 0u32 arity 1u32
        (let c (load src (add (mul i arity) k)))
        (store children (add w k) c)
        (if (ge c id0) (then (set bad (add bad 1u32)))))))
$COUNT)
]]

--- Appends n rows of one op and arity (arity >= 1), children from src (n * arity ids);
--- stat[0] += the children that are not existing ids (>= id0), for the caller's check.
function K.append_many(be)
  return kernel(be, "append_many", function() return U.fill(APPEND_MANY,
    { COUNT = "  " .. count("bad", "0u32", "c_"):gsub("\n", "\n  ") }) end)
end

local APPEND_LEAF = [[
(program eg_append_leaf_$T (workgroup 256)
  (buffer src $T read)
  (columns read_write children row_class row_op row_off row_len parent)
  (param n u32)
  (param op u32)
  (param row0 u32)
  (param id0 u32)
  (param word0 u32)
  (let i (gid x))
  (if (lt i n)
    (then
      (let r (add row0 i))
      (let w (add word0 (mul i 2u32)))
      (let v (load src i))
      (store row_class r (add id0 i))
      (store row_op r op)
      (store row_off r w)
      (store row_len r 2u32)
      (store parent (add id0 i) (add id0 i))
      (store children w $LO)
      (store children (add w 1u32) $HI))))
]]

local LEAF_WORDS = {
  i64 = { "(cast u32 v)", "(cast u32 (shr v 32i64))" },
  u64 = { "(cast u32 v)", "(cast u32 (shr v 32u64))" },
  i32 = { "(bitcast u32 v)", "(select (lt v 0i32) 4294967295u32 0u32)" },
  u32 = { "v", "0u32" },
}
K.LEAF_TYPES = { "i64", "u64", "i32", "u32" }

--- Appends n leaves of one op, payload i from src[i] (widened to 64 bits).
function K.append_leaf(be, t)
  return kernel(be, "append_leaf:" .. t, function() return U.fill(APPEND_LEAF,
    { T = t, LO = LEAF_WORDS[t][1], HI = LEAF_WORDS[t][2] }) end)
end

local APPEND_ROWS = [[
(program eg_append_rows (workgroup 256)
  (buffer pop u32 read)
  (buffer plen u32 read)
  (buffer poff u32 read)
  (buffer pwords u32 read)
  (columns read_write children row_class row_op row_off row_len parent)
  (param n u32)
  (param row0 u32)
  (param id0 u32)
  (param word0 u32)
  (let i (gid x))
  (if (lt i n)
    (then
      (let r (add row0 i))
      (let len (load plen i))
      (let o (load poff i))
      (let w (add word0 o))
      (store row_class r (add id0 i))
      (store row_op r (load pop i))
      (store row_off r w)
      (store row_len r len)
      (store parent (add id0 i) (add id0 i))
      (for k 0u32 len 1u32 (store children (add w k) (load pwords (add o k)))))))
]]

--- Appends n rows of mixed ops from host-staged columns (single eg:add / eg:leaf calls,
--- checked on the host).
function K.append_rows(be) return kernel(be, "append_rows", APPEND_ROWS) end

--- stat[0] += the number of src[i] >= limit, i < n (an id bound check made before any
--- state changes).
function K.bad_ids(be)
  return kernel(be, "bad_ids", function() return U.fill([[
(program eg_bad_ids (workgroup 256)
  (buffer src u32 read)
  (columns read_write stat)
  (param n u32)
  (param limit u32)
  (let i (gid x))
  (let bad 0u32)
  (if (lt i n) (then (if (ge (load src i) limit) (then (set bad 1u32)))))
$COUNT)
]], { COUNT = "  " .. count("bad", "0u32", "c_"):gsub("\n", "\n  ") }) end)
end

--- Unions the pairs (pairs[2i], pairs[2i+1]) for i < n; stat[slot] += merges.
function K.union_pairs(be)
  return kernel(be, "union_pairs", function() return U.fill([[
(program eg_union_pairs (workgroup 256)
  (columns read_write parent)
  (buffer pairs u32 read)
  (columns read_write stat)
  (param n u32)
  (param slot u32)
  (let i (gid x))
  (let merged 0u32)
  (if (lt i n)
    (then
$UNION))
$COUNT)
]], {
    UNION = "      " .. union("u_", "(load pairs (mul i 2u32))",
      "(load pairs (add (mul i 2u32) 1u32))"):gsub("\n", "\n      "),
    COUNT = "  " .. count("merged", "slot", "c_"):gsub("\n", "\n  "),
  }) end)
end

--- parent[x] = root(x) for x < n: afterwards every pointer is the canonical id. The walk
--- only reads: a path-halving store here could land after another invocation stored its
--- root and put an older ancestor back, leaving a pointer that is not canonical. Every
--- store is a final root, so whatever a walk reads is an ancestor and the result is exact.
function K.compress(be)
  return kernel(be, "compress", [[
(program eg_compress (workgroup 256)
  (columns read_write parent)
  (param n u32)
  (let x (gid x))
  (if (lt x n)
    (then
      (let r x)
      (for j 0u32 4294967295u32 1u32
        (let p (load parent r))
        (if (eq p r) (then (break)))
        (set r p))
      (if (ne (load parent x) r) (then (store parent x r))))))
]])
end

local CANON = [[
(program eg_canon (workgroup 256)
  (columns read parent isleaf)
  (columns read_write children row_class)
  (columns read row_op row_off row_len)
  (buffer sig u32 write)
  (buffer vals u32 write)
  (columns read_write row_epoch)
  (param n u32)
  (param cur u32)
  (let r (gid x))
  (if (lt r n)
    (then
      (let c0 (load row_class r))
      (let c1 (load parent c0))
      (let chg (select (ne c0 c1) 1u32 0u32))
      (if (ne c0 c1) (then (store row_class r c1)))
      (let op (load row_op r))
      (let o (load row_off r))
      (let len (load row_len r))
      (let leaf (ne (load isleaf op) 0u32))
      (let h $SEEDu32)
$MIXOP
$MIXLEN
      (for k 0u32 len 1u32
        (let wi (add o k))
        (let w0 (load children wi))
        (let w w0)
        (if (lnot leaf)
          (then
            (set w (load parent w0))
            (if (ne w w0) (then (store children wi w) (set chg 1u32)))))
$MIXW)
      (if (ne chg 0u32)
        (then (store row_epoch r (or cur (and (load row_epoch r) 2147483648u32)))))
      (store sig r h)
      (store vals r r))))
]]

--- Canonicalises each row's class and (non-leaf) children through a compressed parent
--- array, and writes its signature sig[r] and vals[r] = r (the sort's payload). A row
--- whose class or children changed gets row_epoch[r] = cur: it can make new matches
--- (semi-naive search, docs/EGRAPH.md).
function K.canon(be)
  local function ind(t, n) return string.rep(" ", n) .. t:gsub("\n", "\n" .. string.rep(" ", n)) end
  return kernel(be, "canon", function() return U.fill(CANON, {
    SEED = K.SEED, MIXOP = ind(mix("mo_", "h", "op"), 6), MIXLEN = ind(mix("ml_", "h", "len"), 6),
    MIXW = ind(mix("mw_", "h", "w"), 8),
  }) end)
end

--- start[p] = p where a run of equal sorted keys begins, else 0 (a max-scan then gives
--- every position the start of its run).
function K.heads(be)
  return kernel(be, "heads", [[
(program eg_heads (workgroup 256)
  (buffer keys u32 read)
  (buffer start u32 write)
  (param n u32)
  (let p (gid x))
  (if (lt p n)
    (then
      (let h (select (eq p 0u32) true (ne (load keys p) (load keys (sub p 1u32)))))
      (store start p (select h p 0u32)))))
]])
end

-- The start of a sorted run's scan shared by match and the explanations' congruence
-- log: row i = vals[p] against every earlier row j of its run (start[p] .. p - 1), eqv
-- when both have the same op, arity and child ids (the caller closes the for).
K.SAME_ROWS = [[
      (let i (load vals p))
      (let opi (load row_op i))
      (let oi (load row_off i))
      (let li (load row_len i))
      (for q (load start p) p 1u32
        (let j (load vals q))
        (let oj (load row_off j))
        (let eqv (land (eq (load row_op j) opi) (eq (load row_len j) li)))
        (if eqv
          (then
            (for k 0u32 li 1u32
              (if (ne (load children (add oi k)) (load children (add oj k)))
                (then
                  (set eqv false)
                  (break))))))]]

local MATCH = [[
(program eg_match (workgroup 256)
  (columns read_write parent)
  (columns read children row_class row_op row_off row_len)
  (buffer vals u32 read)
  (buffer start u32 read)
  (buffer keep u32 write)
  (columns read_write row_epoch stat)
  (param n u32)
  (let p (gid x))
  (let merged 0u32)
  (let dup 0u32)
  (if (lt p n)
    (then
$SAMEROWS
        (if eqv
          (then
            (set dup 1u32)
            (let sb (and (load row_epoch i) 2147483648u32))
            (if (ne sb 0u32) (then (atomic or row_epoch j sb)))
$UNION
            (break))))
      (store keep i (sub 1u32 dup))))
$COUNTM
$COUNTD)
]]

--- For each sorted position p: the row compares itself with the rows of its signature
--- run from the run's start, and at the first structurally equal one (same op, length
--- and words) unites the two classes and marks itself a duplicate (keep = 0). The first
--- row of each congruence group in the run stays (keep = 1). stat[0] += merges,
--- stat[1] += duplicates.
function K.match(be)
  return kernel(be, "match", function() return U.fill(MATCH, {
    SAMEROWS = K.SAME_ROWS,
    UNION = "            " .. union("m_", "(load row_class i)", "(load row_class j)")
      :gsub("\n", "\n            "),
    COUNTM = "  " .. count("merged", "0u32", "cm_"):gsub("\n", "\n  "),
    COUNTD = "  " .. count("dup", "1u32", "cd_"):gsub("\n", "\n  "),
  }) end)
end

--- Moves the kept rows r (keep[r] != 0) to rank[r] in the second set of columns.
function K.scatter_rows(be)
  return kernel(be, "scatter_rows", [[
(program eg_scatter_rows (workgroup 256)
  (buffer keep u32 read)
  (buffer rank u32 read)
  (columns read row_class row_op row_off row_len row_epoch)
  (buffer out_class u32 write)
  (buffer out_op u32 write)
  (buffer out_off u32 write)
  (buffer out_len u32 write)
  (buffer out_epoch u32 write)
  (param n u32)
  (let r (gid x))
  (if (lt r n)
    (then
      (if (ne (load keep r) 0u32)
        (then
          (let d (load rank r))
          (store out_class d (load row_class r))
          (store out_op d (load row_op r))
          (store out_off d (load row_off r))
          (store out_len d (load row_len r))
          (store out_epoch d (load row_epoch r)))))))
]])
end

--- Copies each row's words to its new offset woff[r] in the second children column and
--- points the row there (children compaction after rows were removed).
function K.move_words(be)
  return kernel(be, "move_words", [[
(program eg_move_words (workgroup 256)
  (columns read children)
  (buffer out_children u32 write)
  (columns read_write row_off)
  (columns read row_len)
  (buffer woff u32 read)
  (param n u32)
  (let r (gid x))
  (if (lt r n)
    (then
      (let o (load row_off r))
      (let d (load woff r))
      (for k 0u32 (load row_len r) 1u32
        (store out_children (add d k) (load children (add o k))))
      (store row_off r d))))
]])
end

--- dst[dst0 + i] = src[src0 + i] for i < n (u32 ranges: growth, images).
function K.copy_range(be)
  return kernel(be, "copy_range", [[
(program eg_copy_range (workgroup 256)
  (buffer src u32 read)
  (buffer dst u32 write)
  (param n u32)
  (param src0 u32)
  (param dst0 u32)
  (let i (gid x))
  (if (lt i n) (then (store dst (add dst0 i) (load src (add src0 i))))))
]])
end

--- buf[i] = value for from <= i < n (the epoch of rows added since the last rebuild).
function K.fill_from(be)
  return kernel(be, "fill_from", [[
(program eg_fill_from (workgroup 256)
  (buffer buf u32 write)
  (param from u32)
  (param n u32)
  (param value u32)
  (let i (add from (gid x)))
  (if (lt i n) (then (store buf i value))))
]])
end

--- mark[root(row_class[r])] = 1 for r < n (the e-classes that have e-nodes).
function K.mark(be)
  return kernel(be, "mark", [[
(program eg_mark (workgroup 256)
  (columns read parent row_class)
  (buffer mark u32 write)
  (param n u32)
  (let r (gid x))
  (if (lt r n) (then (store mark (load parent (load row_class r)) 1u32))))
]])
end

--- stat[slot] += the number of nonzero src[i], i < n.
function K.count_nonzero(be)
  return kernel(be, "count_nonzero", function() return U.fill([[
(program eg_count_nonzero (workgroup 256)
  (buffer src u32 read)
  (columns read_write stat)
  (param n u32)
  (param slot u32)
  (let i (gid x))
  (let v 0u32)
  (if (lt i n) (then (if (ne (load src i) 0u32) (then (set v 1u32)))))
$COUNT)
]], { COUNT = "  " .. count("v", "slot", "c_"):gsub("\n", "\n  ") }) end)
end

--- Group heads of rows sorted by class: flag[p] = 1 where a new class starts.
function K.flags(be)
  return kernel(be, "flags", [[
(program eg_flags (workgroup 256)
  (buffer keys u32 read)
  (buffer flag u32 write)
  (param n u32)
  (let p (gid x))
  (if (lt p n)
    (then
      (let h (select (eq p 0u32) true (ne (load keys p) (load keys (sub p 1u32)))))
      (store flag p (select h 1u32 0u32)))))
]])
end

--- gcls[rank[p]] = keys[p], goff[rank[p]] = p at each group head; goff[G] = n.
function K.groups(be)
  return kernel(be, "groups", [[
(program eg_groups (workgroup 256)
  (buffer keys u32 read)
  (buffer flag u32 read)
  (buffer rank u32 read)
  (buffer gcls u32 write)
  (buffer goff u32 write)
  (param n u32)
  (param ng u32)
  (let p (gid x))
  (if (lt p n)
    (then
      (if (ne (load flag p) 0u32)
        (then
          (store gcls (load rank p) (load keys p))
          (store goff (load rank p) p)))
      (if (eq p 0u32) (then (store goff ng n))))))
]])
end

local COST = [[
(program eg_cost (workgroup 256)
  (columns read row_epoch isleaf)
  (buffer opcost u64 read)
  (columns read children row_class row_op row_off row_len)
  (buffer ccost u64 read_write)
  (columns read_write stat)
  (param n u32)
  (param slot u32)
  (let r (gid x))
  (let changed 0u32)
  (if (lt r n)
    (then
$ROWCOST
      (let cls (load row_class r))
      (if (lt s (load ccost cls))
        (then
          (let old (atomic min ccost cls s))
          (if (lt s old) (then (set changed 1u32)))))))
$COUNT)
]]

local BEST = [[
(program eg_best (workgroup 256)
  (columns read row_epoch isleaf)
  (buffer opcost u64 read)
  (columns read children row_class row_op row_off row_len)
  (buffer ccost u64 read)
  (buffer best u32 read_write)
  (param n u32)
  (let r (gid x))
  (if (lt r n)
    (then
$ROWCOST
      (let cls (load row_class r))
      (if (land (ne s $INF) (eq s (load ccost cls)))
        (then (atomic min best cls r))))))
]]

-- The cost of row r: its op's cost plus its children's class costs, saturating at INF.
local ROWCOST = U.fill([[
      (let op (load row_op r))
      (let s (select (ne (and (load row_epoch r) 2147483648u32) 0u32) $INF (load opcost op)))
      (if (eq (load isleaf op) 0u32)
        (then
          (let o (load row_off r))
          (for k 0u32 (load row_len r) 1u32
            (let cc (load ccost (load children (add o k))))
            (set s (select (gt cc (sub $INF s)) $INF (add s cc))))))]], { INF = INF64 })

--- One Bellman-Ford sweep of class costs: ccost[class] = min over its rows of the row
--- cost; stat[slot] += rows that lowered their class's cost.
function K.cost(be)
  return kernel(be, "cost", function() return U.fill(COST, {
    ROWCOST = ROWCOST, COUNT = "  " .. count("changed", "slot", "c_"):gsub("\n", "\n  "),
  }) end)
end

--- best[class] = the smallest row whose cost is the class's (finite) cost.
function K.best(be)
  return kernel(be, "best", function() return U.fill(BEST, { ROWCOST = ROWCOST, INF = INF64 }) end)
end

return K
