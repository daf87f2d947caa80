-- vyre.egraph.match — relational e-matching on the device (docs/EGRAPH.md, "E-matching").
--
-- Once per iteration, on the rebuilt graph, two indexes are built with vyre.lib's stable
-- radix sort: rows sorted by op (op_rows, with [ostart, oend) per op) and rows sorted by
-- canonical e-class (cls_rows, with [cstart, cend) per id). A pattern compiles to one
-- pipeline: a count kernel, an exclusive scan of the counts, and a write kernel. Both
-- kernels run one invocation per row of the root's op (a range of op_rows) and join
-- down the pattern: a child that is a sub-pattern loops over the rows of the child's
-- e-class (a range of cls_rows) whose op is the sub-pattern's; a repeated variable or a
-- literal payload is an equality test; `when` is a device predicate on the bound
-- variables. The write kernel stores each substitution at its scanned offset, as
-- columns: col 0 the root's e-class, one column per class variable, two (low, high) per
-- payload variable. Invocation order and loop order are fixed, so the substitutions
-- come out in the same order on both backends.
--
-- Semi-naive search: a match is new when one of its rows has row_epoch >= since (the
-- row was added or changed by canonicalisation since the rule's last applied search).
-- The count kernel counts all matches, before `when` (stat[0], for the scheduler), and
-- the kept ones (per invocation, for the scan); with filter = 1 only new matches are kept, with
-- filter = 0 all are, and a layout with a flag column records which are new.
local U = require("vyre.lib.shared")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)
local SORT = require("vyre.lib.sort")
local scan = require("vyre.lib.shared").scan
local basic = require("vyre.lib.shared").basic
local S = require("vyre.egraph.store")

local M = {}

local function kernel(be, key, gen) return U.kernel(be, "eqsat:" .. key, gen) end

local function keys_kernel(be)
  return kernel(be, "keys", function() return [[
(program eq_keys (workgroup 256)
  (buffer src u32 read)
  (buffer keys u32 write)
  (buffer vals u32 write)
  (param n u32)
  (let i (gid x))
  (if (lt i n) (then (store keys i (load src i)) (store vals i i))))
]] end)
end

local function ranges_kernel(be)
  return kernel(be, "ranges", function() return [[
(program eq_ranges (workgroup 256)
  (buffer keys u32 read)
  (buffer first u32 write)
  (buffer last u32 write)
  (param n u32)
  (let p (gid x))
  (if (lt p n)
    (then
      (let k (load keys p))
      (if (select (eq p 0u32) true (ne k (load keys (sub p 1u32))))
        (then (store first k p)))
      (if (select (eq (add p 1u32) n) true (ne k (load keys (add p 1u32))))
        (then (store last k (add p 1u32)))))))
]] end)
end

--- The index's two kernels (keys, ranges) on be, for precompile.base's batch.
function M.index_kernels(be) return keys_kernel(be), ranges_kernel(be) end

--- Builds the per-op and per-class indexes of the (rebuilt, settled) graph; returns the
--- index {op_rows, ostart, oend (host tables, by op id + 1), cls_rows, cstart, cend}.
--- pre: steps to run first in the same sequence (or nil).
function M.index(eg, fname, pre)
  local be, n, nids = eg.be, eg.dev.nrows, eg.dev.nids
  local nops = math.max(#eg.reg.names, 1)
  local idx = { n = n }
  local ok_, vk = S.exact(eg, "ix_opkeys", n), S.exact(eg, "ix_oprows", n)
  local ck, cv = S.exact(eg, "ix_clskeys", n), S.exact(eg, "ix_clsrows", n)
  local ostart, oend = S.exact(eg, "ix_ostart", nops), S.exact(eg, "ix_oend", nops)
  local cstart, cend = S.exact(eg, "ix_cstart", nids), S.exact(eg, "ix_cend", nids)
  if n == 0 then
    if pre then S.run(eg, fname, pre) end
    idx.ostart, idx.oend = {}, {}
    return idx
  end
  local steps = {}
  for _, st in ipairs(pre or {}) do steps[#steps + 1] = st end
  steps[#steps + 1] = { keys_kernel(be), { src = eg.row_op, keys = ok_, vals = vk, n = n },
    S.grid(n) }
  steps[#steps + 1] = { keys_kernel(be), { src = eg.row_class, keys = ck, vals = cv, n = n },
    S.grid(n) }
  -- the two sorts go into the same sequence (one synchronisation for the whole index)
  for _, st in ipairs(SORT.steps_trusted(be, ok_, vk)) do steps[#steps + 1] = st end
  for _, st in ipairs(SORT.steps_trusted(be, ck, cv)) do steps[#steps + 1] = st end
  basic.fill_steps(be, ostart, 0, nops, steps)
  basic.fill_steps(be, oend, 0, nops, steps)
  basic.fill_steps(be, cstart, 0, nids, steps)
  basic.fill_steps(be, cend, 0, nids, steps)
  steps[#steps + 1] = { ranges_kernel(be), { keys = ok_, first = ostart, last = oend, n = n },
    S.grid(n) }
  steps[#steps + 1] = { ranges_kernel(be), { keys = ck, first = cstart, last = cend, n = n },
    S.grid(n) }
  local res = S.run(eg, fname, steps, { { ostart, 1, nops }, { oend, 1, nops } })
  -- as Lua tables: every rule's search reads two of them (an Array's element is a C
  -- __index call)
  local os_, oe_, ra, rb = {}, {}, res[1], res[2]
  for i = 1, nops do os_[i], oe_[i] = ra[i], rb[i] end
  idx.ostart, idx.oend = os_, oe_
  idx.op_rows, idx.cls_rows, idx.cstart, idx.cend = vk, cv, cstart, cend
  return idx
end

-- Code generation -----------------------------------------------------------------------

--- The column layout of one pattern: col 0 the root class, then its variables in the
--- order the pattern binds them (class: one column; payload: low and high).
--- With row, a column holds the root's row (subsume); with flag, a last column holds 1
--- for a new match, 0 for an old one.
function M.layout(pat, flag, row)
  local lay = { class = {}, payload = {}, order = {}, ncols = 1 }
  local function walk(t)
    if t.kind == "var" then
      if not lay.class[t.name] then
        lay.class[t.name] = lay.ncols
        lay.order[#lay.order + 1] = t.name
        lay.ncols = lay.ncols + 1
      end
    elseif t.kind == "leaf" then
      local p = t.payload
      if p.kind == "pvar" and not lay.payload[p.name] then
        lay.payload[p.name] = lay.ncols
        lay.order[#lay.order + 1] = p.name
        lay.ncols = lay.ncols + 2
      end
    else
      for _, a in ipairs(t.args) do walk(a) end
    end
  end
  walk(pat)
  if row then
    lay.row = lay.ncols
    lay.ncols = lay.ncols + 1
  end
  if flag then
    lay.flag = lay.ncols
    lay.ncols = lay.ncols + 1
  end
  return lay
end

local function u32lit(v) return ("%du32"):format(v & 0xffffffff) end

--- true when a `when` expression reads the constant analysis (analysis.lua).
function M.uses_analysis(when)
  return require("vyre.egraph.rules").uses_analysis(when)
end

local P = require("vyre.egraph.payload")

-- Converts code of type from to type to (i64, f64 or bool).
local function conv(code, from, to)
  if from == to then return code end
  if to == "bool" then
    return from == "f64" and ("(ne %s 0x0p+0f64)"):format(code) or ("(ne %s 0i64)"):format(code)
  end
  if from == "bool" then
    return to == "f64" and ("(select %s 0x1p+0f64 0x0p+0f64)"):format(code)
      or ("(select %s 1i64 0i64)"):format(code)
  end
  return ("(cast %s %s)"):format(to, code)
end
M.conv = conv

local BIN = { ["+"] = "add", ["-"] = "sub", ["*"] = "mul", ["/"] = "div", ["=="] = "eq",
  ["!="] = "ne", ["<"] = "lt", ["<="] = "le", [">"] = "gt", [">="] = "ge" }

--- The code of a guard/payload expression over the kernel's variables, and its type
--- (e.ty: "i64", "f64" or "bool"; rules.lua types every node). Payload variables and
--- analysis values are 64-bit words, read as f64 where their type says so.
function M.code(e)
  local k = e.kind
  if k == "int" then return ("%di64"):format(e.value), "i64" end
  if k == "num" then return P.f64_lit(e.value), "f64" end
  if k == "cvar" then return ("(cast i64 v_%s)"):format(e.name), "i64" end
  if k == "aval" then
    local c = ("(load an_val v_%s)"):format(e.name)
    if e.ty == "f64" then return ("(bitcast f64 %s)"):format(c), "f64" end
    return c, "i64"
  end
  if k == "ahas" then return ("(eq (load an_state v_%s) 1u32)"):format(e.name), "bool" end
  if k == "uhas" then return ("(eq (load an_%s_st v_%s) 1i64)"):format(e.an, e.name), "bool" end
  if k == "uval" then
    local c = ("(load an_%s v_%s)"):format(e.an, e.name)
    if e.ty == "f64" then return ("(bitcast f64 %s)"):format(c), "f64" end
    if e.ty == "bool" then return ("(ne %s 0i64)"):format(c), "bool" end
    return c, "i64"
  end
  if k == "sop" then
    -- a "set" analysis's predicate (uset.lua) over its words at the class ids, as many
    -- words as it holds now (when_sig re-makes the kernels when they grow)
    local xs, nw = {}, e.rec.words
    for i, v in ipairs(e.names) do
      xs[i] = { nw = nw, word = function(idx)
        return ("(load an_%s (add (mul v_%s %du32) %s))"):format(e.an, v, nw, idx)
      end }
    end
    local kc
    if e.fn == "member" then
      local c, t = M.code(e.args[1])
      kc = conv(c, t, "i64")
    end
    return require("vyre.egraph.uset").pred_code(e.fn, xs, kc)
  end
  if k == "pvar" then
    local w = ("(or (cast u64 p_%s_lo) (shl (cast u64 p_%s_hi) 32u64))"):format(e.name, e.name)
    if e.ty == "f64" then return ("(bitcast f64 %s)"):format(w), "f64" end
    return ("(bitcast i64 %s)"):format(w), "i64"
  end
  local f = e.fn
  local a, t = {}, {}
  for i, x in ipairs(e.args) do a[i], t[i] = M.code(x) end
  if f == "not" then return ("(lnot %s)"):format(conv(a[1], t[1], "bool")), "bool" end
  if f == "and" or f == "or" then
    local op = f == "and" and "land" or "lor"
    local s = conv(a[1], t[1], "bool")
    for i = 2, #a do s = ("(%s %s %s)"):format(op, s, conv(a[i], t[i], "bool")) end
    return s, "bool"
  end
  -- arithmetic computes in e.ty; a comparison in f64 when an operand is f64
  local ty = e.ty
  if ty == "bool" then
    ty = "i64"
    for i = 1, #t do if t[i] == "f64" then ty = "f64" end end
  end
  for i = 1, #a do a[i] = conv(a[i], t[i], ty) end
  if f == "neg" then
    return ("(sub %s %s)"):format(ty == "f64" and "0x0p+0f64" or "0i64", a[1]), ty
  end
  local code = ("(%s %s %s)"):format(BIN[f], a[1], a[2])
  if e.kind == "cmp" then return code, "bool" end
  -- -0.0 + 0.0 is 0.0: f64 results have one zero (payload.lua)
  if ty == "f64" then code = ("(add %s 0x0p+0f64)"):format(code) end
  return code, ty
end

--- The device predicate of a `when` expression (bool code).
function M.expr64(e)
  local c, t = M.code(e)
  return conv(c, t, "bool")
end

--- The payload bits (i64 code) of a right-hand payload expression for a leaf of payload
--- type pt: the value is converted to pt's arithmetic type first (an f64 variable under
--- an i64 leaf truncates; an i64 one under an f64 leaf converts).
function M.bits64(e, pt)
  local c, t = M.code(e)
  if pt == "f64" then return ("(bitcast i64 %s)"):format(conv(c, t, "f64")) end
  return conv(c, t, "i64")
end

-- The steps of a pattern's join, in order: {let = name, e = expr} | {check = expr} |
-- {loop = j, class = expr, op = id}. `when` is tested at the leaf (M.text), after the
-- match is counted for the scheduler.
local function plan(pat)
  local steps, bound, nrow = {}, {}, 0
  local function visit(t, j)
    -- row r<j> matches t's op; o<j> is its children offset
    if t.kind == "leaf" then
      local p = t.payload
      local lo, hi = ("(load children o%d)"):format(j), ("(load children (add o%d 1u32))"):format(j)
      if p.kind == "int" then
        steps[#steps + 1] = { check = ("(land (eq %s %s) (eq %s %s))"):format(lo,
          u32lit(p.value), hi, u32lit(p.value >> 32)) }
      elseif bound[p.name] then
        steps[#steps + 1] = { check = ("(land (eq %s p_%s_lo) (eq %s p_%s_hi))"):format(lo,
          p.name, hi, p.name) }
      else
        bound[p.name] = true
        steps[#steps + 1] = { let = ("p_%s_lo"):format(p.name), e = lo }
        steps[#steps + 1] = { let = ("p_%s_hi"):format(p.name), e = hi }
      end
      return
    end
    for k, a in ipairs(t.args) do
      local c = ("(load children (add o%d %s))"):format(j, u32lit(k - 1))
      if a.kind == "var" then
        if bound[a.name] then
          steps[#steps + 1] = { check = ("(eq v_%s %s)"):format(a.name, c) }
        else
          bound[a.name] = true
          steps[#steps + 1] = { let = "v_" .. a.name, e = c }
        end
      else
        nrow = nrow + 1
        local jj = nrow
        steps[#steps + 1] = { loop = jj, class = c, op = a.op }
        visit(a, jj)
      end
    end
  end
  visit(pat, 0)
  return steps, nrow
end

-- Row r<j> may be matched: it is not subsumed (row_epoch's top bit), or the search is
-- a lookup (withsub = 1), which sees subsumed rows too (egglog's).
function M.live(j)
  return ("(lor (ne withsub 0u32) (eq (and (load row_epoch r%d) %s) 0u32))"):format(j,
    M.SUBSUMED)
end

--- row_epoch's top bit: the row is subsumed (docs/EGRAPH.md, "Subsumption").
M.SUBSUMED = "2147483648u32"

local function emit(steps, i, leaf_text)
  local st = steps[i]
  if not st then return leaf_text end
  local rest = emit(steps, i + 1, leaf_text)
  if st.let then return ("(let %s %s)\n%s"):format(st.let, st.e, rest) end
  if st.check then return ("(if %s (then\n%s))"):format(st.check, rest) end
  local j = st.loop
  return U.fill([[
(let c$J $C)
(for q$J (load cstart c$J) (load cend c$J) 1u32
(let r$J (load cls_rows q$J))
(if (land (eq (load row_op r$J) $OPu32) $LIVE) (then
(let o$J (load row_off r$J))
$REST)))]], { J = j, C = st.class, OP = st.op, REST = rest, LIVE = M.live(j) })
end

-- How deep a pattern may be. The matching kernels nest one statement level per
-- repeated variable, literal payload or `when` test (an if) and two per nested
-- sub-pattern (a for over the child's e-class and an if on its op), inside 3 levels of
-- their own (the bounds if, and the leaf's if around the count or store). vyre's
-- validator refuses statements nested deeper than VYRE_MAX_NESTING (src/core/ir/ir.h),
-- so eg:rule refuses such a pattern up front instead of failing at eg:run with the
-- generated kernel in the message.
M.MAX_NESTING = 64 -- VYRE_MAX_NESTING
M.OWN_LEVELS = 3
--- The deepest one-child chain that fits: (F (F ... ?x)) with this many F's.
M.MAX_CHAIN = (M.MAX_NESTING - M.OWN_LEVELS) // 2 + 1

--- The statement nesting of pattern pat's matching kernels, with the device predicate
--- `when` (nil when none runs on the device).
function M.levels(pat, when)
  local steps = plan(pat)
  local n = M.OWN_LEVELS + (when and 1 or 0)
  for _, st in ipairs(steps) do
    if st.loop then n = n + 2 elseif st.check then n = n + 1 end
  end
  return n
end

--- nil when pat's matching kernels (as A.search builds them: `when` on the device for a
--- single pattern, a flag column when the rule is multi-pattern or guarded) pass vyre's
--- validator; else the first problem's message. The arithmetic of M.levels comes first;
--- this catches every other limit (expression depth of a long `when`, program size).
function M.problem(pat, when, flag)
  local vyre = require("vyre")
  local lay = M.layout(pat, flag)
  for _, mode in ipairs({ "count", "write" }) do
    local ok, p = pcall(vyre.parse, M.text(pat, lay, when, mode))
    if not ok then return tostring(p) end
    local valid, problems = vyre.validate(p)
    if not valid then return problems[1].message end
  end
  return nil
end

--- The text of a pattern's count (mode "count") or write (mode "write") kernel.
function M.text(pat, lay, when, mode)
  local steps, nrow = plan(pat)
  local news = {}
  for j = 0, nrow do
    news[#news + 1] = ("(ge (and (load row_epoch r%d) 2147483647u32) since)"):format(j)
  end
  local isnew = news[1]
  for j = 2, #news do isnew = ("(lor %s %s)"):format(isnew, news[j]) end
  local leaf
  if mode == "count" then
    -- tot counts the match before `when` (egg's scheduler sees a ConditionalApplier's
    -- matches before the condition); cnt only the matches kept
    leaf = "(set tot (add tot (select $LIVE0 1u32 0u32)))\n"
      .. "$WHEN(if (land $LIVE0 (lor (eq filter 0u32) $NEW)) (then (set cnt (add cnt 1u32))))$END"
  else
    local parts = { "(store sub at (load row_class r0))" }
    for name, col in pairs(lay.class) do
      parts[#parts + 1] = ("(store sub (add (mul %s m) at) v_%s)"):format(u32lit(col), name)
    end
    for name, col in pairs(lay.payload) do
      parts[#parts + 1] = ("(store sub (add (mul %s m) at) p_%s_lo)"):format(u32lit(col), name)
      parts[#parts + 1] = ("(store sub (add (mul %s m) at) p_%s_hi)"):format(u32lit(col + 1),
        name)
    end
    if lay.row then
      parts[#parts + 1] = ("(store sub (add (mul %s m) at) r0)"):format(u32lit(lay.row))
    end
    if lay.flag then
      parts[#parts + 1] = ("(store sub (add (mul %s m) at) (select $NEW 1u32 0u32))"):format(
        u32lit(lay.flag))
    end
    table.sort(parts)
    parts[#parts + 1] = "(set at (add at 1u32))"
    leaf = ("$WHEN(if (land $LIVE0 (lor (eq filter 0u32) $NEW)) (then\n%s))$END"):format(
      table.concat(parts, "\n"))
  end
  leaf = leaf:gsub("%$NEW", function() return isnew end)
  leaf = leaf:gsub("%$LIVE0", function() return M.live(0) end)
  local wopen = when and ("(if %s (then\n"):format(M.expr64(when)) or ""
  leaf = leaf:gsub("%$WHEN", function() return wopen end)
  leaf = leaf:gsub("%$END", function() return when and "))" or "" end)
  local body = emit(steps, 1, leaf)
  local total = ""
  if mode == "count" then
    -- every match, kept or not, for the scheduler (the same count as a naive search)
    total = [[
  (let s (subgroup_reduce add tot))
  (if (land (eq (subgroup_lane) 0u32) (ne s 0u32)) (then (atomic add stat 0u32 s)))]]
  end
  local anbuf = M.uses_analysis(when)
    and "  (buffer an_state u32 read)\n  (buffer an_val i64 read)\n" or ""
  local vr = {}
  for name in pairs(require("vyre.egraph.rules").values_read(when)) do vr[#vr + 1] = name end
  table.sort(vr)
  local reads = require("vyre.egraph.rules").values_read(when)
  for _, name in ipairs(vr) do
    anbuf = anbuf .. ("  (buffer an_%s i64 read)\n"):format(name)
    if reads[name] then anbuf = anbuf .. ("  (buffer an_%s_st i64 read)\n"):format(name) end
  end
  return U.fill([[
(program eq_$MODE (workgroup 256)
  (columns read row_op row_off row_class children)
  (buffer op_rows u32 read)
  (buffer cls_rows u32 read)
  (buffer cstart u32 read)
  (buffer cend u32 read)
  (columns read row_epoch)
  (buffer cnt_out u32 read_write)
  (buffer sub u32 write)
  (columns read_write stat)
$ANBUF  (param n u32)
  (param base u32)
  (param m u32)
  (param since u32)
  (param filter u32)
  (param withsub u32)
  (let i (gid x))
  (let tot 0u32)
  (if (lt i n)
    (then
      (let r0 (load op_rows (add base i)))
      (let o0 (load row_off r0))
      (let cnt 0u32)
      (let at (select (eq m 0u32) 0u32 (load cnt_out i)))
$BODY
      (if (eq m 0u32) (then (store cnt_out i cnt)))))
$TOTAL)
]], { MODE = mode, BODY = body, TOTAL = total, ANBUF = anbuf })
end

--- The text of the count or write kernel of a bare-variable pattern (egg's `?a => ...`):
--- one invocation per id; a canonical class with a live (not subsumed) row is a match,
--- new when one of its rows is new (row_epoch >= since).
function M.var_text(pat, lay, when, mode)
  local leaf
  if mode == "count" then
    leaf = "(set tot 1u32)\n$WHEN(if (lor (eq filter 0u32) (ne fresh 0u32)) (then "
      .. "(set cnt 1u32)))$END"
  else
    local parts = { "(store sub at i)" }
    parts[#parts + 1] = ("(store sub (add (mul %s m) at) i)"):format(u32lit(lay.class[pat.name]))
    if lay.flag then
      parts[#parts + 1] = ("(store sub (add (mul %s m) at) fresh)"):format(u32lit(lay.flag))
    end
    parts[#parts + 1] = "(set at (add at 1u32))"
    leaf = ("$WHEN(if (lor (eq filter 0u32) (ne fresh 0u32)) (then\n%s))$END"):format(
      table.concat(parts, "\n"))
  end
  local wopen = when and ("(if %s (then\n"):format(M.expr64(when)) or ""
  leaf = leaf:gsub("%$WHEN", function() return wopen end)
  leaf = leaf:gsub("%$END", function() return when and "))" or "" end)
  local anbuf = M.uses_analysis(when)
    and "  (buffer an_state u32 read)\n  (buffer an_val i64 read)\n" or ""
  local vr = {}
  for name in pairs(require("vyre.egraph.rules").values_read(when)) do vr[#vr + 1] = name end
  table.sort(vr)
  local reads = require("vyre.egraph.rules").values_read(when)
  for _, name in ipairs(vr) do
    anbuf = anbuf .. ("  (buffer an_%s i64 read)\n"):format(name)
    if reads[name] then anbuf = anbuf .. ("  (buffer an_%s_st i64 read)\n"):format(name) end
  end
  local total = mode == "count" and [[
  (let s (subgroup_reduce add tot))
  (if (land (eq (subgroup_lane) 0u32) (ne s 0u32)) (then (atomic add stat 0u32 s)))]] or ""
  return U.fill([[
(program eq_var_$MODE (workgroup 256)
  (columns read parent)
  (buffer cls_rows u32 read)
  (buffer cstart u32 read)
  (buffer cend u32 read)
  (columns read row_epoch)
  (buffer cnt_out u32 read_write)
  (buffer sub u32 write)
  (columns read_write stat)
$ANBUF  (param n u32)
  (param m u32)
  (param since u32)
  (param filter u32)
  (param withsub u32)
  (let i (gid x))
  (let tot 0u32)
  (if (lt i n)
    (then
      (let cnt 0u32)
      (let at (select (eq m 0u32) 0u32 (load cnt_out i)))
      (let live 0u32)
      (let fresh 0u32)
      (if (eq (load parent i) i)
        (then
          (for q (load cstart i) (load cend i) 1u32
            (let e (load row_epoch (load cls_rows q)))
            (if (lor (ne withsub 0u32) (eq (and e $SUB) 0u32)) (then (set live 1u32)))
            (if (ge (and e 2147483647u32) since) (then (set fresh 1u32))))))
      (if (ne live 0u32)
        (then
          (let v_$VAR i)
$LEAF))
      (if (eq m 0u32) (then (store cnt_out i cnt)))))
$TOTAL)
]], { MODE = mode, ANBUF = anbuf, SUB = M.SUBSUMED, VAR = pat.name, LEAF = leaf,
    TOTAL = total })
end

-- Binds what a `when` condition reads of the analyses: the e-graph's analysis state and
-- values, and each named analysis's values (and constant states) as an_NAME(_st).
local function bind_analyses(eg, when, args)
  if not when then return end -- most rules have no condition
  if M.uses_analysis(when) then args.an_state, args.an_val = eg.an_state, eg.an_val end
  for name, const in pairs(require("vyre.egraph.rules").values_read(when)) do
    args["an_" .. name] = eg.analyses[name].val
    if const then args["an_" .. name .. "_st"] = eg.analyses[name].st end
  end
end

--- Searches one pattern over the index: returns m (kept matches), the substitution
--- buffer (ncols * m u32, column-major; role names the exact-size scratch buffer) and
--- the number of all matches. since: the least epoch of a new row (0: all are new);
--- with lay.flag every match is kept and flagged, else only new ones are kept.
function M.search(eg, fname, idx, pat, lay, when, role, since)
  local be = eg.be
  local op = pat.op
  local var = pat.kind == "var"
  local base, stop = 0, eg.dev.nids
  if not var then base, stop = idx.ostart[op + 1] or 0, idx.oend[op + 1] or 0 end
  local n = stop - base
  if n <= 0 or idx.n == 0 then return 0, nil, 0 end
  local kc = M.prepare(eg, pat, lay, when)
  local cnt = S.exact(eg, "m_cnt", n)
  local args = { row_op = eg.row_op, row_off = eg.row_off, row_class = eg.row_class,
    children = eg.children, op_rows = idx.op_rows, cls_rows = idx.cls_rows,
    cstart = idx.cstart, cend = idx.cend, cnt_out = cnt, row_epoch = eg.row_epoch,
    sub = S.exact(eg, "m_dummy", 1), stat = eg.stat, n = n, base = base,
    m = 0, since = since or 0, filter = lay.flag and 0 or 1, withsub = lay.withsub and 1 or 0 }
  if var then
    args = { parent = eg.parent, cls_rows = idx.cls_rows, cstart = idx.cstart,
      cend = idx.cend, row_epoch = eg.row_epoch, cnt_out = cnt, sub = args.sub,
      stat = eg.stat, n = n, m = 0, since = args.since, filter = args.filter,
      withsub = args.withsub }
  end
  bind_analyses(eg, when, args)
  local steps = {}
  S.zero_stat(eg, 1, steps)
  steps[#steps + 1] = { kc.count, args, S.grid(n) }
  local cs = S.exact(eg, "m_scan", n)
  scan.steps(be, "u32", "add", true, cnt, cs, n, steps)
  local res = S.run(eg, fname, steps, { { cs, n, 1 }, { cnt, n, 1 },
    S.stat_readback(eg, 1) })
  local m, total = res[1][1] + res[2][1], res[3][1]
  if m == 0 then return 0, nil, total end
  if m * lay.ncols > S.LIMIT then
    S.raise(fname, ("pattern %s has %d matches, too many substitution words"):format(role, m),
      "lower node_limit or ban the rule with the scheduler")
  end
  local sub = S.exact(eg, "sub_" .. role, m * lay.ncols)
  local wargs = {}
  for k, v in pairs(args) do wargs[k] = v end
  wargs.cnt_out, wargs.sub, wargs.m = cs, sub, m
  S.run(eg, fname, { { kc.write, wargs, S.grid(n) } })
  return m, sub, total
end

-- Batched search (run.lua): the count pipelines of every rule of an iteration in one
-- sequence with one readback (each pattern's kept and total matches), then the write
-- kernels of every pattern with matches in a second one. The same kernels, arguments
-- and substitutions as M.search, per pattern; only the synchronisations are shared.

--- The count and write kernels of pattern pat on eg's backend (compiled on first use).
function M.prepare(eg, pat, lay, when)
  local be = eg.be
  pat.kc = pat.kc or setmetatable({}, { __mode = "k" })
  local kc = pat.kc[be]
  -- a `when` over "set" analyses is compiled for their words: made again when they grow
  local sig = when and when.sets and M.when_sig(when)
  if not kc or kc.sig ~= sig then
    local gen = pat.kind == "var" and M.var_text or M.text
    local tc, tw = gen(pat, lay, when, "count"), gen(pat, lay, when, "write")
    kc = { count = kernel(be, tc, function() return tc end),
      write = kernel(be, tw, function() return tw end), sig = sig }
    pat.kc[be] = kc
  end
  return kc
end

--- The words of the "set" analyses `when` reads (rules.lua's when.sets), as a string.
function M.when_sig(when)
  local t = {}
  for i, an in ipairs(when.sets) do t[i] = an.words end
  return table.concat(t, ",")
end

-- The scratch roles of a batched pattern's role (counts, scan, substitutions), named
-- once rather than concatenated every iteration.
local ROLES = setmetatable({}, { __index = function(t, role)
  local v = { cnt = "m_cnt_" .. role, scan = "m_scan_" .. role, sub = "sub_" .. role }
  rawset(t, role, v)
  return v
end })

-- The count kernel's arguments for pattern e.pat over the index (as M.search), or nil
-- when the pattern's op has no rows.
local function count_args(eg, idx, e)
  local pat, lay, when = e.pat, e.lay, e.when
  local var = pat.kind == "var"
  local base, stop = 0, eg.dev.nids
  if not var then base, stop = idx.ostart[pat.op + 1] or 0, idx.oend[pat.op + 1] or 0 end
  local n = stop - base
  if n <= 0 or idx.n == 0 then return nil end
  local kc = M.prepare(eg, pat, lay, when)
  local cnt = S.exact(eg, ROLES[e.role].cnt, n)
  -- The entry's own table from the last iteration (run.lua keeps an entry per rule), every
  -- field set again: filling ~18 existing fields costs far less than a new table with
  -- its hash part built key by key. The same keys each time: a pattern's kind and its
  -- `when` (the analyses bound) do not change.
  local args = e.cargs
  if not args then
    args = {}
    e.cargs = args
  end
  local dummy, since = S.exact(eg, "m_dummy", 1), e.since or 0
  local filter, withsub = lay.flag and 0 or 1, lay.withsub and 1 or 0
  if var then
    args.parent, args.cls_rows, args.cstart, args.cend = eg.parent, idx.cls_rows,
      idx.cstart, idx.cend
  else
    args.row_op, args.row_off, args.row_class, args.children = eg.row_op, eg.row_off,
      eg.row_class, eg.children
    args.op_rows, args.cls_rows, args.cstart, args.cend = idx.op_rows, idx.cls_rows,
      idx.cstart, idx.cend
    args.base = base
  end
  args.row_epoch, args.cnt_out, args.sub, args.n, args.m = eg.row_epoch, cnt, dummy, n, 0
  args.since, args.filter, args.withsub = since, filter, withsub
  args.stat = nil -- count_batch binds its view of the totals
  bind_analyses(eg, when, args)
  return args, kc, n
end

--- Counts the matches of every entry {pat, lay, when, role, since} in one sequence:
--- sets e.m (kept matches) and e.total (all matches, for the scheduler).
function M.count_batch(eg, fname, idx, entries)
  if #entries == 0 then return end
  local be = eg.be
  local tot = S.exact(eg, "m_tot", #entries)
  -- each pattern's one-element view of tot, made once per tot buffer (not per iteration)
  local views = eg.m_tot_views
  if not views or views.of ~= tot then
    views = { of = tot }
    eg.m_tot_views = views
  end
  local steps, rb, live = {}, {}, {}
  basic.fill_steps(be, tot, 0, #entries, steps)
  for k, e in ipairs(entries) do
    e.m, e.total, e.args = 0, 0, nil
    local args, kc, n = count_args(eg, idx, e)
    if args then
      local v = views[k]
      if not v then
        v = tot:view(k, 1)
        views[k] = v
      end
      args.stat = v
      e.args, e.kc, e.n = args, kc, n
      -- the step and readback tables are the entry's own too, refilled
      local cstep = e.cstep
      if not cstep then
        cstep = {}
        e.cstep = cstep
      end
      cstep[1], cstep[2], cstep[3] = kc.count, args, S.grid(n)
      steps[#steps + 1] = cstep
      e.cs = S.exact(eg, ROLES[e.role].scan, n)
      scan.steps(be, "u32", "add", true, args.cnt_out, e.cs, n, steps)
      local r1, r2 = e.rb1, e.rb2
      if not r1 then
        r1, r2 = {}, {}
        e.rb1, e.rb2 = r1, r2
      end
      r1[1], r1[2], r1[3] = e.cs, n, 1
      r2[1], r2[2], r2[3] = args.cnt_out, n, 1
      rb[#rb + 1] = r1
      rb[#rb + 1] = r2
      live[#live + 1] = e
    end
  end
  rb[#rb + 1] = { tot, 1, #entries }
  local res = S.run(eg, fname, steps, rb)
  for j, e in ipairs(live) do e.m = res[2 * j - 1][1] + res[2 * j][1] end
  for k, e in ipairs(entries) do e.total = res[#rb][k] end
end

--- Writes the substitutions of every counted entry with e.m > 0 in one sequence: sets
--- e.sub (ncols * m u32, column-major, as M.search returns).
function M.write_batch(eg, fname, entries)
  local steps = {}
  for _, e in ipairs(entries) do
    if e.m > 0 then
      if e.m * e.lay.ncols > S.LIMIT then
        S.raise(fname, ("pattern %s has %d matches, too many substitution words"):format(
          e.role, e.m), "lower node_limit or ban the rule with the scheduler")
      end
      e.sub = S.exact(eg, ROLES[e.role].sub, e.m * e.lay.ncols)
      -- the count step's arguments, changed in place (count_batch's sequence has run and
      -- nothing else holds them): the write kernel takes the same names
      local wargs = e.args
      e.args = nil
      wargs.cnt_out, wargs.sub, wargs.m = e.cs, e.sub, e.m
      local wstep = e.wstep
      if not wstep then
        wstep = {}
        e.wstep = wstep
      end
      wstep[1], wstep[2], wstep[3] = e.kc.write, wargs, S.grid(e.n)
      steps[#steps + 1] = wstep
    end
  end
  S.run(eg, fname, steps)
end

-- The kernels' column lines (columns ...) expanded (schema.lua) wherever the text goes:
-- the kernel cache and M.problem's validation.
do
  local text, var_text = M.text, M.var_text
  function M.text(...) return SC.expand(text(...)) end
  function M.var_text(...) return SC.expand(var_text(...)) end
end

return M
