-- vyre.egraph.pieces — an iteration's batched apply in pieces that fit the device
-- (docs/EGRAPH.md, "Applying in pieces").
--
-- The batched apply stages every right-hand e-node of every match as a new row, and the
-- rebuild that follows holds all of them at once (canon's keys, the sort's second copy,
-- the compaction's alt columns, each of the scratch buffers that grow by doubling). Past
-- about 10^8 staged rows that is more than a GPU holds: iteration 13 of the math
-- workload stages about 1.8·10^9 rows, which are 2.4·10^8 e-nodes once the duplicates
-- go. So when the staged rows would pass a cap, the matches are applied in pieces of at
-- most `cap` rows with a rebuild after each piece but the last (run.lua's own rebuild
-- follows it). The matches were all found before the first piece, so the pieces apply
-- exactly the iteration's matches; congruence closure does not depend on the order in
-- which rows and unions come, so the e-nodes and e-classes at the end are the same as
-- one piece's. A rule whose matches alone pass the cap is cut into slices of its
-- substitutions (one copy kernel per slice); its literal leaves (one e-node shared by
-- every match) are then staged once per slice and merged by the rebuild.
local S = require("vyre.egraph.store")
local U = require("vyre.lib.shared")
local A = require("vyre.egraph.saturate")
local R = require("vyre.egraph.rebuild")

local P = {}

-- Bytes of device memory a staged row adds at the rebuild's peak, measured on the math
-- workload (live buffers at the peak ÷ rows, 113-205 B from iteration 10 to 13): its
-- columns and their alt copies, its children words, canon's keys and vals, the sort's
-- second copy, the compaction's rank and keep, its id's parent, and the growth's slack.
P.ROW_BYTES = 160
-- The device's share the pieces may fill (the rest: copies while columns grow, pools,
-- the driver); below 2^23 rows a piece is not worth a rebuild of the whole graph.
P.SHARE = 0.8
P.MIN_ROWS = 1 << 23

--- The default cap on staged rows for eg now: what is left of the device's share after
--- the buffers alive, over ROW_BYTES (nil on a backend that does not report its memory).
function P.default_cap(eg)
  local mem = eg.mem_bytes
  if mem == nil then
    mem = eg.be:info().memory_bytes or false
    eg.mem_bytes = mem
  end
  if not mem then return nil end
  local live = eg.be:stats().live_buffer_bytes or 0
  return math.max(P.MIN_ROWS, math.floor((P.SHARE * mem - live) / P.ROW_BYTES))
end

local SLICE = [[
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

-- The substitutions [i0, i0 + mc) of f (column-major, f.m rows per column) as a buffer of
-- their own, column-major with mc rows per column.
local function slice(eg, fname, f, i0, mc)
  local total = f.lay.ncols * mc
  local out = S.exact(eg, "ap_slice", total)
  local k = U.kernel(eg.be, "eqsat:sub_slice", function() return SLICE end)
  S.run(eg, fname, { { k, { src = f.sub, out = out, m = f.m, i0 = i0, mc = mc,
    total = total }, S.grid(total) } })
  return out
end

-- The next piece of found from the cursor (entry k, its first match i0) within cap
-- staged rows: whole entries while they fit; an entry past cap alone, from i0, becomes
-- one slice ({rule, m = slice size, lay, from = i0, whole = the entry}). Returns the
-- piece and the cursor after it.
local function next_piece(eg, found, k, i0, cap)
  local piece, rows = {}, 0
  while k <= #found do
    local f = found[k]
    local r = A.added(eg, f.rule, f.m)
    if i0 == 0 and r <= cap then
      if rows + r > cap and #piece > 0 then break end
      piece[#piece + 1] = f
      rows = rows + r
      k = k + 1
    else
      if #piece > 0 then break end
      local c = f.rule.added -- r0 rows once, r1 rows per match (A.added)
      local per = math.max(1, (cap - c.r0) // math.max(1, c.r1))
      per = math.min(per, f.m - i0, 0xffffffff // f.lay.ncols)
      piece[1] = { rule = f.rule, m = per, lay = f.lay, from = i0, whole = f }
      if i0 + per == f.m then return piece, k + 1, 0 end
      return piece, k, i0 + per
    end
  end
  return piece, k, 0
end

--- Applies found in pieces of at most cap() staged rows each (asked before each piece,
--- so that a default cap can shrink as the graph grows), rebuilding between them; stop()
--- is asked after each rebuild. Returns the rules whose matches were all applied and,
--- when it stopped early, "interrupted".
function P.apply(eg, fname, found, cap, stop)
  local done, k, i0, n, sliced = {}, 1, 0, 0, 0
  while k <= #found do
    if n > 0 then
      local _, _, rr = R.rebuild(eg, fname, true)
      if rr.interrupted or stop() then return done, "interrupted" end
    end
    local piece
    piece, k, i0 = next_piece(eg, found, k, i0, cap())
    for _, f in ipairs(piece) do
      if f.whole then
        f.sub = slice(eg, fname, f.whole, f.from, f.m)
        sliced = sliced + 1
      end
    end
    A.apply_batch(eg, fname, piece)
    n = n + 1
    for _, f in ipairs(piece) do
      if not f.whole or f.from + f.m == f.whole.m then
        done[f.rule] = true
        -- a big substitution buffer is given back once its matches are all applied
        local sub = f.whole and f.whole.sub or f.sub
        if sub.count >= S.BIG then S.drop_scratch(eg, sub) end
      end
    end
  end
  -- what the last apply in pieces did (spec 114, bench/eqsat)
  eg.apply_pieces, eg.apply_slices = n, sliced
  return done
end

return P
