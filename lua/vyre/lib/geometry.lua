-- vyre.lib.geometry — the one table of vyre.lib's kernel geometry (docs/LIB.md,
-- "Geometry"): workgroup and tile sizes, unrolling, and the fixed sizes of the
-- primitives. The kernels read these through vyre.lib.template (every template sees
-- them as $NAME, so `${TILE}` is never written by hand) and the Lua drivers size their
-- grids and scratch buffers from the same numbers. Changing WG, ITEMS or TILE changes
-- the order of float operations, hence the bits of float sums and scans; the kernels
-- also unroll some loops for WG = 256 (8 Hillis-Steele steps, an 8-level tree), so
-- these are constants of the library, not tuning knobs.
local G = {
  WG = 256,            -- invocations per workgroup
  WG_LOG2 = 8,         -- log2(WG): the steps of a scan over WG values, the tree's levels
  WARP = 32,           -- lanes per subgroup (warp)
  WARP_LOG2 = 5,       -- log2(WARP): a lane's warp is l >> WARP_LOG2
  WARPS = 8,           -- WG / WARP: subgroups per workgroup
  ITEMS = 8,           -- elements per invocation per tile (reduce-then-scan, compact)
  TILE = 2048,         -- WG * ITEMS: elements per tile
  PAD_SHIFT = 5,       -- a shared tile skips one word per 2^PAD_SHIFT (bank conflicts)
  TILEP = 2112,        -- TILE + TILE / 32: a tile padded against bank conflicts
  MAXG = 1024,         -- most workgroups of a chunked pass (about one wave on an H100)
  UNROLL = 4,          -- loads issued at once by a reduce's fold
  SINGLE_TILES = 8,    -- a scan of at most this many tiles runs in one workgroup
  PARTS_ITEMS = 4,     -- compaction's parts scan: MAXG = WG * PARTS_ITEMS counts
  SHARED_BINS = 4096,  -- histograms of at most this many bins count in shared memory
  SEG_LONG = 4096,     -- segmented reduce: longer segments are split into chunks
  SEG_CHUNK = 4096,    -- elements per chunk of a long segment
  EPOCHS = 0x7fffffff, -- look-back epochs run over 1 .. EPOCHS (tags fit 32 bits)
  RADIX = 256,         -- sort: digits of a pass (8-bit digits; invocation d owns digit d)
  RADIX_BITS = 8,      -- log2(RADIX): bits of a digit
  SHARED_BYTES = 49152, -- shared memory a workgroup may use (sort sizes its tiles to fit)
  -- sort: keys per invocation per tile, by key width and payload (measured on an H100,
  -- docs/LIB.md): 32-bit keys alone, with 32-bit values; 64-bit keys alone, with values
  SORT_K32 = 32, SORT_KV32 = 18, SORT_K64 = 16, SORT_KV64 = 12,
}

-- Derived values, written once here so that templates never compute them by hand.
G.TILE_M1 = G.TILE - 1
G.SEG_CHUNK_M1 = G.SEG_CHUNK - 1
G.PARTS_TILEP = G.WG * G.PARTS_ITEMS + (G.WG * G.PARTS_ITEMS) // 32
G.WG_M1 = G.WG - 1
G.WARP_M1 = G.WARP - 1   -- a lane is l & WARP_M1
G.MAXG_M1 = G.MAXG - 1
G.RADIX_M1 = G.RADIX - 1 -- a digit's mask
G.SORT_WH = G.WARPS * G.RADIX -- sort: a tile's digit counters, one row per warp

assert(G.WG * G.ITEMS == G.TILE and G.TILE + (G.TILE >> G.PAD_SHIFT) == G.TILEP
  and G.WARP * G.WARPS == G.WG and 1 << G.WARP_LOG2 == G.WARP and 1 << G.WG_LOG2 == G.WG
  and G.WG * G.PARTS_ITEMS == G.MAXG and G.RADIX == G.WG and 1 << G.RADIX_BITS == G.RADIX,
  "vyre.lib.geometry: inconsistent geometry")

return G
