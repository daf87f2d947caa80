-- vyre.egraph.saturate — applying rules and the saturation loop (docs/EGRAPH.md,
-- "Equality saturation").
--
-- One iteration: build the indexes of the rebuilt graph, search every rule the
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
local S = require("vyre.egraph.store")
local R = require("vyre.egraph.rebuild")
local rules = require("vyre.egraph.rules")
local match = require("vyre.egraph.match")
local callback = require("vyre.callback")

local A = {}

local now = require("vyre").core.now_ns

local function kernel(be, text)
  return U.kernel(be, "eqsat:" .. text, function() return text end)
end

local function u32lit(v) return ("%du32"):format(v) end

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

-- The i64 payload of each match from a payload expression.
local function payloads(eg, fname, sub, m, lay, e)
  local lets = {}
  for name, col in pairs(lay.payload) do
    lets[#lets + 1] = ("      (let p_%s_lo (load sub (add (mul %s m) i)))"):format(name,
      u32lit(col))
    lets[#lets + 1] = ("      (let p_%s_hi (load sub (add (mul %s m) i)))"):format(name,
      u32lit(col + 1))
  end
  table.sort(lets)
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
]]):format(table.concat(lets, "\n"), match.expr64(e))
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
    if p.kind == "int" then return { id = eg:leaf(t.op, p.value), step = 0 } end
    local first = eg:add_many(t.op, payloads(eg, fname, sub, m, lay, p))
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
  local merges = 0
  for _, pr in ipairs(rule.unions) do
    local a = instantiate(eg, fname, sub, m, lay, pr[1])
    local b = instantiate(eg, fname, sub, m, lay, pr[2])
    merges = merges + eg:union_many(gather(eg, fname, sub, m, { a, b }, "ap_pairs"))
  end
  return merges
end

-- Host side: substitutions as Lua rows {var = value} (payloads as 64-bit integers).
local function rows_of(sub, m, lay)
  local a = sub:download(0, 4 * m * lay.ncols)
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
    rule.lays[1] = rule.lays[1] or match.layout(rule.pats[1])
    local m, sub, total = match.search(eg, fname, idx, rule.pats[1], rule.lays[1], rule.when,
      ("r%dp1"):format(ri), since)
    return m, sub, rule.lays[1], total
  end
  -- host join (multi-pattern) and host guard
  local rows
  for k, pat in ipairs(rule.pats) do
    -- all matches, flagged new or old: a joined match is new if one of its parts is
    rule.lays[k] = rule.lays[k] or match.layout(pat, true)
    local m, sub = match.search(eg, fname, idx, pat, rule.lays[k], single and rule.when or nil,
      ("r%dp%d"):format(ri, k), since)
    if m == 0 then return 0, nil, nil, 0 end
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
  local kept, total = {}, 0
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
    if ok then
      total = total + 1
      if r[-1] then kept[#kept + 1] = r end
    end
  end
  rule.hostlay = rule.hostlay or A.rule_layout(rule)
  if #kept == 0 then return 0, nil, nil, total end
  return #kept, upload_rows(eg, kept, rule.hostlay, ("host_r%d"):format(ri)), rule.hostlay,
    total
end

-- Schedulers ------------------------------------------------------------------------------

--- Runs every rule every iteration (egglog's default).
function A.simple() return function() return true end end

--- egg's BackoffScheduler: a rule whose matches exceed match_limit << times_banned is
--- banned for ban_length << times_banned iterations (its matches are dropped).
function A.backoff(opts)
  opts = opts or {}
  local limit, len = opts.match_limit or 1000, opts.ban_length or 5
  local st = {}
  return function(it, rule, m)
    local s = st[rule]
    if not s then
      s = { banned = 0, until_ = 0 }
      st[rule] = s
    end
    if m == nil then return it >= s.until_ end
    if m > (limit << s.banned) then
      s.until_ = it + (len << s.banned)
      s.banned = s.banned + 1
      return false
    end
    return true
  end
end

local function secs(t) return t / 1e9 end

-- The scheduler's answer for rule_name at iteration it (matches nil: before the search),
-- or a raise naming the scheduler when it raises or yields.
local function schedule(fname, sched, it, rule_name, matches)
  local ok, res = callback.call(("the scheduler (iteration %d, rule '%s')"):format(it,
    rule_name), sched, it, rule_name, matches)
  if not ok then
    S.raise(fname, res, "make the scheduler function(iteration, rule_name, matches) return "
      .. "a boolean without raising or yielding (or use vyre.egraph.backoff{})")
  end
  return res
end

local SNAP = [[
(program eq_snap (workgroup 256)
  (buffer parent u32 read)
  (buffer snap u32 read_write)
  (buffer stat u32 read_write)
  (param n u32)
  (param cmp u32)
  (let x (gid x))
  (let moved 0u32)
  (if (lt x n)
    (then
      (if (eq cmp 0u32)
        (then (store snap x (load parent x)))
        (else (if (ne (load snap x) (load parent x)) (then (set moved 1u32)))))))
  (let s (subgroup_reduce add moved))
  (if (land (eq (subgroup_lane) 0u32) (ne s 0u32)) (then (atomic add stat 0u32 s))))
]]

-- cmp = 0: snap = parent[0 .. n); cmp = 1: the number of ids x < n whose canonical id is
-- no longer snap[x] (an e-class merge among the ids that existed at the snapshot).
local function snapshot(eg, fname, n, cmp)
  if n == 0 then return 0 end
  local snap = S.exact(eg, "sat_snap", n)
  local steps = {}
  S.zero_stat(eg, 1, steps)
  steps[#steps + 1] = { kernel(eg.be, SNAP), { parent = eg.parent, snap = snap, stat = eg.stat,
    n = n, cmp = cmp }, S.grid(n) }
  local res = S.run(eg, fname, steps, { S.stat_readback(eg, 1) })
  return res[1][1]
end

--- eg:run{iterations, node_limit, time_limit, scheduler, semi_naive} -> report.
function A.run(eg, fname, opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    S.raise(fname, "argument 1 must be a table of options", "call eg:run{iterations = 10}")
  end
  for k in pairs(opts) do
    if k ~= "iterations" and k ~= "node_limit" and k ~= "time_limit" and k ~= "scheduler"
      and k ~= "semi_naive" then
      S.raise(fname, ("unknown option '%s'"):format(tostring(k)),
        "use iterations, node_limit, time_limit, scheduler and semi_naive")
    end
  end
  local semi = opts.semi_naive
  if semi == nil then semi = true end
  if type(semi) ~= "boolean" then
    S.raise(fname, "semi_naive must be a boolean", "pass semi_naive = true or false")
  end
  local iters = opts.iterations or 30
  local node_limit = opts.node_limit or 10000
  local time_limit = opts.time_limit or 5
  if math.type(iters) ~= "integer" or iters < 0 then
    S.raise(fname, "iterations must be a non-negative integer", "pass e.g. iterations = 10")
  end
  if type(node_limit) ~= "number" or type(time_limit) ~= "number" then
    S.raise(fname, "node_limit and time_limit must be numbers", "pass e.g. node_limit = 1e6")
  end
  local sched = opts.scheduler or A.backoff()
  if type(sched) ~= "function" then
    S.raise(fname, "scheduler must be a function(iteration, rule_name, matches) -> boolean",
      "pass vyre.egraph.backoff{} or your own function")
  end
  local list = eg.rule_list or {}
  if #list == 0 then S.raise(fname, "the e-graph has no rules", "add rules with eg:rule first") end
  local report = {}
  local t_start = now()
  if not eg.clean then R.rebuild(eg, fname) end
  local nodes, classes = eg:size()
  report.start = { nodes = nodes, classes = classes }
  report.stop = "iterations"
  for it = 1, iters do
    local t0 = now()
    S.settle(eg)
    local ids0 = eg.dev.nids
    snapshot(eg, fname, ids0, 0)
    local idx = match.index(eg, fname)
    -- rows changed from here on (apply and rebuild) get this search's epoch
    local epoch = (eg.epoch or 0) + 1
    eg.epoch = epoch
    local found, skipped = {}, false
    local rec = { iteration = it, matches = {} }
    for ri, rule in ipairs(list) do
      if schedule(fname, sched, it, rule.name, nil) == false then
        skipped = true
      else
        local m, sub, lay, total = A.search(eg, fname, idx, rule, ri, semi and rule.since or 0)
        rec.matches[rule.name] = (rec.matches[rule.name] or 0) + m
        if schedule(fname, sched, it, rule.name, total) == false then
          skipped = true
        else
          rule.since = epoch
          if m > 0 then found[#found + 1] = { rule = rule, m = m, sub = sub, lay = lay } end
        end
      end
    end
    local t1 = now()
    -- every rule's substitutions sit in their own buffer until applied
    for _, f in ipairs(found) do A.apply(eg, fname, f.rule, f.sub, f.m, f.lay) end
    local t2 = now()
    R.rebuild(eg, fname)
    local n2, c2 = eg:size()
    local moved = snapshot(eg, fname, ids0, 1)
    local t3 = now()
    rec.nodes, rec.classes = n2, c2
    rec.search_s, rec.apply_s, rec.rebuild_s = secs(t1 - t0), secs(t2 - t1), secs(t3 - t2)
    rec.seconds = secs(t3 - t0)
    report[it] = rec
    -- Unchanged exactly when no e-class that existed before was merged (no old id
    -- changed its canonical id) and no e-node was added: without old merges no old row
    -- can be dropped, so equal row counts mean every new row was a duplicate.
    if n2 == nodes and moved == 0 and not skipped then
      report.stop = "saturated"
      break
    end
    nodes = n2
    if n2 > node_limit then
      report.stop = "node_limit"
      break
    end
    if secs(now() - t_start) > time_limit then
      report.stop = "time_limit"
      break
    end
  end
  report.seconds = secs(now() - t_start)
  return report
end

return A
