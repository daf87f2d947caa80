-- bench/megakernel/graph.lua — an R-MAT graph as CSR, built on the device, for the worklist
-- workloads (BFS, SSSP, connected components, PageRank; issue 23 §3).
--
-- The edges are rmat.lua's (the same hash per edge and level picks the quadrant, the same
-- Graph500 parameters), treated as undirected: every edge (s, d) gives the two entries
-- s -> d and d -> s (self loops and duplicates kept, as Graph500 does). The CSR is built
-- without atomics, so it is the same on every backend and every run:
--   1. rmat_keys: entry keys (row << scale) | col as u64, two per edge;
--   2. vyre.lib.sort over the key's 2 * scale low bits (stable radix sort);
--   3. rmat_csr: col = the key's low bits; row starts from where the row part changes
--      (each entry writes the starts of the rows between its predecessor's and its own);
--      with weights, wt = 1 + (a hash of the unordered pair) mod 64, so both directions
--      of an edge weigh the same.
-- Rows come out sorted by column: PageRank's sums over a row have one order everywhere.
--   local G = require("bench.megakernel.graph")
--   local g = G.build(be, {scale = 8, edge_factor = 4, seed = 1, weights = true})
--   g.rowptr, g.col [, g.wt] (Buffers), g.nodes, g.entries (= 2 x edges), g.edges
--   G.lua_csr(scale, edge_factor, seed) -> {rowptr =, col =, wt =} 1-based tables of the
--     same CSR computed in plain Lua (the specs compare the two)
--   G.degree_stats(rowptr_table) -> facts for vyre.policy.expansion
local vyre = require("vyre")

local M = {}

-- The R-MAT quadrant of edge e at level l, as in rmat.lua (thresholds in 1/65536 for
-- a = 0.57, a + b = 0.76, a + b + c = 0.95).
local GEN_BODY = [[
      (let s 0u32)
      (let d 0u32)
      (for l 0u32 scale 1u32
        (let h0 (add (mul e 0x9e3779b1u32) (add (mul l 0x85ebca77u32) seed)))
        (let h1 (mul (xor h0 (shr h0 16u32)) 0x7feb352du32))
        (let h2 (mul (xor h1 (shr h1 15u32)) 0x846ca68bu32))
        (let r (and (xor h2 (shr h2 16u32)) 0xffffu32))
        (let bit (shl 1u32 l))
        (set s (or s (select (ge r 49807u32) bit 0u32)))
        (set d (or d (select (lor (land (ge r 37355u32) (lt r 49807u32)) (ge r 62259u32))
          bit 0u32))))]]

M.KEYS = [[
(program rmat_keys (workgroup 256)
  (buffer keys u64 write)
  (param seed u32)
  (param scale u32)
  (param edges u32)
  (let e (gid x))
  (if (lt e edges)
    (then
]] .. GEN_BODY .. [[

      (let sh (cast u64 scale))
      (store keys (mul e 2u32) (or (shl (cast u64 s) sh) (cast u64 d)))
      (store keys (add (mul e 2u32) 1u32) (or (shl (cast u64 d) sh) (cast u64 s))))))]]

-- The weight of the unordered pair {lo, hi}: 1..64.
local WEIGHT = [[
      (let w0 (add (mul lo 0x9e3779b1u32) (add (mul hi 0x85ebca77u32) 0x2545f491u32)))
      (let w1 (mul (xor w0 (shr w0 16u32)) 0x7feb352du32))
      (let w2 (mul (xor w1 (shr w1 15u32)) 0x846ca68bu32))
      (let wv (add 1u32 (and (xor w2 (shr w2 16u32)) 63u32)))]]

M.CSR = [[
(program rmat_csr (workgroup 256)
  (buffer keys u64 read)
  (buffer rowptr u32 write)
  (buffer col u32 write)
  (buffer wt u32 write)
  (param scale u32)
  (param weights u32)
  (let i (gid x))
  (let n (len keys))
  (if (lt i n)
    (then
      (let sh (cast u64 scale))
      (let k (load keys i))
      (let r (cast u32 (shr k sh)))
      (let c (cast u32 (and k (sub (shl 1u64 sh) 1u64))))
      (store col i c)
      (if (ne weights 0u32)
        (then
          (let lo (min r c))
          (let hi (max r c))
]] .. WEIGHT .. [[

          (store wt i wv)))
      (let first (select (eq i 0u32) 0u32
        (add (cast u32 (shr (load keys (sub i 1u32)) sh)) 1u32)))
      (for x first (add r 1u32) 1u32 (store rowptr x i))
      (if (eq i (sub n 1u32))
        (then (for y (add r 1u32) (len rowptr) 1u32 (store rowptr y n)))))))]]

local kernels = setmetatable({}, { __mode = "k" })

local function kernel(be, text)
  kernels[be] = kernels[be] or {}
  local k = kernels[be][text]
  if not k then
    k = be:compile(vyre.parse(text))
    kernels[be][text] = k
  end
  return k
end
M.kernel = kernel

--- build(be, {scale, edge_factor, seed, weights}) -> g (see the header).
function M.build(be, o)
  local scale, ef = o.scale or 10, o.edge_factor or 16
  local nv, ne = 1 << scale, ef << scale
  assert(2 * ne < (1 << 32), "graph.build: 2 x edges must fit a u32")
  local keys = be:buffer("u64", 2 * ne)
  local rowptr, col = be:buffer("u32", nv + 1), be:buffer("u32", 2 * ne)
  local wt = be:buffer("u32", o.weights and 2 * ne or 1)
  be:sequence({ { kernel(be, M.KEYS), { keys = keys, seed = o.seed or 1, scale = scale,
    edges = ne }, { n = ne } } })
  require("vyre.lib").sort(be, keys, { bits = { 0, 2 * scale } })
  be:sequence({ { kernel(be, M.CSR), { keys = keys, rowptr = rowptr, col = col, wt = wt,
    scale = scale, weights = o.weights and 1 or 0 }, { n = 2 * ne } } })
  keys:free()
  return { rowptr = rowptr, col = col, wt = o.weights and wt or nil, nodes = nv, edges = ne,
    entries = 2 * ne, scale = scale, edge_factor = ef, seed = o.seed or 1 }
end

-- A cache of one graph per backend and shape: the layouts and workloads of one run share
-- it (a scale-22 graph takes a GiB and a sort to build).
local cache = setmetatable({}, { __mode = "k" })

--- shared(be, o) -> build(be, o), reused while the same shape is asked for.
function M.shared(be, o)
  local key = ("%d/%d/%d/%s"):format(o.scale or 10, o.edge_factor or 16, o.seed or 1,
    tostring(o.weights and true or false))
  local c = cache[be]
  if c and c.key == key and not c.g.col.freed then return c.g end
  if c then -- the previous shape is dropped first (its buffers may be large; an instance
    -- still using it keeps it alive)
    cache[be] = nil
    collectgarbage()
  end
  local g = M.build(be, o)
  cache[be] = { key = key, g = g }
  return g
end

--- Drops this backend's cached graph and compiled kernels (freed by the next collection).
function M.release(be)
  cache[be], kernels[be] = nil, nil
end

local MASK = 0xffffffff

local function mix(h0)
  local h1 = ((h0 ~ (h0 >> 16)) * 0x7feb352d) & MASK
  local h2 = ((h1 ~ (h1 >> 15)) * 0x846ca68b) & MASK
  return h2 ~ (h2 >> 16)
end

--- The edges of the R-MAT graph in plain Lua: src, dst (0-based ids, 1-based tables).
function M.lua_edges(scale, ef, seed)
  local ne = ef << scale
  local src, dst = {}, {}
  for e = 0, ne - 1 do
    local s, d = 0, 0
    for l = 0, scale - 1 do
      local h0 = (e * 0x9e3779b1 + l * 0x85ebca77 + seed) & MASK
      local r = mix(h0) & 0xffff
      local bit = 1 << l
      if r >= 49807 then s = s | bit end
      if (r >= 37355 and r < 49807) or r >= 62259 then d = d | bit end
    end
    src[e + 1], dst[e + 1] = s, d
  end
  return src, dst
end

--- The weight of the unordered pair {a, b}, as rmat_csr computes it.
function M.lua_weight(a, b)
  local lo, hi = math.min(a, b), math.max(a, b)
  return 1 + (mix((lo * 0x9e3779b1 + hi * 0x85ebca77 + 0x2545f491) & MASK) & 63)
end

--- lua_csr(scale, ef, seed) -> {rowptr, col, wt, nodes} (1-based tables of 0-based values).
function M.lua_csr(scale, ef, seed)
  local src, dst = M.lua_edges(scale, ef, seed)
  local nv = 1 << scale
  local keys = {}
  for e = 1, #src do
    keys[#keys + 1] = src[e] * nv + dst[e]
    keys[#keys + 1] = dst[e] * nv + src[e]
  end
  table.sort(keys)
  local rowptr, col, wt = {}, {}, {}
  local r = 0
  rowptr[1] = 0
  for i, k in ipairs(keys) do
    local row, c = k // nv, k % nv
    while r < row do
      r = r + 1
      rowptr[r + 1] = i - 1
    end
    col[i], wt[i] = c, M.lua_weight(row, c)
  end
  while r < nv do
    r = r + 1
    rowptr[r + 1] = #keys
  end
  return { rowptr = rowptr, col = col, wt = wt, nodes = nv }
end

--- degree_stats(rowptr) -> {items, edges, max_degree, heavy_edges, heavy_items, subgroup}:
--- vyre.policy.degree_stats (a table, Array or Buffer of row starts; a Buffer is
--- downloaded); heavy = degree >= 32 (a subgroup).
function M.degree_stats(rowptr, subgroup)
  return vyre.policy.degree_stats(rowptr, subgroup)
end

return M
