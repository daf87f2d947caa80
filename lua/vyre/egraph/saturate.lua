-- vyre.egraph.saturate — searching and applying rules (docs/EGRAPH.md, "Equality
-- saturation"); the loop, the schedulers and the schedules are run.lua.
--
-- One iteration (run.lua): build the indexes of the rebuilt graph, search every rule the
-- scheduler allows (match.lua: one device pipeline per pattern), then apply the matches
-- of every rule, then rebuild. Apply never loops over matches in Lua: each right-hand
-- node becomes one gather kernel (its children, for all m matches, from substitution
-- columns or from the ids of right-hand nodes made just before) and one eg:add_many; a
-- payload computed from payload variables becomes one i64 kernel and one add_many of
-- leaves; the unions become one pairs kernel and one eg:union_many. Only host guards
-- (Lua functions) and multi-pattern joins read substitutions back to the host.
--
-- Semi-naive search (docs/EGRAPH.md): eg.epoch counts searches; rows added or changed
-- after a search get its epoch (rebuild.lua), and rule.since is the epoch of the rule's
-- last search whose matches were applied. A match all of whose rows are older was found
-- and applied then, with the same substitution, so applying it again changes nothing:
-- only new matches are applied. The scheduler still sees the count of all matches, so
-- the e-graph after every iteration is the one the naive search gives.
local U = require("vyre.lib.shared")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)
local S = require("vyre.egraph.store")
local rules = require("vyre.egraph.rules")
local match = require("vyre.egraph.match")
local callback = require("vyre.callback")

local A = {}

local function kernel(be, text)
  return U.kernel(be, "eqsat:" .. text, function() return SC.expand(text) end)
end

local function u32lit(v) return ("%du32"):format(v) end

-- the node kernels' id parameters a1, a2, ... (named once, not per launch)
local ANAMES = {}
for k = 1, 16 do ANAMES[k] = "a" .. k end
setmetatable(ANAMES, { __index = function(t, k)
  local v = "a" .. k
  rawset(t, k, v)
  return v
end })

-- A source of one u32 per match: {col = c} (a substitution column) or {id = x, step = 0|1}
-- (x, or x + i for ids made by an add_many of m nodes). Its expression in a kernel,
-- where parameter a<k> holds the id.
local function src_expr(src, k)
  if src.col then return ("(load sub (add (mul %s m) i))"):format(u32lit(src.col)) end
  if src.step == 1 then return ("(add a%d i)"):format(k) end
  return ("a%d"):format(k)
end

local function gather_text(srcs, nout)
  local params, body = {}, {}
  for k, s in ipairs(srcs) do
    params[#params + 1] = ("  (param a%d u32)"):format(k)
    body[#body + 1] = ("      (store out (add (mul i %s) %s) %s)"):format(u32lit(nout),
      u32lit(k - 1), src_expr(s, k))
  end
  return ([[
(program eq_gather (workgroup 256)
  (buffer sub u32 read)
  (buffer out u32 write)
  (param m u32)
%s
  (let i (gid x))
  (if (lt i m)
    (then
%s)))
]]):format(table.concat(params, "\n"), table.concat(body, "\n"))
end

-- Runs a gather of srcs (one u32 each per match) into a fresh exact buffer of m * #srcs.
local function gather(eg, fname, sub, m, srcs, role)
  local out = S.exact(eg, role, m * #srcs)
  local args = { sub = sub, out = out, m = m }
  for k, s in ipairs(srcs) do args["a" .. k] = s.id or 0 end
  S.run(eg, fname, { { kernel(eg.be, gather_text(srcs, #srcs)), args, S.grid(m) } })
  return out
end

-- The payload lets and the i64 bits of a computed leaf payload: the body of the kernel
-- of payloads() and of the batched apply's computed leaves.
local function payload_code(eg, lay, e, op)
  local lets = {}
  for name, col in pairs(lay.payload) do
    lets[#lets + 1] = ("      (let p_%s_lo (load sub (add (mul %s m) i)))"):format(name,
      u32lit(col))
    lets[#lets + 1] = ("      (let p_%s_hi (load sub (add (mul %s m) i)))"):format(name,
      u32lit(col + 1))
  end
  table.sort(lets)
  return table.concat(lets, "\n"),
    match.bits64(e, require("vyre.egraph.payload").type_of(eg, op))
end

-- The i64 payload of each match from a payload expression.
local function payloads(eg, fname, sub, m, lay, e, op)
  local text = ([[
(program eq_payload (workgroup 256)
  (buffer sub u32 read)
  (buffer out i64 write)
  (param m u32)
  (let i (gid x))
  (if (lt i m)
    (then
%s
      (store out i %s))))
]]):format(payload_code(eg, lay, e, op))
  local out = S.exact(eg, "ap_pay", m, "i64")
  S.run(eg, fname, { { kernel(eg.be, text), { sub = sub, out = out, m = m }, S.grid(m) } })
  return out
end

-- Adds the right-hand term t for every match; returns its source.
local function instantiate(eg, fname, sub, m, lay, t)
  if t.kind == "root" then return { col = 0 } end
  if t.kind == "var" then return { col = lay.class[t.name] } end
  if t.kind == "leaf" then
    local p = t.payload
    if p.kind == "int" then
      -- the literal's bits, as the pattern read them (payload.lua)
      return { id = S.stage(eg, t.op, { p.value & 0xffffffff, (p.value >> 32) & 0xffffffff }),
        step = 0 }
    end
    local first = eg:add_many(t.op, payloads(eg, fname, sub, m, lay, p, t.op))
    return { id = first, step = 1 }
  end
  local srcs = {}
  for k, a in ipairs(t.args) do srcs[k] = instantiate(eg, fname, sub, m, lay, a) end
  local first = eg:add_many(t.op, gather(eg, fname, sub, m, srcs, "ap_kids"))
  return { id = first, step = 1 }
end

--- Applies m matches (sub: column-major substitutions in layout lay) of rule: adds the
--- right-hand sides and unites.
function A.apply(eg, fname, rule, sub, m, lay)
  if m == 0 then return 0 end
  if rule.applier then return require("vyre.egraph.applier").apply(eg, fname, rule, sub, m, lay) end
  local merges = 0
  -- explanations (explain.lua): the union of a rule of one pattern joins its left-hand
  -- side instantiated anew (a term one rewrite from the right-hand side), and the
  -- rebuild finds that term congruent to the matched e-node
  local lhs = eg.xlog and #rule.pats == 1 and rule.pats[1]
  if eg.xlog then eg.xwhy = 2 + rule.xindex end
  for _, pr in ipairs(rule.unions) do
    local a = instantiate(eg, fname, sub, m, lay, lhs and pr[1].kind == "root" and lhs or pr[1])
    local b = instantiate(eg, fname, sub, m, lay, pr[2])
    merges = merges + eg:union_many(gather(eg, fname, sub, m, { a, b }, "ap_pairs"))
  end
  eg.xwhy = nil
  return merges
end

-- Batched apply -----------------------------------------------------------------------
--
-- The same e-nodes and unions as A.apply, in the same order and with the same ids, but
-- all rules of an iteration in one sequence and one synchronisation: the host knows m
-- for every rule, so it hands out the new rows, words and ids itself, and each
-- right-hand node is one kernel that writes its rows straight from the substitution
-- columns (no gather buffer, no add_many), each union set one kernel that unites
-- straight from them (no pairs buffer, no id check: every id is a matched e-class or
-- one made just before). The merges are counted in stat[0], read back once.

-- The kernel writing m rows of op (arity >= 1), child k from srcs[k].
-- The declarations every row-writing apply kernel starts with: the substitutions, the
-- row columns, and where this batch's rows, ids and child words start.
local function row_head(name)
  return ([[
(program %s (workgroup 256)
  (buffer sub u32 read)
  (columns read_write children row_class row_op row_off row_len parent)
  (param m u32)
  (param op u32)
  (param row0 u32)
  (param id0 u32)
  (param word0 u32)]]):format(name)
end

-- Row i of the batch: its class (a new id, its own parent), op, and len child words at w.
local function row_store(len)
  return ([[
      (let r (add row0 i))
      (let w (add word0 (mul i %s)))
      (store row_class r (add id0 i))
      (store row_op r op)
      (store row_off r w)
      (store row_len r %s)
      (store parent (add id0 i) (add id0 i))]]):format(len, len)
end

local function node_text(srcs)
  local params, body = {}, {}
  for k, src in ipairs(srcs) do
    params[#params + 1] = ("  (param a%d u32)"):format(k)
    body[#body + 1] = ("      (store children (add w %s) %s)"):format(u32lit(k - 1),
      src_expr(src, k))
  end
  return ("%s\n%s\n  (let i (gid x))\n  (if (lt i m)\n    (then\n%s\n%s)))\n"):format(
    row_head("eq_apply_node"), table.concat(params, "\n"), row_store(u32lit(#srcs)),
    table.concat(body, "\n"))
end

-- The kernel writing m leaves of op, payload i computed from match i (code: i64 bits)
-- or, with m = 1 and no code, the literal (lo, hi).
local function leaf_text(lets, code)
  return ([[
%s
  (param lo u32)
  (param hi u32)
  (let i (gid x))
  (if (lt i m)
    (then
%s
      (let v %s)
%s
      (store children w (cast u32 v))
      (store children (add w 1u32) (cast u32 (shr v 32i64))))))
]]):format(row_head("eq_apply_leaf"), lets,
    code or "(bitcast i64 (or (cast u64 lo) (shl (cast u64 hi) 32u64)))", row_store("2u32"))
end

local function union_text(sa, sb)
  local K = require("vyre.egraph.kernels")
  return U.fill([[
(program eq_apply_union (workgroup 256)
  (columns read_write parent)
  (buffer sub u32 read)
  (columns read_write stat)
  (param m u32)
  (param a1 u32)
  (param a2 u32)
  (let i (gid x))
  (let merged 0u32)
  (if (lt i m)
    (then
$UNION))
$COUNT)
]], {
    UNION = "      " .. K.union("u_", src_expr(sa, 1), src_expr(sb, 2)):gsub("\n", "\n      "),
    COUNT = "  " .. K.count("merged", "0u32", "c_"):gsub("\n", "\n  "),
  })
end

-- The batched apply's kernels by shape: a kernel's text depends only on where each
-- source comes from (a substitution column, or an id param with its step), so the cache
-- key is that shape, and the text is written only when the shape is new (every
-- iteration asks for the same kernels again).
local function src_key(src) return src.col and ("c" .. src.col) or ("s" .. src.step) end
local function shaped(be, what, srcs, text_of)
  local key = {}
  for k, src in ipairs(srcs) do key[k] = src_key(src) end
  return U.kernel(be, ("eqsat:%s:%s"):format(what, table.concat(key, ",")),
    function() return SC.expand(what == "union" and text_of(srcs[1], srcs[2]) or text_of(srcs)) end)
end
-- The literal leaf's kernel text (one e-node per literal, its payload in params lo, hi).
local function literal_leaf() return SC.expand(leaf_text("", nil)) end
-- out = the substitutions [i0, i0 + mc) of src (column-major, m rows per column),
-- column-major with mc rows per column (a segment's share of a node's matches)
local function sub_slice()
  return [[
(program eqsat_sub_slice (workgroup 256)
  (buffer src u32 read)
  (buffer out u32 write)
  (param m u32)
  (param i0 u32)
  (param mc u32)
  (param total u32)
  (let i (gid x))
  (if (lt i total)
    (then
      (let c (div i mc))
      (store out i (load src (add (mul c m) (add i0 (sub i (mul c mc)))))))))
]]
end
-- parent[from .. n) = their own ids (a segment's ids before their rows are staged)
local function iota_from()
  return [[
(program eqsat_iota_from (workgroup 256)
  (columns write parent)
  (param from u32)
  (param n u32)
  (let i (add from (gid x)))
  (if (lt i n) (then (store parent i i))))
]]
end


--- true when A.apply_batch can apply this rule's matches (a pattern right-hand side,
--- no explanations log).
function A.batchable(eg, rule)
  return not rule.applier and not eg.xlog
end

--- The rows (= ids) and child words that applying m matches of rule adds: both are
--- linear in m, so the coefficients are counted once per rule (rule.added) and an
--- iteration only multiplies.
function A.added(_, rule, m)
  local c = rule.added
  if not c or c.unions ~= rule.unions then
    local r0, r1, w0, w1 = 0, 0, 0, 0
    local function walk(t)
      if t.kind == "root" or t.kind == "var" then return end
      if t.kind == "leaf" then
        -- a literal leaf is one e-node for all matches, a computed one m
        if t.payload.kind == "int" then
          r0, w0 = r0 + 1, w0 + 2
        else
          r1, w1 = r1 + 1, w1 + 2
        end
        return
      end
      for _, a in ipairs(t.args) do walk(a) end
      r1, w1 = r1 + 1, w1 + #t.args
    end
    for _, pr in ipairs(rule.unions) do
      walk(pr[1])
      walk(pr[2])
    end
    c = { unions = rule.unions, r0 = r0, r1 = r1, w0 = w0, w1 = w1 }
    rule.added = c
  end
  return c.r0 + c.r1 * m, c.w0 + c.w1 * m
end

-- The kernels of one rule's right-hand side in the order apply_batch launches them, per
-- backend, layout and debug mode: they depend only on the rule's shape, so an iteration
-- looks them up here (a list index) instead of writing each shape's cache key (or a
-- computed leaf's whole text) again.
local function rhs_kernels(rule, be, lay)
  local per_be = rule.apk
  if not per_be then
    per_be = setmetatable({}, { __mode = "k" })
    rule.apk = per_be
  end
  local per_lay = per_be[be]
  if not per_lay then
    per_lay = setmetatable({}, { __mode = "k" })
    per_be[be] = per_lay
  end
  local dbg = be:debug() and 2 or 1
  local c = per_lay[lay]
  if not c then
    c = { {}, {} } -- [1] debug off, [2] debug on
    per_lay[lay] = c
  end
  return c[dbg]
end

--- Applies the matches of every entry {rule, sub, m, lay} of list (A.batchable rules)
--- in one sequence; returns the merges. dry: only compile the kernels it would launch
--- (A.prepare), touching nothing. An entry may carry seg = {lo, hi, base} (pieces.lua):
--- it then stages only rows [lo, hi) of the rows the whole entry would stage, in the
--- same order and with the same ids (base is the whole entry's first id), and unites its
--- matches with the segment that ends the entry (hi = all its rows).
function A.apply_batch(eg, fname, list, dry)
  if not dry then S.flush(eg) end
  local rows, words, ids = 0, 0, eg.nids
  for _, f in ipairs(list) do
    local r, w = A.added(eg, f.rule, f.m)
    local seg = f.seg
    if seg then
      -- a row holds at most 2 child words or payload words per child
      w = math.ceil(w / math.max(r, 1)) * (seg.hi - seg.lo)
      ids = math.max(ids, seg.base + r)
      r = seg.hi - seg.lo
    end
    rows, words = rows + r, words + w
  end
  ids = math.max(ids, eg.nids + rows)
  if rows + eg.nrows > S.LIMIT or ids > S.LIMIT or words + eg.nwords > S.LIMIT then
    S.raise(fname, ("the e-graph would exceed %d e-nodes, ids or child words"):format(S.LIMIT),
      "lower node_limit or ban the rule with the scheduler (ids are u32 on the device)")
  end
  if not dry then S.reserve(eg, eg.nrows + rows, eg.nwords + words, ids) end
  local be = eg.be
  local cur_row, cur_id, cur_word = eg.nrows, eg.nids, eg.nwords
  local steps = {}
  S.zero_stat(eg, 1, steps)
  local children, row_class, row_op = eg.children, eg.row_class, eg.row_op
  local row_off, row_len, parent = eg.row_off, eg.row_len, eg.parent
  -- the rule's kernels in launch order (rhs_kernels), filled on the first apply
  local ks, ki = nil, 0
  local function pick(make)
    ki = ki + 1
    local k = ks[ki]
    if not k then
      k = make()
      ks[ki] = k
    end
    return k
  end
  -- The next node of n rows (1 for a literal leaf, else one per match): its first id and
  -- the matches [a, a + cnt) this call stages. Whole entries stage all of them; a segment
  -- the part of the node's rows in [lo, hi) of the entry's rows (rows and ids of a whole
  -- entry go in step: a node's ids are its rows' places from base).
  local seg, seg_off, nslice = nil, 0, 0
  local function take(n)
    if not seg then return cur_id, 0, n end
    local off = seg_off
    seg_off = off + n
    local s0, e0 = math.max(off, seg.lo), math.min(off + n, seg.hi)
    return seg.base + off, s0 - off, e0 - s0
  end
  -- the substitutions of matches [a, a + cnt) of an entry of m, as a buffer of their own
  local function part(sub, m, lay, a, cnt)
    if a == 0 and cnt == m then return sub end
    nslice = nslice + 1
    local total = lay.ncols * cnt
    local out = S.exact(eg, "ap_slice" .. nslice, total)
    steps[#steps + 1] = { U.kernel(be, "eqsat:sub_slice", sub_slice), { src = sub, out = out,
      m = m, i0 = a, mc = cnt, total = total }, S.grid(total) }
    return out
  end
  local function inst(sub, m, lay, t)
    local kind = t.kind
    if kind == "root" then return { col = 0 } end
    if kind == "var" then return { col = lay.class[t.name] } end
    local n, kern, args, w
    local lit = kind == "leaf" and t.payload.kind == "int"
    -- a literal leaf is one e-node shared by every match; the others are m, one each
    local step = lit and 0 or 1
    local srcs
    if kind ~= "leaf" then
      srcs = {}
      local targs = t.args
      for k = 1, #targs do srcs[k] = inst(sub, m, lay, targs[k]) end -- their ids come first
    end
    local id0, a, cnt = take(lit and 1 or m)
    if cnt <= 0 then
      ki = ki + 1 -- another segment stages it (its kernel's place in the launch order)
      return { id = id0, step = step }
    end
    local psub = lit and sub or part(sub, m, lay, a, cnt)
    -- each args table is made by one constructor (sized once, no rehash as fields come)
    if kind == "leaf" then
      local p = t.payload
      local lo, hi = 0, 0
      if lit then
        n, kern = 1, pick(function() return U.kernel(be, "eqsat:leaf", literal_leaf) end)
        lo, hi = p.value & 0xffffffff, (p.value >> 32) & 0xffffffff
      else
        n = cnt
        kern = pick(function() return kernel(be, leaf_text(payload_code(eg, lay, p, t.op))) end)
      end
      w = 2 * n
      args = { lo = lo, hi = hi, sub = psub, m = n, op = t.op, row0 = cur_row, id0 = id0 + a,
        word0 = cur_word, children = children, row_class = row_class, row_op = row_op,
        row_off = row_off, row_len = row_len, parent = parent }
    else
      n, w = cnt, cnt * #srcs
      kern = pick(function() return shaped(be, "node", srcs, node_text) end)
      -- a child made per match is read from its id at this node's first match
      local function src_id(src) return src.id and src.id + src.step * a or 0 end
      local s1, s2 = srcs[1], srcs[2]
      args = { a1 = s1 and src_id(s1) or nil, a2 = s2 and src_id(s2) or nil, sub = psub,
        m = n, op = t.op, row0 = cur_row, id0 = id0 + a, word0 = cur_word,
        children = children, row_class = row_class, row_op = row_op, row_off = row_off,
        row_len = row_len, parent = parent }
      for k = 3, #srcs do args[ANAMES[k]] = src_id(srcs[k]) end
    end
    steps[#steps + 1] = { kern, args, S.grid(n) }
    cur_row, cur_word = cur_row + n, cur_word + w
    if not seg then cur_id = cur_id + n end
    return { id = id0, step = step }
  end
  for _, f in ipairs(list) do
    ks, ki = rhs_kernels(f.rule, be, f.lay), 0
    seg, seg_off = f.seg, 0
    -- ids the later segments stage are singletons until then (rebuilds run between)
    if seg and seg.lo == 0 and not dry then
      steps[#steps + 1] = { U.kernel(be, "eqsat:iota_from",
        function() return SC.expand(iota_from()) end), { parent = parent,
        from = cur_id, n = ids }, S.grid(ids - cur_id) }
    end
    local unite = not seg or seg.hi == A.added(eg, f.rule, f.m)
    for _, pr in ipairs(f.rule.unions) do
      local a = inst(f.sub, f.m, f.lay, pr[1])
      local b = inst(f.sub, f.m, f.lay, pr[2])
      if unite then
        steps[#steps + 1] = { pick(function() return shaped(be, "union", { a, b }, union_text) end),
          { parent = parent, sub = f.sub, stat = eg.stat, m = f.m, a1 = a.id or 0,
            a2 = b.id or 0 }, S.grid(f.m) }
      else
        ki = ki + 1
      end
    end
    if seg then cur_id = math.max(cur_id, seg.base + seg_off) end
  end
  if dry then return 0 end
  local res = S.run(eg, fname, steps, { S.stat_readback(eg, 1) })
  eg.nrows, eg.nwords, eg.nids = cur_row, cur_word, cur_id
  eg.dev.nrows, eg.dev.nwords, eg.dev.nids = cur_row, cur_word, cur_id
  eg.uf_dirty = true
  S.changed(eg)
  eg.merges = eg.merges + res[1][1]
  return res[1][1]
end

--- Drops what rule keeps per backend (its preparation, its patterns' kernels, its
--- right-hand side's kernels in launch order), so the next A.prepare starts over: every
--- per-rule cache of kernels is listed here (precompile.lua's gathering walk leaves
--- stand-ins in them).
function A.forget(rule, be)
  if rule.prepared then rule.prepared[be] = nil end
  if rule.apk then rule.apk[be] = nil end
  for _, pat in ipairs(rule.pats or {}) do
    if pat.kc then pat.kc[be] = nil end
  end
end

--- Compiles up front the kernels that searching and applying rule will launch (its
--- patterns' count and write kernels, its right-hand side's node, leaf and union
--- kernels), once per rule and backend: a later iteration whose matches first reach a
--- rule compiles nothing then.
function A.prepare(eg, rule)
  local be = eg.be
  rule.prepared = rule.prepared or setmetatable({}, { __mode = "k" })
  if rule.prepared[be] then return end
  rule.prepared[be] = true
  local lay
  if #rule.pats == 1 and not rule.guard then
    rule.lays = rule.lays or {}
    rule.lays[1] = rule.lays[1] or match.layout(rule.pats[1], false, rule.subsume)
    match.prepare(eg, rule.pats[1], rule.lays[1], rule.when)
    lay = rule.lays[1]
  else
    rule.lays = rule.lays or {}
    for k, pat in ipairs(rule.pats) do
      rule.lays[k] = rule.lays[k] or match.layout(pat, true)
      match.prepare(eg, pat, rule.lays[k], #rule.pats == 1 and rule.when or nil)
    end
    rule.hostlay = rule.hostlay or A.rule_layout(rule)
    lay = rule.hostlay
  end
  if A.batchable(eg, rule) then
    A.apply_batch(eg, "run", { { rule = rule, sub = false, m = 2, lay = lay } }, true)
  end
end

local SUBSUME = [[
(program eq_subsume (workgroup 256)
  (buffer sub u32 read)
  (columns read_write row_epoch)
  (param m u32)
  (param col u32)
  (let i (gid x))
  (if (lt i m) (then (atomic or row_epoch (load sub (add (mul col m) i)) 2147483648u32))))
]]

--- Marks the rows in column col of the m substitutions sub subsumed (row_epoch's top
--- bit): e-matching and extraction skip them from now on; lookups still see them.
function A.subsume(eg, fname, sub, m, col)
  if m == 0 then return end
  require("vyre.egraph.rebuild").epochs(eg, fname)
  S.run(eg, fname, { { kernel(eg.be, SUBSUME), { sub = sub, row_epoch = eg.row_epoch, m = m,
    col = col }, S.grid(m) } })
end

-- Host side: substitutions as Lua rows {var = value} (payloads as 64-bit integers).
local function rows_of(sub, m, lay)
  local a = sub:download({ count = m * lay.ncols })
  local rows = {}
  for i = 1, m do
    local r = { [0] = a[i], [-1] = a[lay.flag * m + i] ~= 0 }
    for name, col in pairs(lay.class) do r[name] = a[col * m + i] end
    for name, col in pairs(lay.payload) do
      r[name] = a[col * m + i] | (a[(col + 1) * m + i] << 32)
    end
    rows[i] = r
  end
  return rows
end

-- Uploads Lua rows in the rule's combined layout (root, then variables in name order).
local function upload_rows(eg, rows, lay, role)
  local m = #rows
  local flat = {}
  for i, r in ipairs(rows) do
    flat[i] = r[0]
    for name, col in pairs(lay.class) do flat[col * m + i] = r[name] end
    for name, col in pairs(lay.payload) do
      flat[col * m + i] = r[name] & 0xffffffff
      flat[(col + 1) * m + i] = (r[name] >> 32) & 0xffffffff
    end
  end
  local sub = S.exact(eg, role, m * lay.ncols)
  if m > 0 then sub:upload(flat) end
  return sub
end

--- The combined layout of a rule (multi-pattern or host-guarded): col 0 the root of
--- the first pattern, then its variables in name order.
function A.rule_layout(rule)
  local lay = { class = {}, payload = {}, ncols = 1 }
  for _, name in ipairs(rule.varnames) do
    if rule.vars[name] == "class" then
      lay.class[name] = lay.ncols
      lay.ncols = lay.ncols + 1
    else
      lay.payload[name] = lay.ncols
      lay.ncols = lay.ncols + 2
    end
  end
  return lay
end

--- Searches one rule for the matches with a row of epoch >= since (0: all): returns m,
--- sub, layout (sub may be nil when m = 0) and the number of all matches.
function A.search(eg, fname, idx, rule, ri, since)
  rule.lays = rule.lays or {}
  local single = #rule.pats == 1
  if single and not rule.guard then
    rule.lays[1] = rule.lays[1] or match.layout(rule.pats[1], false, rule.subsume)
    local m, sub, total = match.search(eg, fname, idx, rule.pats[1], rule.lays[1], rule.when,
      ("r%dp1"):format(ri), since)
    return m, sub, rule.lays[1], total
  end
  -- host join (multi-pattern) and host guard
  local rows, dev_total
  for k, pat in ipairs(rule.pats) do
    -- all matches, flagged new or old: a joined match is new if one of its parts is
    rule.lays[k] = rule.lays[k] or match.layout(pat, true)
    local m, sub, all = match.search(eg, fname, idx, pat, rule.lays[k],
      single and rule.when or nil, ("r%dp%d"):format(ri, k), since)
    dev_total = all
    if m == 0 then return 0, nil, nil, single and all or 0 end
    local mine = rows_of(sub, m, rule.lays[k])
    if not rows then
      rows = mine
    else
      local shared = {}
      for name in pairs(rule.lays[k].class) do
        if rows[1][name] ~= nil then shared[#shared + 1] = name end
      end
      for name in pairs(rule.lays[k].payload) do
        if rows[1][name] ~= nil then shared[#shared + 1] = name end
      end
      table.sort(shared)
      local function key(r)
        local t = {}
        for i, name in ipairs(shared) do t[i] = r[name] end
        return table.concat(t, ",")
      end
      local bucket = {}
      for _, r in ipairs(mine) do
        local kk = key(r)
        bucket[kk] = bucket[kk] or {}
        table.insert(bucket[kk], r)
      end
      local out = {}
      for _, r in ipairs(rows) do
        for _, q in ipairs(bucket[key(r)] or {}) do
          local j = {}
          for x, v in pairs(r) do j[x] = v end
          for x, v in pairs(q) do if x ~= 0 then j[x] = v end end
          j[-1] = r[-1] or q[-1]
          out[#out + 1] = j
        end
      end
      rows = out
    end
    if #rows == 0 then return 0, nil, nil, 0 end
  end
  -- the scheduler's count is taken before `when` and the guard (egg counts a
  -- ConditionalApplier's matches before its condition): the device's count for one
  -- pattern, the joined rows for several
  local kept, total = {}, single and dev_total or #rows
  for _, r in ipairs(rows) do
    local ok = true
    if not single and rule.when then ok = rules.eval(rule.when, r) end
    if ok and rule.guard then
      local env = {}
      for x, v in pairs(r) do if type(x) == "string" then env[x] = v end end
      local fine, res = callback.call(("the guard of rule '%s'"):format(rule.name), rule.guard,
        env)
      if not fine then
        S.raise(fname, res, ("make the guard of rule '%s' return a boolean from the match's "
          .. "?vars (a table name -> integer) without raising or yielding"):format(rule.name))
      end
      ok = res
    end
    if ok and r[-1] then kept[#kept + 1] = r end
  end
  rule.hostlay = rule.hostlay or A.rule_layout(rule)
  if #kept == 0 then return 0, nil, nil, total end
  return #kept, upload_rows(eg, kept, rule.hostlay, ("host_r%d"):format(ri)), rule.hostlay,
    total
end

return A
