-- bench/megakernel/expand.lua — frontier expansion over a CSR graph in three layouts
-- (issue 23 §3): the program text and the steps of one worklist round, given what a round
-- does per item and per edge.
--   "item"      an invocation per item: it walks its item's whole row. Cheap for rows of
--               a few entries; on a skewed graph (R-MAT) one hub's row keeps one lane busy
--               while its subgroup's other 31 lanes wait.
--   "subgroup"  the same, except that items whose degree is at least 32 (a subgroup) are
--               taken out of their lane: the subgroup ballots its heavy items and walks
--               each one's row together, lane l taking entries l, l + 32, ... (coalesced
--               loads of col, the hub's work spread over 32 lanes). A hub of R-MAT scale 22
--               (320k entries) is still 10k steps of one subgroup, and the round waits.
--   "edges"     edge-balanced (merge-path style): the round first writes each item's
--               degree (expand_degrees), scans them inclusively on the device
--               (vyre.lib.steps.scan with the item count in a 1-element buffer: no
--               readback), then a fixed grid strides over the round's entries in chunks
--               of at most EDGE_CHUNK: a chunk finds the item holding its first entry by one
--               binary search in the scanned degrees and walks on from there, item by
--               item. Every invocation gets the same number of entries whatever the
--               degrees; the cost is the degree and scan launches (up to four more
--               layers in a megakernel) and one search per chunk.
-- Which one a run uses: vyre.policy.expansion(degree statistics) (docs/GRID.md).
--
--   expand.program(name, layout, {decls =, prologue = f(v, i, sfx), edge = f(e, w, sfx)})
-- decls: declaration text (rowptr and col must be among them; the worklist `frontier`
-- is added, and for "edges" the scanned degrees `escan`); prologue: statements run once
-- per item v (index i in the round's items; "edges": once per chunk the item's row
-- touches, so they must not write), whose names end in sfx; edge: statements run
-- per entry e with neighbour w; guard (optional): a grid-uniform condition (e.g. a load of
-- a mode word) without which the round does nothing.
--   expand.steps(be, layout, kernel, args, {capacity =, entries = [, scratch =]})
-- the steps of one round: kernel (compiled from expand.program) over args (the worklist
-- as args.frontier); "edges" puts the degree and scan steps first and binds escan.
local common = require("bench.megakernel.common")

local M = {}

M.LAYOUTS = { "item", "subgroup", "edges" }

-- The most entries per chunk of the "edges" layout: one binary search (about log2(items)
-- loads of the scanned degrees, cached) is shared by up to this many entries; rounds with
-- fewer entries than invocations x EDGE_CHUNK take smaller chunks (edges() below).
M.EDGE_CHUNK = 16

local function guarded(o, cond)
  return o.guard and ("(land %s %s)"):format(o.guard, cond) or cond
end

local function item(o)
  return ([[
  (let i (gid x))
  (if %s
    (then
      (let v (load frontier i))
%s
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (let w (load col e))
%s)))]]):format(guarded(o, "(lt i (len frontier))"), o.prologue("v", "i", ""),
    o.edge("e", "w", ""))
end

-- Light items as in "item"; then, for each heavy item of the subgroup in lane order
-- (the ballot's set bits), the whole subgroup walks its row. The shuffles that hand the
-- item to every lane run for all 32 lanes on every lane (a subgroup op must not sit under
-- the ballot's test: the validator cannot know the test is subgroup-uniform).
local function subgroup(o)
  return ([[
  (let i (gid x))
  (let n (len frontier))
  (let ok %s)
  (let v (load frontier (select ok i 0u32)))
  (let rb (load rowptr v))
  (let re (load rowptr (add v 1u32)))
  (let heavy (land ok (ge (sub re rb) 32u32)))
  (if (land ok (lnot heavy))
    (then
%s
      (for e rb re 1u32
        (let w (load col e))
%s)))
  (let hm (ballot heavy))
  (let lane (subgroup_lane))
  (for j 0u32 32u32 1u32
    (let vh (shuffle v j))
    (let ih (shuffle i j))
    (if (ne (and hm (shl 1u32 j)) 0u32)
      (then
%s
        (for eh (add (load rowptr vh) lane) (load rowptr (add vh 1u32)) 32u32
          (let wh (load col eh))
%s))))]]):format(guarded(o, "(lt i n)"), o.prologue("v", "i", ""), o.edge("e", "w", ""),
    o.prologue("vh", "ih", "_h"),
    o.edge("eh", "wh", "_h"))
end

-- The edge-balanced round's last step. escan[i] = the inclusive scan of the round's
-- degrees (item i's entries are the round's entries escan[i-1] .. escan[i]), total =
-- escan[n-1]. The chunk size C is total / invocations rounded up, at least 1 and at most
-- EDGE_CHUNK: a small round (the hub's, early on) spreads over every invocation, one or
-- two entries each, instead of leaving most idle while a few walk 16 entries in a row; a
-- large one takes chunks of EDGE_CHUNK and strides. Chunk c holds the round's entries
-- k0 = c*C .. k1 = min(k0 + C, total); its first item is the first i with escan[i] > k0
-- (binary search over [0, n-1]); it then walks items i, i+1, ... taking each one's
-- entries that fall inside the chunk (a row that spans chunks is walked piecewise by
-- several invocations, each running the item's prologue: it must only read). ib is item
-- i's first round entry; zero-degree items take no entry and are stepped over.
local function edges(o)
  local C = M.EDGE_CHUNK
  return ([[
  (let n (len frontier))
  (if %s
    (then
      (let total (load escan (sub n 1u32)))
      (let stride (mul (ngroups x) 256u32))
      (let csz (max 1u32 (min %du32 (div (add total (sub stride 1u32)) stride))))
      (for c (gid x) (div (add total (sub csz 1u32)) csz) stride
        (let k0 (mul c csz))
        (let k1 (min (add k0 csz) total))
        (let lo 0u32)
        (let hi (sub n 1u32))
        (for s 0u32 32u32 1u32
          (if (ge lo hi) (then (break)))
          (let mid (add lo (shr (sub hi lo) 1u32)))
          (if (gt (load escan mid) k0)
            (then (set hi mid))
            (else (set lo (add mid 1u32)))))
        (let k k0)
        (let ib (select (eq lo 0u32) 0u32 (load escan (sub (max lo 1u32) 1u32))))
        (for i lo n 1u32
          (if (ge k k1) (then (break)))
          (let v (load frontier i))
          (let ie (load escan i))
%s
          (let rb (sub (load rowptr v) ib))
          (for e (add rb k) (add rb (min ie k1)) 1u32
            (let w (load col e))
%s)
          (set k (min ie k1))
          (set ib ie)))))]]):format(guarded(o, "(gt n 0u32)"), C,
    o.prologue("v", "i", ""), o.edge("e", "w", ""))
end

function M.program(name, layout, o)
  local body, decls = nil, o.decls
  if layout == "item" then body = item(o)
  elseif layout == "subgroup" then body = subgroup(o)
  elseif layout == "edges" then
    body, decls = edges(o), decls .. "\n  (buffer escan u32 read)"
  else
    error(("expand.program: layout '%s' is not 'item', 'subgroup' or 'edges'. Fix: pass one "
      .. "of expand.LAYOUTS, or vyre.policy.expansion(stats).layout"):format(tostring(layout)), 2)
  end
  return ("(program %s (workgroup 256)\n%s\n  (worklist frontier u32)\n%s)"):format(name,
    decls, body)
end

-- The edge-balanced round's first step: item i's degree into escan[i], and the item count
-- into ecount[0] for the scan's device count (written by item 0: a round runs with at
-- least one item, and a stale count only rescans what the expansion then ignores, as
-- it reads (len frontier) itself).
M.DEGREES = [[
(program expand_degrees (workgroup 256)
  (buffer rowptr u32 read)
  (buffer escan u32 write)
  (buffer ecount u32 write)
  (worklist frontier u32)
  (let i (gid x))
  (let n (len frontier))
  (if (lt i n)
    (then
      (let v (load frontier i))
      (store escan i (sub (load rowptr (add v 1u32)) (load rowptr v)))
      (if (eq i 0u32) (then (store ecount 0u32 n))))))]]

--- Invocations of the edge-balanced step: the device's resident threads (SMs x threads
--- per SM; they stride over the round's chunks), but no more than the chunks of the
--- whole graph's entries (a small graph on the reference runs a few workgroups).
function M.edge_threads(be, entries)
  local ok, p = pcall(be.profile, be)
  local resident = ok and type(p) == "table" and (p.sms or 0) * (p.max_threads_per_sm or 0) or 0
  if resident <= 0 then resident = 132 * 2048 end
  local chunks = (entries + M.EDGE_CHUNK - 1) // M.EDGE_CHUNK
  local n = math.max(1, math.min(resident, chunks))
  return (n + 255) // 256 * 256
end

--- steps(be, layout, kernel, args, o) -> the steps of one round (see the header), and a
--- table of the buffers the "edges" layout added (escan, ecount, scratch; kept alive by
--- the steps too). o = {capacity = the worklist's capacity, entries = the graph's
--- entries [, scratch = vyre.lib.scratch(be)]}.
function M.steps(be, layout, kernel, args, o)
  local wl = args.frontier
  if layout ~= "edges" then return { { kernel, args, { n = wl } } }, {} end
  local lib = require("vyre.lib")
  local escan, ecount = be:buffer("u32", o.capacity), be:buffer("u32", 1)
  local scratch = o.scratch or lib.scratch(be)
  local steps = { { common.kernel(be, M.DEGREES), { rowptr = args.rowptr, escan = escan,
    ecount = ecount, frontier = wl }, { n = wl } } }
  for _, s in ipairs(lib.steps.scan(be, escan, escan, { count = ecount, scratch = scratch })) do
    steps[#steps + 1] = s
  end
  local a = { escan = escan }
  for k, v in pairs(args) do a[k] = v end
  steps[#steps + 1] = { kernel, a, { n = M.edge_threads(be, o.entries) } }
  return steps, { escan = escan, ecount = ecount, scratch = scratch }
end

return M
