-- vyre.egraph.explain — explanations (egg's explain_equivalence; docs/EGRAPH.md,
-- "Proofs").
--
-- With vyre.egraph(be, {explanations = true}) every id is a term: the e-node it was
-- added as, with the child ids it was added with (never canonicalised). Three device
-- logs record that:
--   term log   xt_op[id], xt_len[id], xt_off[id] into xt_words: copied from each new
--              row at the start of the next canonicalisation (every row is appended
--              with its fresh id as its class, and nothing rewrites it before then);
--   xrow_id[r] the term id of row r, carried through the rebuild's compactions, so a
--              congruence can name the two terms it joined;
--   union log  xu_a[k], xu_b[k], xu_why[k], xu_batch[k]: every union in the order the
--              e-graph made them — user unions (why 0), congruences found by a rebuild
--              round (why 1: one kernel beside eg_match re-finds each duplicate row's
--              first equal row), the constant analysis (why 2) and rule applications
--              (why 2 + rule index). A rule of one pattern adds its left-hand side
--              instantiated with the substitution (as egg does when it explains), so its
--              union joins two terms that are one rewrite apart: L = lhs[s], R = rhs[s];
--              the rebuild then finds L congruent to the matched e-node.
-- eg:explain replays the log on the host: the unions that joined two sets form a
-- spanning forest (egg's proof forest); a proof is the forest path between the two
-- terms, a rule edge giving one step and a congruence edge the proofs of its children
-- lifted into the parent term. Edges are taken batch by batch (a batch: one union_many
-- or one rebuild round; inside a batch, sorted), so the children of a congruence edge
-- were joined by earlier edges and the recursion ends.
local U = require("vyre.lib.shared")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)
local S = require("vyre.egraph.store")
local P = require("vyre.egraph.payload")

local X = {}

X.USER, X.CONG, X.ANALYSIS, X.RULE0 = 0, 1, 2, 2

local function kernel(be, name, text)
  return U.kernel(be, "egraph:x_" .. name, function() return SC.expand(text) end)
end

local CAPTURE = [[
(program eg_x_capture (workgroup 256)
  (columns read row_class row_op row_off row_len)
  (columns write xrow_id xt_op xt_len xt_off)
  (param r0 u32)
  (param n u32)
  (param w0 u32)
  (param xw u32)
  (let i (gid x))
  (if (lt i n)
    (then
      (let r (add r0 i))
      (let id (load row_class r))
      (store xrow_id r id)
      (store xt_op id (load row_op r))
      (store xt_len id (load row_len r))
      (store xt_off id (add xw (sub (load row_off r) w0))))))
]]

local WORDS = [[
(program eg_x_words (workgroup 256)
  (columns read children)
  (columns write xt_words)
  (param n u32)
  (param w0 u32)
  (param xw u32)
  (let i (gid x))
  (if (lt i n) (then (store xt_words (add xw i) (load children (add w0 i))))))
]]

local SCATTER = [[
(program eg_x_scatter (workgroup 256)
  (buffer keep u32 read)
  (buffer rank u32 read)
  (columns read xrow_id)
  (buffer out u32 write)
  (param n u32)
  (let r (gid x))
  (if (lt r n)
    (then (if (ne (load keep r) 0u32) (then (store out (load rank r) (load xrow_id r)))))))
]]

local PAIRS = [[
(program eg_x_pairs (workgroup 256)
  (buffer pairs u32 read)
  (columns write xu_a xu_b xu_why xu_batch)
  (param n u32)
  (param base u32)
  (param why u32)
  (param batch u32)
  (let i (gid x))
  (if (lt i n)
    (then
      (store xu_a (add base i) (load pairs (mul i 2u32)))
      (store xu_b (add base i) (load pairs (add (mul i 2u32) 1u32)))
      (store xu_why (add base i) why)
      (store xu_batch (add base i) batch))))
]]

-- eg_match's comparison, recording each duplicate row's first equal row.
local CONG = [[
(program eg_x_cong (workgroup 256)
  (columns read children row_op row_off row_len)
  (buffer vals u32 read)
  (buffer start u32 read)
  (columns read xrow_id)
  (buffer xcnt u32 read_write)
  (columns write xu_a xu_b xu_why xu_batch)
  (param n u32)
  (param base u32)
  (param batch u32)
  (let p (gid x))
  (if (lt p n)
    (then
$SAMEROWS
        (if eqv
          (then
            (let old (atomic add xcnt 0u32 1u32))
            (let slot (add base old))
            (store xu_a slot (load xrow_id i))
            (store xu_b slot (load xrow_id j))
            (store xu_why slot 1u32)
            (store xu_batch slot batch)
            (break)))))))
]]
-- the run scan is match's (kernels.lua), so the log sees exactly the rows match merges
CONG = U.fill(CONG, { SAMEROWS = require("vyre.egraph.kernels").SAME_ROWS })

local UCOLS = { "xu_a", "xu_b", "xu_why", "xu_batch" }

--- Turns explanations on for a new, empty e-graph.
function X.enable(eg)
  eg.xlog = { rows = 0, tw = 0, nu = 0, batch = 0 }
  eg.xcnt = eg.be:buffer("u32", 1)
end

local function ensure_log(eg, need)
  local x = eg.xlog
  for _, c in ipairs(UCOLS) do S.ensure(eg, c, need, x.nu) end
end

local function next_batch(eg)
  local x = eg.xlog
  x.batch = x.batch + 1
  return x.batch
end

--- Records the term of every row appended since the last call (before anything
--- canonicalises their children). Called at the start of R.canon and R.drop_rows.
function X.capture(eg, fname)
  local x = eg.xlog
  if not x then return end
  local n = eg.dev.nrows
  S.ensure(eg, "xrow_id", math.max(n, eg.row_class and eg.row_class.count or 0), x.rows)
  if n <= x.rows then return end
  for _, c in ipairs({ "xt_op", "xt_len", "xt_off" }) do
    S.ensure(eg, c, eg.dev.nids, x.ids or 0)
  end
  x.ids = eg.dev.nids
  local w0 = eg.row_off:download({ first = x.rows + 1, count = 1 })[1]
  local nw = eg.dev.nwords - w0
  S.ensure(eg, "xt_words", x.tw + nw, x.tw)
  local steps = { { kernel(eg.be, "capture", CAPTURE), { row_class = eg.row_class,
    row_op = eg.row_op, row_off = eg.row_off, row_len = eg.row_len, xrow_id = eg.xrow_id,
    xt_op = eg.xt_op, xt_len = eg.xt_len, xt_off = eg.xt_off, r0 = x.rows, n = n - x.rows,
    w0 = w0, xw = x.tw }, S.grid(n - x.rows) } }
  if nw > 0 then
    steps[2] = { kernel(eg.be, "words", WORDS), { children = eg.children,
      xt_words = eg.xt_words, n = nw, w0 = w0, xw = x.tw }, S.grid(nw) }
  end
  S.run(eg, fname, steps)
  x.tw = x.tw + nw
  x.rows = n
end

--- Carries xrow_id through a row compaction (keep flags and their exclusive scan rank).
function X.scatter(eg, fname, keep, rank, n, kept)
  local x = eg.xlog
  if not x then return end
  local out = eg.be:buffer("u32", eg.xrow_id.count)
  S.run(eg, fname, { { kernel(eg.be, "scatter", SCATTER), { keep = keep, rank = rank,
    xrow_id = eg.xrow_id, out = out, n = n }, S.grid(n) } })
  eg.xrow_id:free()
  eg.xrow_id = out
  x.rows = kept
end

--- Logs npairs unions from a u32 Buffer of flat pairs, with reason why.
function X.log_pairs(eg, fname, buf, npairs, why)
  local x = eg.xlog
  if not x or npairs == 0 then return end
  ensure_log(eg, x.nu + npairs)
  S.run(eg, fname, { { kernel(eg.be, "pairs", PAIRS), { pairs = buf, xu_a = eg.xu_a,
    xu_b = eg.xu_b, xu_why = eg.xu_why, xu_batch = eg.xu_batch, n = npairs, base = x.nu,
    why = why or eg.xwhy or X.USER, batch = next_batch(eg) }, S.grid(npairs) } })
  x.nu = x.nu + npairs
end

--- Appends to a rebuild round's steps (after the sort, before eg_match) the kernel that
--- logs the round's congruences; X.after_round then reads their count.
function X.cong_steps(eg, steps, vals, start, n)
  local x = eg.xlog
  if not x then return end
  ensure_log(eg, x.nu + n)
  require("vyre.lib.basic").fill_steps(eg.be, eg.xcnt, 0, 1, steps)
  steps[#steps + 1] = { kernel(eg.be, "cong", CONG), { children = eg.children,
    row_op = eg.row_op, row_off = eg.row_off, row_len = eg.row_len, vals = vals,
    start = start, xrow_id = eg.xrow_id, xcnt = eg.xcnt, xu_a = eg.xu_a, xu_b = eg.xu_b,
    xu_why = eg.xu_why, xu_batch = eg.xu_batch, n = n, base = x.nu,
    batch = next_batch(eg) }, S.grid(n) }
end

function X.after_round(eg)
  local x = eg.xlog
  if not x then return end
  x.nu = x.nu + eg.xcnt:download({ count = 1 })[1]
end

-- Host side ------------------------------------------------------------------------------

local function dl(b, n)
  if n == 0 or not b then return {} end
  return b:download({ count = n })
end

-- The logs as Lua tables, the union log sorted by (batch, a, b).
local function logs(eg)
  local x = eg.xlog
  local nids = x.ids or 0
  local L = { op = dl(eg.xt_op, nids), len = dl(eg.xt_len, nids), off = dl(eg.xt_off, nids),
    words = dl(eg.xt_words, x.tw), nids = nids }
  local a, b = dl(eg.xu_a, x.nu), dl(eg.xu_b, x.nu)
  local why, batch = dl(eg.xu_why, x.nu), dl(eg.xu_batch, x.nu)
  local u = {}
  for i = 1, x.nu do u[i] = { a = a[i], b = b[i], why = why[i], batch = batch[i] } end
  table.sort(u, function(p, q)
    if p.batch ~= q.batch then return p.batch < q.batch end
    if p.a ~= q.a then return p.a < q.a end
    return p.b < q.b
  end)
  L.unions = u
  return L
end

-- The term of id as a tree {op = name, payload = text | [k] = subterm}, memoised (shared
-- sub-terms are the same table), and its text.
local function termer(eg, L)
  local memo, tmemo = {}, {}
  local names, arity = eg.reg.names, eg.reg.arity
  local function term(id)
    if memo[id] then return memo[id] end
    local stack = { id }
    while #stack > 0 do
      local x = stack[#stack]
      if memo[x] then
        stack[#stack] = nil
      else
        local op, off = L.op[x + 1], L.off[x + 1]
        local ready, t = true, { op = names[op + 1] }
        if arity[op + 1] == 0 then
          -- the text as the op's payload type prints it (payload.lua), which reads back as
          -- the same bits: f64 (0.5), sym (x), i64
          t.payload = P.text(eg, op, L.words[off + 1] | (L.words[off + 2] << 32))
        else
          for k = 1, L.len[x + 1] do
            local ch = L.words[off + k]
            if memo[ch] then t[k] = memo[ch] else ready = false stack[#stack + 1] = ch end
          end
        end
        if ready then
          memo[x] = t
          stack[#stack] = nil
        end
      end
    end
    return memo[id]
  end
  local function text(t)
    if tmemo[t] then return tmemo[t] end
    local s
    if t.payload then
      s = ("(%s %s)"):format(t.op, t.payload)
    else
      local parts = { "(" .. t.op }
      for k = 1, #t do parts[#parts + 1] = text(t[k]) end
      s = table.concat(parts, " ") .. ")"
    end
    tmemo[t] = s
    return s
  end
  return term, text
end

-- The proof forest: adjacency id -> {{to =, e = entry}, ...}.
local function forest(L)
  local parent = {}
  local function find(v)
    while parent[v] and parent[v] ~= v do
      local g = parent[parent[v]] or parent[v]
      parent[v] = g
      v = g
    end
    return v
  end
  local adj = {}
  for _, e in ipairs(L.unions) do
    local ra, rb = find(e.a), find(e.b)
    if ra ~= rb then
      parent[ra] = rb
      adj[e.a] = adj[e.a] or {}
      adj[e.b] = adj[e.b] or {}
      local ea, eb = adj[e.a], adj[e.b]
      ea[#ea + 1] = { to = e.b, e = e }
      eb[#eb + 1] = { to = e.a, e = e }
    end
  end
  return adj, find
end

-- The forest path from x to y: a list of {from, to, e}, or nil.
local function path(adj, x, y)
  if x == y then return {} end
  local prev, queue, head = { [x] = false }, { x }, 1
  while head <= #queue do
    local v = queue[head]
    head = head + 1
    for _, ed in ipairs(adj[v] or {}) do
      if prev[ed.to] == nil then
        prev[ed.to] = { v = v, e = ed.e }
        if ed.to == y then
          local out, w = {}, y
          while w ~= x do
            local p = prev[w]
            table.insert(out, 1, { from = p.v, to = w, e = p.e })
            w = p.v
          end
          return out
        end
        queue[#queue + 1] = ed.to
      end
    end
  end
  return nil
end

X.MAX_STEPS = 100000

--- The proof that term ids x and y are equal: a list of steps {before =, after = (full
--- terms as text), rule = name, direction = "=>" | "<=", at = {k1, k2, ...} (the
--- position: child indexes from the root)}.
local function prove(eg, fname, L, x, y)
  local adj = forest(L)
  local term, text = termer(eg, L)
  local rule_list = eg.rule_list or {}
  local steps = {}
  -- context: a function(subterm) -> whole term, and the position
  local function go(a, b, ctx, at, depth)
    if depth > 10000 then
      require("vyre.errors").raise("internal", "vyre.EGraph:explain internal: the proof "
        .. "recursion is too deep", 0)
    end
    local p = path(adj, a, b)
    if not p then
      require("vyre.errors").raise("internal", ("vyre.EGraph:explain internal: no proof "
        .. "path from term %d to term %d"):format(a, b), 0)
    end
    for _, st in ipairs(p) do
      local e = st.e
      if e.why == X.CONG then
        local tu = term(st.from)
        local cur = {}
        for k = 1, #tu do cur[k] = tu[k] end
        local uk, vk = {}, {}
        local offu, offv = L.off[st.from + 1], L.off[st.to + 1]
        local op = L.op[st.from + 1]
        if eg.reg.arity[op + 1] > 0 then
          for k = 1, L.len[st.from + 1] do
            uk[k], vk[k] = L.words[offu + k], L.words[offv + k]
          end
        end
        for k = 1, #uk do
          local function sub(t)
            local n = { op = tu.op }
            for j = 1, #cur do n[j] = cur[j] end
            n[k] = t
            return ctx(n)
          end
          local at2 = {}
          for j = 1, #at do at2[j] = at[j] end
          at2[#at2 + 1] = k
          go(uk[k], vk[k], sub, at2, depth + 1)
          cur[k] = term(vk[k])
        end
      else
        local name, dir = "union", "=>"
        if e.why == X.ANALYSIS then
          name = "analysis"
        elseif e.why > X.RULE0 then
          name = rule_list[e.why - X.RULE0] and rule_list[e.why - X.RULE0].name or "?"
        end
        if st.from ~= e.a then dir = "<=" end
        if #steps >= X.MAX_STEPS then
          S.raise(fname, ("the proof has more than %d steps"):format(X.MAX_STEPS),
            "explain smaller terms, or set vyre.egraph's explain limit higher")
        end
        steps[#steps + 1] = { before = text(ctx(term(st.from))), after = text(ctx(term(st.to))),
          rule = name, direction = dir, at = at }
      end
    end
  end
  go(x, y, function(t) return t end, {}, 0)
  return steps
end

-- The term id of an id or a term text: an existing id whose term is exactly the text,
-- or one added now (as egg's explain_equivalence adds its expressions).
local function term_id(eg, fname, t, what, L, cache)
  if math.type(t) == "integer" then
    S.check_id(eg, fname, t, what)
    return t, false
  end
  if type(t) ~= "string" then
    S.raise(fname, ("%s must be a term (S-expression text) or an id, got %s"):format(what,
      type(t)), "pass e.g. \"(Add (Num 1) (Num 2))\" or an id from eg:add")
  end
  -- structural keys of every logged id (smallest id per key)
  if not cache.key then
    local keyof, byk = {}, {}
    local arity = eg.reg.arity
    local function key(id)
      if keyof[id] then return keyof[id] end
      local stack = { id }
      while #stack > 0 do
        local v = stack[#stack]
        local op, off = L.op[v + 1], L.off[v + 1]
        local parts, ready = { op }, true
        if arity[op + 1] == 0 then
          parts[2] = "p" .. (L.words[off + 1] | (L.words[off + 2] << 32))
        else
          for k = 1, L.len[v + 1] do
            local ch = L.words[off + k]
            if keyof[ch] then parts[#parts + 1] = keyof[ch]
            else ready = false stack[#stack + 1] = ch end
          end
        end
        if ready then
          stack[#stack] = nil
          local s = table.concat(parts, ",")
          if not byk[s] then byk[s] = #cache + 1 cache[#cache + 1] = v end
          keyof[v] = byk[s]
        end
      end
      return keyof[id]
    end
    for id = 0, L.nids - 1 do key(id) end
    cache.key, cache.byk = keyof, byk
  end
  local rules = require("vyre.egraph.rules")
  local pat = rules.pattern(eg, fname, t, true)
  local function find(p)
    if p.kind == "leaf" then
      return cache.byk[p.op .. ",p" .. p.payload.value]
    end
    local parts = { p.op }
    for k, a in ipairs(p.args) do
      local c = find(a)
      if not c then return nil end
      parts[k + 1] = c
    end
    return cache.byk[table.concat(parts, ",")]
  end
  local k = find(pat)
  if k then return cache[k], false end
  local function add(p)
    if p.kind == "leaf" then
      -- a ground literal's value is already the payload's bits (rules.lua reads it by the
      -- op's type), staged as saturate.instantiate stages it
      local b = p.payload.value
      return S.stage(eg, p.op, { b & 0xffffffff, (b >> 32) & 0xffffffff })
    end
    local kids = {}
    for i, a in ipairs(p.args) do kids[i] = add(a) end
    return eg:add(p.op, table.unpack(kids))
  end
  return add(pat), true
end

--- eg:explain(t1, t2) -> the proof that t1 and t2 are equal (a list of steps), or raises
--- when they are not.
function X.explain(eg, fname, t1, t2)
  if not eg.xlog then
    S.raise(fname, "the e-graph records no explanations",
      "create it with vyre.egraph(be, {explanations = true})")
  end
  if not eg.clean then eg:rebuild() end
  S.settle(eg)
  local cache = {}
  local L = logs(eg)
  local a, added1 = term_id(eg, fname, t1, "argument 1", L, cache)
  local b, added2 = term_id(eg, fname, t2, "argument 2", L, cache)
  if added1 or added2 then
    eg:rebuild()
    L = logs(eg)
  end
  if eg:find(a) ~= eg:find(b) then
    S.raise(fname, ("the two terms are not equal in the e-graph (e-classes %d and %d)")
      :format(eg:find(a), eg:find(b)), "explain terms that eg:equiv reports equal")
  end
  return prove(eg, fname, L, a, b)
end

return X
