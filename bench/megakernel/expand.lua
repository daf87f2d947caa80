-- bench/megakernel/expand.lua — frontier expansion over a CSR graph in two layouts
-- (issue 23 §3): the program text of one worklist round, given what a round does per
-- item and per edge.
--   "item"      an invocation per item: it walks its item's whole row. Cheap for rows of
--               a few entries; on a skewed graph (R-MAT) one hub's row keeps one lane busy
--               while its subgroup's other 31 lanes wait.
--   "subgroup"  the same, except that items whose degree is at least 32 (a subgroup) are
--               taken out of their lane: the subgroup ballots its heavy items and walks
--               each one's row together, lane l taking entries l, l + 32, ... (coalesced
--               loads of col, the hub's work spread over 32 lanes).
-- Which one a run uses: vyre.policy.expansion(degree statistics) (docs/GRID.md).
--
--   expand.program(name, layout, {decls =, prologue = f(v, i, sfx), edge = f(e, w, sfx)})
-- decls: declaration text (rowptr and col must be among them; the worklist `frontier`
-- is added); prologue: statements run once per item v (index i in the round's items),
-- whose names end in sfx; edge: statements run per entry e with neighbour w; guard
-- (optional): a grid-uniform condition (e.g. a load of a mode word) without which the
-- round does nothing.
local M = {}

M.LAYOUTS = { "item", "subgroup" }

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

function M.program(name, layout, o)
  local body
  if layout == "item" then body = item(o)
  elseif layout == "subgroup" then body = subgroup(o)
  else
    error(("expand.program: layout '%s' is not 'item' or 'subgroup'. Fix: pass one of "
      .. "expand.LAYOUTS, or vyre.policy.expansion(stats).layout"):format(tostring(layout)), 2)
  end
  return ("(program %s (workgroup 256)\n%s\n  (worklist frontier u32)\n%s)"):format(name,
    o.decls, body)
end

return M
