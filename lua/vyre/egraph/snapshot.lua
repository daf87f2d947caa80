-- vyre.egraph.snapshot — device-side snapshots of a rebuilt e-graph, so that eg:run can
-- roll back an iteration that passes node_limit or time_limit (docs/EGRAPH.md,
-- "Limits and rollback").
--
-- A snapshot copies the live prefix of every column (parent[0 .. ids), the row columns
-- and row_epoch [0 .. rows), children[0 .. words)) into scratch buffers of the same
-- backend with one sequence of copy kernels: nothing goes through the host. Rows and
-- ids are only ever appended during an iteration and the rebuild only compacts, so the
-- prefixes and the host counters are the whole state. Restoring copies them back into
-- the columns (grown again if a compaction swapped in a smaller buffer) and resets the
-- counters; staged adds and unions are dropped.
--
-- With explanations on (explain.lua) the logs roll back too. The term log (xt_*) and the
-- union log (xu_*) are only appended to, at the host counters' positions, so restoring
-- the counters truncates them; xrow_id is row-indexed and compacted with the rows, so
-- its prefix is copied like a row column. A later eg:explain then never sees a union
-- of the rolled-back iteration.
local S = require("vyre.egraph.store")
local K = require("vyre.egraph.kernels")
local R = require("vyre.egraph.rebuild")

local N = {}

local ROWS = { "row_class", "row_op", "row_off", "row_len", "row_epoch" }

local function spans(snap)
  local t = { { "parent", snap.nids }, { "children", snap.nwords } }
  for _, c in ipairs(ROWS) do t[#t + 1] = { c, snap.nrows } end
  -- the explanation log's rows: those captured so far (explain.capture), which may be
  -- fewer than nrows when rows were added since the last canonicalisation
  if snap.xlog then t[#t + 1] = { "xrow_id", snap.xlog.rows } end
  return t
end

local XKEYS = { "rows", "tw", "nu", "batch", "ids" }

--- Takes a snapshot of eg (which must be rebuilt: eg.clean); returns it.
function N.take(eg, fname)
  S.settle(eg)
  R.epochs(eg, fname) -- every row has its epoch, so row_epoch's prefix is complete
  local snap = { nids = eg.dev.nids, nrows = eg.dev.nrows, nwords = eg.dev.nwords,
    merges = eg.merges, epoch_rows = eg.epoch_rows }
  if eg.xlog then
    snap.xlog = {}
    for _, k in ipairs(XKEYS) do snap.xlog[k] = eg.xlog[k] end
  end
  local steps = {}
  for _, sp in ipairs(spans(snap)) do
    local name, n = sp[1], sp[2]
    local dst = S.exact(eg, "snap_" .. name, n)
    if n > 0 then
      steps[#steps + 1] = { K.copy_range(eg.be), { src = eg[name], dst = dst, n = n,
        src0 = 0, dst0 = 0 }, S.grid(n) }
    end
  end
  S.run(eg, fname, steps)
  return snap
end

--- Puts eg back to the state of snapshot snap (device columns and counters).
function N.restore(eg, fname, snap)
  eg.pend = { op = {}, len = {}, off = {}, words = {} }
  eg.punion = {}
  local steps = {}
  for _, sp in ipairs(spans(snap)) do
    local name, n = sp[1], sp[2]
    if n > 0 then
      S.ensure(eg, name, n, 0)
      steps[#steps + 1] = { K.copy_range(eg.be), { src = eg["x_snap_" .. name],
        dst = eg[name], n = n, src0 = 0, dst0 = 0 }, S.grid(n) }
    end
  end
  S.run(eg, fname, steps)
  eg.nids, eg.nrows, eg.nwords = snap.nids, snap.nrows, snap.nwords
  eg.dev.nids, eg.dev.nrows, eg.dev.nwords = snap.nids, snap.nrows, snap.nwords
  eg.merges, eg.epoch_rows = snap.merges, snap.epoch_rows
  if snap.xlog then
    -- the counters are the logs' lengths: the entries past them are overwritten later
    for _, k in ipairs(XKEYS) do eg.xlog[k] = snap.xlog[k] end
  end
  eg.uf_dirty, eg.garbage = false, false
  S.changed(eg)
  eg.clean = true
end

return N
