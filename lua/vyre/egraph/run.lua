-- vyre.egraph.run — the equality saturation loop (docs/EGRAPH.md, "Equality
-- saturation", "Schedulers", "Limits and rollback", "Rulesets and schedules").
--
-- One iteration: snapshot the rebuilt graph on the device (snapshot.lua), build the
-- indexes, search every rule the scheduler allows, apply, rebuild. The iteration
-- counter lives in the e-graph (eg.iteration) and goes on across eg:run calls, so a
-- scheduler reused by several calls bans a rule until an iteration that does come.
-- node_limit and time_limit are checked between rules (search and apply) and between
-- rebuild rounds. An iteration that passes node_limit is rolled back to the snapshot,
-- so the e-graph never holds more than node_limit e-nodes after a run; one that passes
-- time_limit stops where it is and keeps what it applied. An iteration that
-- changes nothing while the scheduler holds bans asks it to move them forward (egg's
-- can_stop) instead of idling through the banned iterations.
local S = require("vyre.egraph.store")
local R = require("vyre.egraph.rebuild")
local PC = require("vyre.egraph.pieces")
local A = require("vyre.egraph.saturate")
local match = require("vyre.egraph.match")
local N = require("vyre.egraph.snapshot")
local query = require("vyre.egraph.query")
local AN = require("vyre.egraph.analysis")
local rules = require("vyre.egraph.rules")
local U = require("vyre.lib.util")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)
local callback = require("vyre.callback")
local now = require("vyre").core.now_ns

local M = {}

M.DEFAULT = "default"

local function secs(t) return t / 1e9 end

-- Schedulers ------------------------------------------------------------------------------

-- The schedulers made here: each answers for a rule from that rule's own state only, so
-- asking every rule "may it run" before any count changes nothing (run.lua's search).
M.INDEPENDENT = setmetatable({}, { __mode = "k" })

--- Runs every rule every iteration (egglog's default).
function M.simple()
  local f = function() return true end
  M.INDEPENDENT[f] = true
  return f
end

--- egg's BackoffScheduler: a rule whose matches exceed match_limit << times_banned is
--- banned for ban_length << times_banned iterations (its matches are dropped). A callable
--- table: called as a scheduler, and can_stop(it) moves the bans forward (egg's).
function M.backoff(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    S.raise("vyre.egraph.backoff", "argument 1 must be a table of options",
      "call vyre.egraph.backoff{match_limit = 1000, ban_length = 5}")
  end
  local limit, len = opts.match_limit or 1000, opts.ban_length or 5
  if math.type(limit) ~= "integer" or limit < 0 or math.type(len) ~= "integer" or len < 0 then
    S.raise("vyre.egraph.backoff", "match_limit and ban_length must be non-negative integers",
      "pass e.g. {match_limit = 1000, ban_length = 5}")
  end
  local st = {}
  local sched = {}
  -- egg's can_stop: true when no rule is banned after iteration it; else every ban
  -- moves forward by the wait until the first one ends, and the rules that ban ended
  -- for are returned (sorted) with false.
  function sched.can_stop(it)
    local banned, first = {}, nil
    for name, s in pairs(st) do
      if s.until_ > it then
        banned[#banned + 1] = name
        first = math.min(first or s.until_, s.until_)
      end
    end
    if #banned == 0 then return true end
    local unbanned = {}
    for _, name in ipairs(banned) do
      local s = st[name]
      s.until_ = s.until_ - (first - it)
      if s.until_ == it then unbanned[#unbanned + 1] = name end
    end
    table.sort(unbanned)
    return false, unbanned
  end
  M.INDEPENDENT[sched] = true
  return setmetatable(sched, { __call = function(_, it, rule, m)
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
  end })
end

local function callable(v)
  if type(v) == "function" then return true end
  local mt = getmetatable(v)
  return type(v) == "table" and type(mt) == "table" and type(mt.__call) == "function"
end

-- The scheduler's answer for rule_name at iteration it (matches nil: before the search),
-- or a raise naming the scheduler when it raises or yields.
local function ask(fname, st, it, rule_name, matches)
  -- vyre's own schedulers neither raise nor yield: called directly, without the
  -- coroutine and the message callback.call makes for a user's function (twice per rule
  -- per iteration)
  if st.indep then return st.sched_fn(it, rule_name, matches) end
  local ok, res = callback.call(("the scheduler (iteration %d, rule '%s')"):format(it,
    rule_name), st.sched_fn, it, rule_name, matches)
  if not ok then
    S.raise(fname, res, "make the scheduler function(iteration, rule_name, matches) return "
      .. "a boolean without raising or yielding (or use vyre.egraph.backoff{})")
  end
  return res
end

local function can_stop(fname, st, it)
  local ok, res, unbanned = callback.call(("the scheduler's can_stop (iteration %d)"):format(it),
    st.sched.can_stop, it)
  if not ok then
    S.raise(fname, res, "make can_stop(iteration) return a boolean (and the list of rules "
      .. "it unbanned) without raising or yielding")
  end
  return res, unbanned
end

-- Old merges --------------------------------------------------------------------------------

local MOVED = [[
(program eq_moved (workgroup 256)
  (columns read parent)
  (buffer snap u32 read_write)
  (columns read_write stat)
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
-- no longer snap[x] (an e-class merge among the ids that existed at the snapshot). snap:
-- the rollback snapshot's copy of parent when there is one, else a scratch buffer.
-- The launches go into steps, counting into stat[slot] (zeroed by the caller).
local function moved_steps(eg, n, cmp, snap, steps, slot)
  if n == 0 then return end
  local buf = snap or S.exact(eg, "sat_snap", n)
  -- the one-element views of stat, made once per stat buffer (two a call otherwise)
  local views = eg.moved_views
  if not views or views.of ~= eg.stat then
    views = { of = eg.stat }
    eg.moved_views = views
  end
  local sv = views[slot]
  if not sv then
    sv = eg.stat:view(slot + 1, 1)
    views[slot] = sv
  end
  steps[#steps + 1] = { U.kernel(eg.be, "eqsat:moved", function() return SC.expand(MOVED) end),
    { parent = eg.parent, snap = buf, stat = sv, n = n, cmp = cmp }, S.grid(n) }
end

-- The iteration's end in one sequence: the e-classes (eg:size's count) and, unless
-- skip_moved, the old merges since the start (moved, cmp = 1); returns classes, moved.
local function size_moved(eg, fname, ids0, snap, skip_moved)
  S.settle(eg)
  local steps = {}
  S.zero_stat(eg, 2, steps)
  local counted = eg.nclasses == nil and R.class_steps(eg, steps, 0)
  if not skip_moved then moved_steps(eg, ids0, 1, snap, steps, 1) end
  if #steps == 1 then return eg.nclasses or 0, 0 end
  local res = S.run(eg, fname, steps, { S.stat_readback(eg, 2) })
  if counted then eg.nclasses = res[1][1] end
  if eg.nclasses == nil then eg.nclasses = 0 end
  return eg.nclasses, res[1][2]
end

-- One iteration ---------------------------------------------------------------------------

-- the scratch role of the i-th rule's pattern in the batched search ("r<i>p1")
local ROLE = setmetatable({}, { __index = function(t, i)
  local v = ("r%dp1"):format(i)
  rawset(t, i, v)
  return v
end })

-- Runs one iteration of the rules in list; returns its record, a stop reason or nil, and
-- whether the run should count it as progress (the graph changed, or bans moved).
local function iteration(eg, fname, st, list, rsname)
  local it = (eg.iteration or 0) + 1
  eg.iteration = it
  local t0 = now()
  S.settle(eg)
  local snap = st.rollback and N.take(eg, fname) or nil
  local nodes0, ids0 = eg.dev.nrows, eg.dev.nids
  local pre = {}
  if not snap then moved_steps(eg, ids0, 0, nil, pre, 0) end
  local idx = match.index(eg, fname, pre) -- the snapshot goes with the index's sequence
  eg.qidx = nil -- the query index shares these scratch buffers
  -- the constant analysis for `when`'s (const ?x), when a rule of this run reads it
  if eg.an_spec then
    for _, rule in ipairs(list) do
      if (rule.when and rules.uses_analysis(rule.when)) or rule.applier then
        AN.compute(eg, fname, idx)
        break
      end
    end
  end
  -- the user analyses, when a rule reads one (`when`'s (value NAME ?x), a Lua applier)
  for _, rule in ipairs(list) do
    if (rule.when and next(rules.values_read(rule.when))) or rule.applier then
      require("vyre.egraph.uanalysis").compute_all(eg, fname, idx)
      break
    end
  end
  -- rows changed from here on (apply and rebuild) get this search's epoch
  local epoch = (eg.epoch or 0) + 1
  eg.epoch = epoch
  local function over() return secs(now() - st.t_start) > st.time_limit end
  local found, skipped, since0 = {}, false, {}
  local rec = { iteration = it, ruleset = rsname, matches = {}, found = {} }
  local stop, phase, over_nodes
  -- The device searches of the rules are counted together (match.count_batch: one
  -- sequence, one readback) and their substitutions written together at the end
  -- (match.write_batch). The scheduler is asked as before, rule by rule: may it run,
  -- then with its count. The built-in schedulers answer per rule from that rule's own
  -- state, so they are asked "may it run" for every rule first and only those rules are
  -- counted; a scheduler of the caller's is asked in the original interleaved order, so
  -- every device-searched rule is counted up front, whether or not it then runs.
  local indep = st.indep
  local may, entry, dev = {}, {}, {}
  for ri, rule in ipairs(list) do
    if indep then may[ri] = ask(fname, st, it, rule.name, nil) ~= false end
    if (may[ri] or not indep) and #rule.pats == 1 and not rule.guard then
      rule.lays = rule.lays or {}
      rule.lays[1] = rule.lays[1] or match.layout(rule.pats[1], false, rule.subsume)
      -- the rule's entry from its last search, refilled: match.count_batch keeps its
      -- argument, step and readback tables there for the next iteration
      local e = rule.dev_entry
      if not e or e.eg ~= eg then
        e = { eg = eg }
        rule.dev_entry = e
      end
      e.pat, e.lay, e.when, e.role = rule.pats[1], rule.lays[1], rule.when, ROLE[ri]
      e.since, e.sub, e.cs = st.semi and rule.since or 0, nil, nil
      dev[#dev + 1] = e
      entry[ri] = e
    end
  end
  match.count_batch(eg, fname, idx, dev)
  local writes = {}
  for ri, rule in ipairs(list) do
    local ok
    if indep then ok = may[ri] else ok = ask(fname, st, it, rule.name, nil) ~= false end
    if not ok then skipped = true end
    if ok then
      local e = entry[ri]
      local m, sub, lay, total
      if not e then
        m, sub, lay, total = A.search(eg, fname, idx, rule, ri, st.semi and rule.since or 0)
      else
        m, lay, total = e.m, e.lay, e.total
        sub = e -- filled in by match.write_batch below
      end
      rec.found[rule.name] = (rec.found[rule.name] or 0) + total
      if ask(fname, st, it, rule.name, total) == false then
        skipped = true
        rec.matches[rule.name] = rec.matches[rule.name] or 0
      else
        if since0[rule] == nil then since0[rule] = rule.since or false end
        rule.since = epoch
        rec.matches[rule.name] = (rec.matches[rule.name] or 0) + m
        if m > 0 then
          found[#found + 1] = { rule = rule, m = m, sub = sub, lay = lay }
          if sub == e then writes[#writes + 1] = e end
        end
      end
    end
    if over() then
      stop, phase = "time_limit", "search"
      break
    end
  end
  match.write_batch(eg, fname, writes)
  for _, f in ipairs(found) do
    if type(f.sub) == "table" then f.sub = f.sub.sub end
  end
  -- subsume = true: the matched rows are marked before any apply moves rows (the
  -- apply's node_limit check may rebuild and compact)
  if not stop then
    for _, f in ipairs(found) do
      if f.rule.subsume then A.subsume(eg, fname, f.sub, f.m, f.lay.row) end
    end
  end
  local t1 = now()
  -- every rule's substitutions sit in their own buffer until applied
  eg.interrupt = over
  local applied, ta = {}, nil
  local ok, err = pcall(function()
    if stop then return end
    -- one sequence for every rule's apply when nothing can stop it half-way: no Lua
    -- applier or explanations log, and the staged rows cannot pass node_limit (rows only
    -- grow during apply, so the per-rule checks below would not have fired either)
    local batch = #found > 0
    local add = 0
    for _, f in ipairs(found) do
      if not A.batchable(eg, f.rule) then batch = false break end
      add = add + A.added(eg, f.rule, f.m)
    end
    if batch and snap and eg.nrows + add > st.node_limit then batch = false end
    if batch then
      -- past the cap on staged rows (apply_rows, else what the device holds) the
      -- matches go in pieces with a rebuild between them (pieces.lua)
      local cap = st.apply_rows or (add >= PC.MIN_ROWS and PC.default_cap(eg)) or nil
      if cap and add > cap then
        local fixed = st.apply_rows
        local done, cut = PC.apply(eg, fname, found,
          function() return fixed or PC.default_cap(eg) end, over)
        for rule in pairs(done) do applied[rule] = true end
        rec.pieces, rec.segments = eg.apply_pieces, eg.apply_segments
        if cut then
          stop, phase = "time_limit", "apply"
          return
        end
      else
        A.apply_batch(eg, fname, found)
        for _, f in ipairs(found) do applied[f.rule] = true end
      end
      found = {}
    end
    for _, f in ipairs(found) do
      -- past time_limit only rules whose e-nodes were already subsumed are still applied
      if not (phase == "apply" and not f.rule.subsume) then
        A.apply(eg, fname, f.rule, f.sub, f.m, f.lay)
        applied[f.rule] = true
      end
      -- the staged rows count duplicates: only a rebuild tells whether the limit passed
      if snap and eg.nrows > st.node_limit then
        local _, _, rr = R.rebuild(eg, fname, true)
        if rr.interrupted then
          stop, phase = "time_limit", "apply"
          return
        end
        if eg.nrows > st.node_limit then
          stop, phase, over_nodes = "node_limit", "apply", eg.nrows
          return
        end
      end
      if not phase and over() then stop, phase = "time_limit", "apply" end
    end
    if phase then return end
    ta = now()
    local _, _, rr = R.rebuild(eg, fname, true)
    if not rr.interrupted then AN.modify(eg, fname) end
    if rr.interrupted then
      stop, phase = "time_limit", "rebuild"
    elseif snap and eg.nrows > st.node_limit then
      stop, phase, over_nodes = "node_limit", "rebuild", eg.nrows
    end
  end)
  eg.interrupt = nil
  local t2 = ta or now()
  if not ok then error(err, 0) end
  if stop == "node_limit" then
    -- put the graph and the rules back as they were at the iteration's start
    N.restore(eg, fname, snap)
    for rule, s in pairs(since0) do rule.since = s or nil end
    rec.rolled_back = { reason = stop, phase = phase, nodes = over_nodes }
  elseif stop then
    -- time_limit: what was applied stays (a rebuild cut short is finished by the next
    -- call that needs it); rules whose matches were not applied will find them again
    for rule, s in pairs(since0) do
      if not applied[rule] then rule.since = s or nil end
    end
    rec.interrupted = { reason = stop, phase = phase }
  end
  local c2, mv = size_moved(eg, fname, ids0, snap and eg.x_snap_parent, stop)
  local n2 = eg.nrows
  if stop then mv = 0 end
  local t3 = now()
  rec.nodes, rec.classes = n2, c2
  rec.search_s, rec.apply_s, rec.rebuild_s = secs(t1 - t0), secs(t2 - t1), secs(t3 - t2)
  rec.seconds = secs(t3 - t0)
  if stop then return rec, stop, false end
  -- Unchanged exactly when no e-class that existed before was merged (no old id
  -- changed its canonical id) and no e-node was added: without old merges no old row
  -- can be dropped, so equal row counts mean every new row was a duplicate.
  if n2 == nodes0 and mv == 0 then
    if not skipped then return rec, "saturated", false end
    if st.sched.can_stop then
      local done, unbanned = can_stop(fname, st, it)
      if done then return rec, "saturated", false end
      rec.fast_forward = unbanned or {}
      return rec, nil, true
    end
    return rec, nil, false
  end
  if not snap and n2 > st.node_limit then return rec, "node_limit", true end
  if secs(now() - st.t_start) > st.time_limit then return rec, "time_limit", true end
  return rec, nil, true
end

-- Runs and schedules ----------------------------------------------------------------------

--- The rules of ruleset name, in the order they were added.
function M.ruleset_rules(eg, name)
  local list = {}
  for _, r in ipairs(eg.rule_list or {}) do
    if (r.ruleset or M.DEFAULT) == name then list[#list + 1] = r end
  end
  return list
end

local function check_ruleset(eg, fname, name)
  if type(name) ~= "string" then
    S.raise(fname, ("a ruleset must be named by a string, got %s"):format(type(name)),
      "pass ruleset = \"name\"")
  end
  if name ~= M.DEFAULT and not (eg.rulesets and eg.rulesets[name]) then
    S.raise(fname, ("unknown ruleset '%s'"):format(name),
      ("declare it with eg:ruleset(\"%s\") and add rules with {ruleset = \"%s\"}"):format(
        name, name))
  end
end

-- A goal (until_): one pair {t1, t2} or a list of pairs, of terms (strings) or ids.
local function check_goal(eg, fname, g)
  if type(g) ~= "table" or #g == 0 then
    S.raise(fname, "until_ must be a pair {t1, t2} of terms or a list of pairs",
      "pass e.g. until_ = {\"(Add (Num 1) (Num 2))\", \"(Num 3)\"}")
  end
  local pairs_ = type(g[1]) == "table" and g or { g }
  for _, p in ipairs(pairs_) do
    if type(p) ~= "table" or #p ~= 2 then
      S.raise(fname, "an until_ goal is not a pair {t1, t2}", "pass {t1, t2} or {{t1, t2}, ...}")
    end
    for k = 1, 2 do
      if type(p[k]) == "string" then
        rules.pattern(eg, fname, p[k], true)
      elseif math.type(p[k]) ~= "integer" then
        S.raise(fname, "an until_ term must be an S-expression string or an e-class id",
          "pass e.g. {\"(Num 1)\", 7}")
      end
    end
  end
  return pairs_
end

local function goal_met(eg, fname, goal)
  for _, p in ipairs(goal) do
    if not query.equiv(eg, fname, p[1], p[2]) then return false end
  end
  return true
end

-- Up to n iterations of ruleset rsname; returns the stop reason ("iterations",
-- "saturated", "until", "node_limit", "time_limit") and whether it made progress.
local function run_rules(eg, fname, st, rsname, n, goal)
  local list = M.ruleset_rules(eg, rsname)
  -- every kernel of the rule set is compiled before iteration 1, not when a rule first
  -- matches (saturate.lua's A.prepare)
  if n > 0 then
    require("vyre.egraph.precompile").rules(eg, list) -- in one batch (precompile.lua)
    require("vyre.egraph.kernels").copy_range(eg.be) -- the columns' first growth
  end
  local progress = false
  for _ = 1, n do
    if goal and goal_met(eg, fname, goal) then return "until", progress end
    local rec, stop, prog = iteration(eg, fname, st, list, rsname)
    st.report[#st.report + 1] = rec
    progress = progress or prog
    if stop then return stop, progress end
  end
  if goal and goal_met(eg, fname, goal) then return "until", progress end
  return "iterations", progress
end

local SCHED_KEYS = { run = true, times = true, until_ = true, seq = true, saturate = true,
  repeat_ = true }

-- Checks a schedule before anything runs.
local function check_schedule(eg, fname, s, depth)
  if depth > 64 then
    S.raise(fname, "the schedule nests deeper than 64 levels", "flatten the schedule")
  end
  if type(s) == "string" then return check_ruleset(eg, fname, s) end
  if type(s) ~= "table" then
    S.raise(fname, ("a schedule must be a table or a ruleset name, got %s"):format(type(s)),
      "write e.g. {seq = {{run = \"a\"}, {saturate = {run = \"b\"}}}}")
  end
  for k in pairs(s) do
    if math.type(k) ~= "integer" and not SCHED_KEYS[k] then
      S.raise(fname, ("unknown schedule key '%s'"):format(tostring(k)),
        "use run (with times, until_), seq, saturate or repeat_")
    end
  end
  if s.run ~= nil then
    check_ruleset(eg, fname, s.run)
    if s.times ~= nil and (math.type(s.times) ~= "integer" or s.times < 0) then
      S.raise(fname, "times must be a non-negative integer", "pass e.g. {run = \"a\", times = 3}")
    end
    if s.until_ ~= nil then check_goal(eg, fname, s.until_) end
    return
  end
  if s.saturate ~= nil then return check_schedule(eg, fname, s.saturate, depth + 1) end
  if s.repeat_ ~= nil and (math.type(s.repeat_) ~= "integer" or s.repeat_ < 0) then
    S.raise(fname, "repeat_ must be a non-negative integer", "write {repeat_ = 3, {run = \"a\"}}")
  end
  local list = s.seq or s
  if type(list) ~= "table" then
    S.raise(fname, "seq must be a list of schedules", "write {seq = {{run = \"a\"}, \"b\"}}")
  end
  for _, sub in ipairs(list) do check_schedule(eg, fname, sub, depth + 1) end
end

-- Runs schedule s; returns a limit that stopped everything (or nil) and progress.
local function exec(eg, fname, st, s)
  if type(s) == "string" then s = { run = s } end
  if s.run ~= nil then
    local goal = s.until_ and check_goal(eg, fname, s.until_)
    local stop, prog = run_rules(eg, fname, st, s.run, s.times or 1, goal)
    if stop == "node_limit" or stop == "time_limit" then return stop, prog end
    return nil, prog
  end
  if s.saturate ~= nil then
    local progress = false
    repeat
      local stop, prog = exec(eg, fname, st, s.saturate)
      progress = progress or prog
      if stop then return stop, progress end
    until not prog
    return nil, progress
  end
  local list = s.seq or s
  local progress = false
  for _ = 1, s.repeat_ or 1 do
    for _, sub in ipairs(list) do
      local stop, prog = exec(eg, fname, st, sub)
      progress = progress or prog
      if stop then return stop, progress end
    end
  end
  return nil, progress
end

local RUN_KEYS = { iterations = true, node_limit = true, time_limit = true, scheduler = true,
  semi_naive = true, ruleset = true, until_ = true, schedule = true, rollback = true,
  apply_rows = true }

--- eg:run{iterations, node_limit, time_limit, scheduler, semi_naive, rollback, ruleset,
--- until_ | schedule, apply_rows} -> report.
function M.run(eg, fname, opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    S.raise(fname, "argument 1 must be a table of options", "call eg:run{iterations = 10}")
  end
  for k in pairs(opts) do
    if not RUN_KEYS[k] then
      S.raise(fname, ("unknown option '%s'"):format(tostring(k)),
        "use iterations, node_limit, time_limit, scheduler, semi_naive, rollback, ruleset, "
        .. "until_, schedule and apply_rows")
    end
  end
  local st = { semi = opts.semi_naive, rollback = opts.rollback }
  if st.semi == nil then st.semi = true end
  if type(st.semi) ~= "boolean" then
    S.raise(fname, "semi_naive must be a boolean", "pass semi_naive = true or false")
  end
  if st.rollback == nil then st.rollback = true end
  -- with explanations on, the snapshot also truncates the proof logs (snapshot.lua)
  if type(st.rollback) ~= "boolean" then
    S.raise(fname, "rollback must be a boolean", "pass rollback = true or false")
  end
  st.apply_rows = opts.apply_rows
  if st.apply_rows ~= nil and (math.type(st.apply_rows) ~= "integer" or st.apply_rows < 1) then
    S.raise(fname, "apply_rows must be a positive integer (the most rows staged between "
      .. "rebuilds)", "pass e.g. apply_rows = 100000000, or leave it out for the device's share")
  end
  local iters = opts.iterations or 30
  st.node_limit = opts.node_limit or 10000
  st.time_limit = opts.time_limit or 5
  if math.type(iters) ~= "integer" or iters < 0 then
    S.raise(fname, "iterations must be a non-negative integer", "pass e.g. iterations = 10")
  end
  if type(st.node_limit) ~= "number" or type(st.time_limit) ~= "number" then
    S.raise(fname, "node_limit and time_limit must be numbers", "pass e.g. node_limit = 1e6")
  end
  -- only node_limit rolls back; a limit no graph can reach needs no snapshots
  if st.node_limit >= S.LIMIT then st.rollback = false end
  st.sched = opts.scheduler or M.backoff()
  st.indep = M.INDEPENDENT[st.sched] or false
  if not callable(st.sched) then
    S.raise(fname, "scheduler must be a function(iteration, rule_name, matches) -> boolean",
      "pass vyre.egraph.backoff{} or your own function")
  end
  st.sched_fn = type(st.sched) == "function" and st.sched
    or function(...) return st.sched(...) end
  if type(st.sched) == "function" then st.sched = {} end
  if opts.schedule ~= nil and (opts.ruleset ~= nil or opts.until_ ~= nil
    or opts.iterations ~= nil) then
    S.raise(fname, "schedule cannot be combined with ruleset, until_ or iterations",
      "put them in the schedule: {run = \"name\", times = n, until_ = {t1, t2}}")
  end
  local rsname = opts.ruleset or M.DEFAULT
  check_ruleset(eg, fname, rsname)
  local goal = opts.until_ ~= nil and check_goal(eg, fname, opts.until_) or nil
  if opts.schedule ~= nil then check_schedule(eg, fname, opts.schedule, 0) end
  local report = {}
  st.report = report
  st.t_start = now()
  if not eg.clean then R.rebuild(eg, fname) end
  AN.modify(eg, fname) -- constant folding's e-nodes for the terms added since
  local nodes, classes = eg:size()
  report.start = { nodes = nodes, classes = classes }
  if opts.schedule ~= nil then
    report.stop = exec(eg, fname, st, opts.schedule) or "schedule"
  else
    report.stop = run_rules(eg, fname, st, rsname, iters, goal)
  end
  report.seconds = secs(now() - st.t_start)
  return report
end

return M
