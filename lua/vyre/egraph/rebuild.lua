-- vyre.egraph.rebuild — congruence closure on the device (docs/EGRAPH.md, "Rebuild").
--
-- One round, with parent compressed (every pointer is a canonical id):
--   1. canon: each row's class and children become canonical; its signature is computed
--      (the original system's mix) into keys, its row index into vals;
--   2. vyre.lib's stable radix sort orders (signature, row);
--   3. heads + a max-scan give every sorted position the start of its signature run;
--   4. match: each row compares itself with its run from the start and, at the first
--      structurally equal row, unites the two classes (lock-free union-find, minimum id
--      wins) and marks itself a duplicate; then parent is compressed again;
--   5. if there were duplicates, the kept rows are compacted (an exclusive scan of the
--      keep flags gives their new places; their order is kept).
-- Rounds repeat until a round unites nothing. A run of equal signatures holding
-- different structures (a 32-bit collision) is still handled exactly: a row is only
-- united with a row it equals word for word. The rows left form the hashcons: one row
-- per congruence class of e-nodes, the first in insertion order. Afterwards the children
-- column is compacted too. Every count reported is exact and the same on both backends.
local SORT = require("vyre.lib.sort")
local scan = require("vyre.lib.shared").scan
local S = require("vyre.egraph.store")
local K = require("vyre.egraph.kernels")

local R = {}

local ALT = { row_class = "alt_class", row_op = "alt_op", row_off = "alt_off",
  row_len = "alt_len", row_epoch = "alt_epoch" }

--- The row_epoch column (semi-naive search, docs/EGRAPH.md): rows appended since the
--- last call (from eg.epoch_rows on: every add path appends) get the epoch eg.epoch.
--- With steps, the fill is appended there instead of run at once.
function R.epochs(eg, fname, steps)
  local n, from = eg.dev.nrows, eg.epoch_rows or 0
  S.ensure(eg, "row_epoch", math.max(n, eg.row_class and eg.row_class.count or 0), from)
  if n > from then
    local st = { K.fill_from(eg.be), { buf = eg.row_epoch, from = from, n = n,
      value = eg.epoch or 0 }, S.grid(n - from) }
    if steps then steps[#steps + 1] = st else S.run(eg, fname, { st }) end
  end
  eg.epoch_rows = n
end

--- Runs canon over the rows: canonical classes and children, signatures in keys (an
--- exact-size buffer, returned with vals); rows that changed get the epoch eg.epoch.
--- With steps, the launches are appended there (the caller runs them) instead.
function R.canon(eg, fname, steps)
  local n = eg.dev.nrows
  local keys = S.exact(eg, "keys", n)
  local vals = S.exact(eg, "vals", n)
  if eg.xlog then require("vyre.egraph.explain").capture(eg, fname) end
  local own = not steps
  steps = steps or {}
  R.epochs(eg, fname, steps)
  if n > 0 then
    steps[#steps + 1] = { K.canon(eg.be), { parent = eg.parent, isleaf = eg.isleaf,
      children = eg.children, row_class = eg.row_class, row_op = eg.row_op,
      row_off = eg.row_off, row_len = eg.row_len, sig = keys, vals = vals,
      row_epoch = eg.row_epoch, n = n, cur = eg.epoch or 0 }, S.grid(n) }
  end
  if own then S.run(eg, fname, steps) end
  return keys, vals
end

-- Appends the compaction of the rows whose keep flag is 0 into the alt columns to steps
-- (the scan of keep into rank, and the scatter); returns rank.
local function compact_steps(eg, keep, steps)
  local be, n = eg.be, eg.dev.nrows
  local rank = S.exact(eg, "rank", n)
  for main, alt in pairs(ALT) do
    if not eg[alt] or eg[alt].count < n then
      if eg[alt] then eg[alt]:free() end
      eg[alt] = be:buffer("u32", eg[main].count)
    end
  end
  scan.steps(be, "u32", "add", true, keep, rank, n, steps)
  steps[#steps + 1] = { K.scatter_rows(be), { keep = keep, rank = rank,
    row_class = eg.row_class, row_op = eg.row_op, row_off = eg.row_off, row_len = eg.row_len,
    row_epoch = eg.row_epoch, out_class = eg.alt_class, out_op = eg.alt_op,
    out_off = eg.alt_off, out_len = eg.alt_len, out_epoch = eg.alt_epoch, n = n }, S.grid(n) }
  return rank
end

-- Removes the rows whose keep flag is 0 (stable), given their count; with rank, the
-- compaction already ran (R.rounds put it in the round's sequence).
local function compact_rows(eg, fname, keep, dups, rank)
  local n = eg.dev.nrows
  if not rank then
    local steps = {}
    rank = compact_steps(eg, keep, steps)
    S.run(eg, fname, steps)
  end
  if eg.xlog then require("vyre.egraph.explain").scatter(eg, fname, keep, rank, n, n - dups) end
  for main, alt in pairs(ALT) do eg[main], eg[alt] = eg[alt], eg[main] end
  eg.dev.nrows = n - dups
  eg.nrows = eg.dev.nrows
  eg.epoch_rows = eg.dev.nrows
  eg.garbage = true
end

local DROP = [[
(program eg_drop_rows (workgroup 256)
  (buffer rows u32 read)
  (buffer keep u32 write)
  (param k u32)
  (let i (gid x))
  (if (lt i k) (then (store keep (load rows i) 0u32))))
]]

--- Removes the rows listed (distinct row indexes of the settled, rebuilt graph) and
--- compacts the columns (egglog's delete). Congruence still holds: fewer rows.
function R.drop_rows(eg, fname, rows)
  local n, k = eg.dev.nrows, #rows
  if k == 0 then return end
  if eg.xlog then require("vyre.egraph.explain").capture(eg, fname) end
  local keep = S.exact(eg, "keep", n)
  local list = S.exact(eg, "drop_rows", k)
  list:upload(rows)
  local steps = {}
  require("vyre.lib.basic").fill_steps(eg.be, keep, 1, n, steps)
  steps[#steps + 1] = { require("vyre.lib.util").kernel(eg.be, "eqsat:drop_rows",
    function() return DROP end), { rows = list, keep = keep, k = k }, S.grid(k) }
  S.run(eg, fname, steps)
  R.keep_rows(eg, fname, keep, k)
end

--- Compacts the rows whose keep flag (u32 per row) is 1, k of them being 0 (pruning and
--- delete); congruence still holds: fewer rows.
function R.keep_rows(eg, fname, keep, k)
  compact_rows(eg, fname, keep, k)
  R.compact_children(eg, fname)
  eg.groups, eg.snap, eg.nclasses, eg.qidx = nil, nil, nil, nil
end

--- Moves the children of the rows left into a dense column (after rows were removed).
function R.compact_children(eg, fname)
  local be, n = eg.be, eg.dev.nrows
  eg.garbage = false
  if n == 0 then
    eg.nwords, eg.dev.nwords = 0, 0
    return
  end
  local woff = S.exact(eg, "woff", n)
  if not eg.alt_children or eg.alt_children.count < eg.dev.nwords then
    if eg.alt_children then eg.alt_children:free() end
    eg.alt_children = be:buffer("u32", eg.children.count)
  end
  local steps = {}
  scan.steps(be, "u32", "add", true, eg.row_len, woff, n, steps)
  steps[#steps + 1] = { K.move_words(be), { children = eg.children,
    out_children = eg.alt_children, row_off = eg.row_off, row_len = eg.row_len, woff = woff,
    n = n }, S.grid(n) }
  local res = S.run(eg, fname, steps, { { woff, n, 1 }, { eg.row_len, n, 1 } })
  eg.children, eg.alt_children = eg.alt_children, eg.children
  eg.dev.nwords = res[1][1] + res[2][1]
  eg.nwords = eg.dev.nwords
end

--- eg:rebuild(): rounds until no new union; returns rounds, unions (e-class merges found
--- by congruence) and a report: per round {rows, unions, duplicates}, and the summed
--- times of its sequences (wall_ns, device_ns, sequences). untimed: the sequences are
--- not timed (the report's times are 0): eg:run's iterations read no rebuild times, and
--- a timed sequence records two device events and reads their elapsed time.
function R.rebuild(eg, fname, untimed)
  local clock = { wall_ns = 0, device_ns = 0, sequences = 0 }
  eg.clock = not untimed and clock or nil
  local ok, rounds, unions, report = pcall(R.rounds, eg, fname)
  eg.clock = nil
  if not ok then error(rounds, 0) end
  report.wall_ns, report.device_ns, report.sequences = clock.wall_ns, clock.device_ns,
    clock.sequences
  return rounds, unions, report
end

-- Below this many rows a round compacts its rows in its own sequence whether or not it
-- found duplicates (a scan and a scatter cost less than a synchronisation there).
R.SPECULATE_ROWS = 1 << 20

function R.rounds(eg, fname)
  -- the compress of unions staged since the last rebuild goes with round 1's sequence
  S.flush(eg)
  local pending = eg.uf_dirty and eg.dev.nids > 0
  eg.uf_dirty = false
  local be = eg.be
  local rounds, unions, report = 0, 0, {}
  while eg.dev.nrows > 0 do
    local n = eg.dev.nrows
    rounds = rounds + 1
    -- canon, the sort, the match (and, for small graphs, the compaction) of a round are
    -- one sequence (one synchronisation)
    local steps = {}
    if pending then
      steps[1] = { K.compress(be), { parent = eg.parent, n = eg.dev.nids },
        S.grid(eg.dev.nids) }
      pending = false
    end
    local keys, vals = R.canon(eg, fname, steps)
    for _, st in ipairs(SORT.steps_trusted(be, keys, vals)) do steps[#steps + 1] = st end
    local start = S.exact(eg, "start", n)
    local keep = S.exact(eg, "keep", n)
    steps[#steps + 1] = { K.heads(be), { keys = keys, start = start, n = n }, S.grid(n) }
    scan.steps(be, "u32", "max", false, start, start, n, steps)
    S.zero_stat(eg, 2, steps)
    if eg.xlog then require("vyre.egraph.explain").cong_steps(eg, steps, vals, start, n) end
    steps[#steps + 1] = { K.match(be), { parent = eg.parent, children = eg.children,
      row_class = eg.row_class, row_op = eg.row_op, row_off = eg.row_off, row_len = eg.row_len,
      vals = vals, start = start, keep = keep, row_epoch = eg.row_epoch, stat = eg.stat,
      n = n }, S.grid(n) }
    steps[#steps + 1] = { K.compress(be), { parent = eg.parent, n = eg.dev.nids },
      S.grid(eg.dev.nids) }
    local rank = not eg.xlog and n <= R.SPECULATE_ROWS and compact_steps(eg, keep, steps)
    local res = S.run(eg, fname, steps, { S.stat_readback(eg, 2) })
    if eg.xlog then require("vyre.egraph.explain").after_round(eg) end
    local merged, dups = res[1][1], res[1][2]
    report[rounds] = { rows = n, unions = merged, duplicates = dups }
    unions = unions + merged
    if dups > 0 then compact_rows(eg, fname, keep, dups, rank or nil) end
    if merged == 0 then break end
    -- eg:run's time_limit between rounds: the caller rolls the iteration back, so the
    -- graph may be left half rebuilt here
    if eg.interrupt and eg.interrupt() then
      report.interrupted = true
      return rounds, unions, report
    end
  end
  if pending then -- no rows: the compress still has to run
    S.run(eg, fname, { { K.compress(be), { parent = eg.parent, n = eg.dev.nids },
      S.grid(eg.dev.nids) } })
  end
  if eg.garbage then R.compact_children(eg, fname) end
  eg.merges = eg.merges + unions
  eg.clean = true
  eg.groups, eg.snap, eg.nclasses = nil, nil, nil
  return rounds, unions, report
end

--- Appends the launches counting the e-classes that have e-nodes into stat[slot] (zeroed
--- by the caller) to steps, for a settled graph; false when it has no e-nodes (0).
function R.class_steps(eg, steps, slot)
  local n, nids = eg.dev.nrows, eg.dev.nids
  if n == 0 then return false end
  local mark = S.exact(eg, "mark", nids)
  mark:zero()
  steps[#steps + 1] = { K.mark(eg.be), { parent = eg.parent, row_class = eg.row_class,
    mark = mark, n = n }, S.grid(n) }
  steps[#steps + 1] = { K.count_nonzero(eg.be), { src = mark, stat = eg.stat, n = nids,
    slot = slot }, S.grid(nids) }
  return true
end

--- The number of e-classes that have e-nodes (settles the graph first).
function R.count_classes(eg, fname)
  S.settle(eg)
  local steps = {}
  S.zero_stat(eg, 1, steps)
  if not R.class_steps(eg, steps, 0) then return 0 end
  local res = S.run(eg, fname, steps, { S.stat_readback(eg, 1) })
  return res[1][1]
end

return R
