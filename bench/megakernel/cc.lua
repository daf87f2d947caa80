-- bench/megakernel/cc.lua — connected components by union-find with hooking and pointer
-- jumping, in the manner of ECL-CC (Jaiganesh & Burtscher), on an R-MAT graph in CSR.
-- Three steps, each an invocation per vertex, run once:
--   1. cc_init: parent[v] = v's smallest neighbour if that is below v, else v (rows are
--      sorted, so that is the first entry);
--   2. cc_hook: for each neighbour u < v, find both representatives (walking up with
--      intermediate pointer jumping: each visited vertex is pointed at its grandparent)
--      and hook the larger onto the smaller with a cas on the larger's parent; a failed
--      cas (another invocation hooked it first) continues from the value it saw;
--   3. cc_flatten: parent[v] = v's representative (a plain walk up: see M.FLATTEN).
-- Hooks only ever point a root at a smaller vertex, so every tree's root is the smallest
-- vertex of its component: the labels (min vertex id per component) are canonical and
-- the same on every backend, whatever the order of the atomics. The pointer-jumping
-- stores race with each other only to point a non-root at one of its ancestors; cas
-- targets only roots.
-- Checked against union-find in plain Lua (graphs of at most M.LUA_LIMIT entries) and,
-- always, by a device kernel (labels equal across every edge, label <= vertex, labels are
-- their own labels).
local common = require("bench.megakernel.common")
local graph = require("bench.megakernel.graph")

local M = { name = "cc", title = "Connected components (ECL-CC style union-find), R-MAT",
  once = true }

M.LUA_LIMIT = 1 << 24

M.INIT = [[
(program cc_init (workgroup 256)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer parent u32 write)
  (let v (gid x))
  (if (lt v (len parent))
    (then
      (let rb (load rowptr v))
      (let first (select (lt rb (load rowptr (add v 1u32))) (load col rb) v))
      (store parent v (min first v)))))]]

-- The representative of X into R (statements): walk up while the parent is smaller,
-- pointing each visited vertex at its grandparent.
local function find(x, r)
  return ([[
      (let %s %s)
      (for it_%s 0u32 4294967295u32 1u32
        (let p_%s (load parent %s))
        (if (ge p_%s %s) (then (break)))
        (let g_%s (load parent p_%s))
        (if (lt g_%s p_%s) (then (store parent %s g_%s)))
        (set %s p_%s))]]):format(r, x, r, r, r, r, r, r, r, r, r, r, r, r, r)
end

M.HOOK = ([[
(program cc_hook (workgroup 256)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer parent u32 read_write)
  (let v (gid x))
  (if (lt v (len parent))
    (then
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (let u (load col e))
        (if (lt u v)
          (then
%s
%s
            (for k 0u32 4294967295u32 1u32
              (if (eq a b) (then (break)))
              (if (lt a b)
                (then
                  (let rb (atomic cas parent b b a))
                  (if (eq rb b) (then (break)))
                  (set b rb))
                (else
                  (let ra (atomic cas parent a a b))
                  (if (eq ra a) (then (break)))
                  (set a ra))))))))))]]):format(find("v", "a"), find("u", "b"))

-- No pointer jumping here: an invocation writes only its own vertex, so no store of a
-- grandparent by a walk through v can land after v's root was stored (a race that
-- would leave v pointing at a non-root).
M.FLATTEN = [[
(program cc_flatten (workgroup 256)
  (buffer parent u32 read_write)
  (let v (gid x))
  (if (lt v (len parent))
    (then
      (let r v)
      (for it 0u32 4294967295u32 1u32
        (let p (load parent r))
        (if (ge p r) (then (break)))
        (set r p))
      (store parent v r))))]]

-- stats: [0] violations, [1] components (vertices that are their own label).
M.CHECK = [[
(program cc_check (workgroup 256)
  (buffer rowptr u32 read)
  (buffer col u32 read)
  (buffer label u32 read)
  (buffer stats u32 read_write)
  (let v (gid x))
  (if (lt v (len label))
    (then
      (let l (load label v))
      (let bad (select (lor (gt l v) (ne (load label l) l)) 1u32 0u32))
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (if (ne (load label (load col e)) l) (then (set bad (add bad 1u32)))))
      (if (ne bad 0u32) (then (atomic add stats 0u32 bad)))
      (if (eq l v) (then (atomic add stats 1u32 1u32))))))]]

--- Components in plain Lua: union-find over 1-based CSR tables; label = min vertex id.
function M.lua_labels(rowptr, col)
  local n = #rowptr - 1
  local p = {}
  for v = 0, n - 1 do p[v] = v end
  local function root(x)
    while p[x] ~= x do
      p[x] = p[p[x]]
      x = p[x]
    end
    return x
  end
  for v = 0, n - 1 do
    for e = rowptr[v + 1] + 1, rowptr[v + 2] do
      local a, b = root(v), root(col[e])
      if a < b then p[b] = a elseif b < a then p[a] = b end
    end
  end
  local out = {}
  for v = 0, n - 1 do out[v + 1] = root(v) end
  return out
end

function M.setup(be, o)
  local g = graph.shared(be, { scale = o.scale, edge_factor = o.edge_factor, seed = o.seed })
  local parent = be:buffer("u32", g.nodes)
  local args = { rowptr = g.rowptr, col = g.col, parent = parent }
  local inst = {
    once = true, output = parent, nodes = g.nodes, edges = g.edges, graph = g, max_rounds = 1,
    bytes_per_round = 8 * g.entries,
    steps = {
      { common.kernel(be, M.INIT), args, { n = g.nodes } },
      { common.kernel(be, M.HOOK), args, { n = g.nodes } },
      { common.kernel(be, M.FLATTEN), { parent = parent }, { n = g.nodes } },
    },
  }
  function inst.reset()
    parent:zero()
  end
  function inst.check(rounds)
    if rounds ~= 1 then return false, ("%d rounds (the pipeline runs once)"):format(rounds) end
    local stats = be:buffer("u32", 2)
    be:sequence({ { common.kernel(be, M.CHECK), { rowptr = g.rowptr, col = g.col,
      label = parent, stats = stats }, { n = g.nodes } } })
    local s = stats:download():totable()
    stats:free()
    if s[1] ~= 0 then return false, ("%d component-label rule violations"):format(s[1]) end
    local msg = ("%d components over %d vertices"):format(s[2], g.nodes)
    if g.entries > M.LUA_LIMIT then
      return true, msg .. " (device check only: too large for Lua)"
    end
    local want = M.lua_labels(g.rowptr:download():totable(), g.col:download():totable())
    local got = parent:download():totable()
    for v = 1, g.nodes do
      if got[v] ~= want[v] then
        return false, ("label[%d] = %d, union-find in plain Lua says %d"):format(v - 1, got[v],
          want[v])
      end
    end
    return true, msg .. "; equal to union-find in plain Lua"
  end
  return inst
end

return M
