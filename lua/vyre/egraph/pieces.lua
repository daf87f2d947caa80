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
-- one piece's. A rule whose rows alone pass the cap is staged in segments of its rows,
-- in the order and with the ids one piece would give them (a segment's share of a node's
-- matches is copied to a buffer of its own), so the rows after the rebuild are in the
-- same order too, and everything that depends on rows and ids (the next search's
-- matches, canonical ids, extraction) is that of one piece.
local S = require("vyre.egraph.store")
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

-- The next piece of found from the cursor (entry k, its rows from lo): whole entries
-- while they fit in cap rows; an entry past cap alone, from lo, becomes one segment of
-- its rows ({rule, m, sub, lay, seg = {lo, hi, base}}: A.apply_batch stages them in the
-- whole entry's order, with its ids). Returns the piece and the cursor after it.
local function next_piece(eg, found, k, lo, cap)
  local piece, rows = {}, 0
  while k <= #found do
    local f = found[k]
    local r = A.added(eg, f.rule, f.m)
    if lo == 0 and r <= cap then
      if rows + r > cap and #piece > 0 then break end
      piece[#piece + 1] = f
      rows = rows + r
      k = k + 1
    else
      if #piece > 0 then break end
      -- the whole entry's ids start where the graph's end at its first segment (the
      -- entries before it are applied by then)
      if lo == 0 then f.id_base = eg.nids end
      local hi = math.min(r, lo + math.max(cap, 1))
      piece[1] = { rule = f.rule, m = f.m, sub = f.sub, lay = f.lay,
        seg = { lo = lo, hi = hi, base = f.id_base } }
      if hi == r then return piece, k + 1, 0 end
      return piece, k, hi
    end
  end
  return piece, k, 0
end

--- Applies found in pieces of at most cap() staged rows each (asked before each piece,
--- so that a default cap can shrink as the graph grows), rebuilding between them; stop()
--- is asked after each rebuild. Returns the rules whose matches were all applied and,
--- when it stopped early, "interrupted".
function P.apply(eg, fname, found, cap, stop)
  local done, k, lo, n, segs = {}, 1, 0, 0, 0
  while k <= #found do
    if n > 0 then
      local _, _, rr = R.rebuild(eg, fname, true)
      if rr.interrupted or stop() then return done, "interrupted" end
    end
    local piece
    piece, k, lo = next_piece(eg, found, k, lo, cap())
    A.apply_batch(eg, fname, piece)
    n = n + 1
    for _, f in ipairs(piece) do
      if f.seg then segs = segs + 1 end
      if not f.seg or f.seg.hi == A.added(eg, f.rule, f.m) then
        done[f.rule] = true
        -- a big substitution buffer is given back once its matches are all applied
        if f.sub.count >= S.BIG then S.drop_scratch(eg, f.sub) end
      end
    end
  end
  -- what the last apply in pieces did (spec 114, bench/eqsat)
  eg.apply_pieces, eg.apply_segments = n, segs
  return done
end

return P
