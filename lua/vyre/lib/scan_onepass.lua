-- vyre.lib.scan_onepass — single-pass scans and compaction by decoupled look-back, with a
-- float association that does not depend on timing (docs/LIB.md, "scan").
--
-- One launch, one workgroup per tile of 256 * ITEMS elements. A workgroup takes the next
-- tile number from an atomic counter (so every tile it waits on belongs to a workgroup
-- that already runs: no assumption on the order the GPU runs workgroups in), scans its
-- tile in shared memory and registers, publishes the tile's total (its aggregate), looks
-- back at the words of earlier tiles for its carry, publishes its inclusive prefix and
-- writes its outputs: the input is read once and the output written once (2n traffic).
--
-- The carry into tile t is the left fold C_t = ((init op a_0) op a_1) ... op a_{t-1} of
-- the tile aggregates a_k. The look-back finds the nearest tile k whose inclusive prefix
-- I_k = C_{k+1} is published and folds the aggregates of tiles k+1 .. t-1 onto it, in
-- index order: by induction every published I_k is that same left fold, so the carry has
-- the same bits wherever the walk stopped, on every run, device and backend.
--
-- The look-back words live in a u64 buffer, (tag << 32) | 32 bits of a value: per tile an
-- aggregate word A and an inclusive word I (32-bit types), or A_lo A_hi I_lo I_hi (64-bit
-- types). A word's tag is 2 * epoch (A) or 2 * epoch + 1 (I). Every launch takes a new
-- epoch from the counter buffer, and its last workgroup resets the tile counter and
-- advances the epoch for the next launch, so nothing is zeroed between calls, and a
-- recorded graph that replays the launch stays correct. A word whose tag is not this
-- launch's reads as unpublished.
local U = require("vyre.lib.util")
local G = require("vyre.lib.geometry")
local text = require("vyre.lib.onepass_text")

local M = {}

-- Tuning and testing knobs (internal; docs/LIB.md):
--   enabled  false: scan and compact take the reduce-then-scan path (bench comparison);
--   items    elements per invocation of both scan and compaction (nil: the defaults
--            below: a scan takes 24 for 8-, 16- and 32-bit types and compaction 16, whose
--            tile must also hold its kept elements in shared memory; 64-bit types take 8);
--   window   how many earlier tiles one look-back round reads at once (32..256, a
--            multiple of 32): one word group per invocation;
--   small    at most this many tiles are scanned by one workgroup, with no look-back;
--   lag      testing only: the look-back ignores the inclusive words of the `lag` tiles
--            just before its own, as if they were still running (forces longer walks and
--            the serial walk below the window on the in-order reference backend).
M.config = { enabled = true, items = nil, window = 256, small = 4, lag = 0 }

-- Elements per invocation by default, measured on an H100 (bench/scan_knobs.lua,
-- bench/results/2026-11-26-scan-knobs.md): a scan of 32-bit values runs 1.31 ms at 16,
-- 1.07-1.12 ms at 24 and 1.37-1.44 ms at 32 (256 Mi elements); compaction at 24 needs
-- more shared memory than a workgroup may use, so it keeps 16.
local SCAN_ITEMS, COMPACT_ITEMS, WIDE_ITEMS = 24, 16, 8

--- Elements per invocation of a scan of element type t.
function M.items(t)
  return M.config.items or (text.WIDE[t] and WIDE_ITEMS or SCAN_ITEMS)
end

--- Elements per invocation of a compaction of element type t.
function M.compact_items(t)
  return M.config.items or (text.WIDE[t] and WIDE_ITEMS or COMPACT_ITEMS)
end

--- Elements per tile of a scan of element type t.
function M.tile(t)
  return U.WG * M.items(t)
end

--- Elements per tile of a compaction of element type t.
function M.compact_tile(t)
  return U.WG * M.compact_items(t)
end

--- The value an exclusive scan starts from (as lib.scan: +0.0 for float add).
M.scan_init = text.scan_init

--- The text of a one-pass scan kernel (look) or of the single-workgroup scan.
local function scan_text(t, op, exclusive, look)
  return text.scan_text(t, op, exclusive, look, M.items(t), M.config)
end

M.scan_text = scan_text

-- Scratch: the look-back words (nwords per tile) and the counters {tile, finished,
-- epoch}. Fresh buffers are zeroed: epoch 1 first, no word published. The words come in
-- power-of-two size classes, one scratch role each, because a steps list may hold several
-- scans (vyre.egraph builds such lists): growing one role would free a buffer that an
-- earlier step of the same list still uses.
local launches = setmetatable({}, { __mode = "k" }) -- ctr -> {n = launches, caps used}

local function state(be, t, ntiles)
  local need = ntiles * text.nwords(t)
  local cap = 1024
  while cap < need do cap = cap * 2 end
  local ctr = U.scratch(be, "scan1_ctr", "u32", 4)
  local rec = launches[ctr] or { n = 0, caps = {} }
  launches[ctr] = rec
  -- The device advances the epoch once per launch and wraps after 2^31 - 1 of them; a
  -- word left from a launch that long ago would then read as published, so every
  -- EPOCHS - 1 launches (plain calls; graph replays are not counted) all words and the
  -- counters are zeroed first.
  rec.n = rec.n + 1
  if rec.n >= G.EPOCHS - 1 then
    for c in pairs(rec.caps) do U.scratch(be, "scan1_state_" .. c, "u64", c):zero() end
    ctr:zero()
    rec.n = 1
  end
  rec.caps[cap] = true
  return U.scratch(be, "scan1_state_" .. cap, "u64", cap), ctr
end

-- The cache keys of scan_kernel, by t, op and the two flags, with the configuration they
-- were made for: an e-graph iteration asks for ~30 scans, and formatting the key each time
-- was a visible share of its host time. A changed M.config makes a new key.
local KEYS = {}
local function scan_key(t, op, exclusive, look)
  local cfg, items = M.config, M.items(t)
  local bt = KEYS[t]
  if not bt then
    bt = {}
    KEYS[t] = bt
  end
  local bo = bt[op]
  if not bo then
    bo = {}
    bt[op] = bo
  end
  -- nil, false and true each their own slot (the key spells them with tostring)
  local slot = (exclusive == nil and 0 or exclusive and 1 or 2) * 3
    + (look == nil and 0 or look and 1 or 2) + 1
  local c = bo[slot]
  if not c or c.items ~= items or c.window ~= cfg.window or c.lag ~= cfg.lag then
    c = { items = items, window = cfg.window, lag = cfg.lag,
      key = ("scan1:%s:%s:%s:%s:%d:%d:%d"):format(t, op, tostring(exclusive), tostring(look),
        items, cfg.window, cfg.lag) }
    bo[slot] = c
  end
  return c.key
end

--- The kernel of a one-pass scan (look = true) or of the single-workgroup scan.
function M.scan_kernel(be, t, op, exclusive, look)
  return U.kernel(be, scan_key(t, op, exclusive, look), function()
    return scan_text(t, op, exclusive, look)
  end)
end

--- Appends the launch(es) that scan src[0..n) into dst[0..n) (n >= 1; dst may be src).
function M.scan_steps(be, t, op, exclusive, src, dst, n, steps)
  local ntiles = U.cdiv(n, M.tile(t))
  if ntiles <= M.config.small then
    steps[#steps + 1] = { M.scan_kernel(be, t, op, exclusive, false),
      { src = src, dst = dst, n = n }, U.grid(1) }
    return
  end
  local st, ctr = state(be, t, ntiles)
  steps[#steps + 1] = { M.scan_kernel(be, t, op, exclusive, true),
    { src = src, dst = dst, st = st, ctr = ctr, n = n }, U.grid(ntiles) }
end

-- Compaction --------------------------------------------------------------------------

local function compact_text(t, flags_type, pred, look)
  return text.compact_text(t, flags_type, pred, look, M.compact_items(t), M.config)
end
M.compact_text = compact_text

--- The kernels of a compaction of element type t by a flags buffer of type flags_type or
--- by predicate text over x (nil flags_type): (one-pass, single-workgroup), compiled
--- through U.user_kernel so that a predicate that does not compile raises for name.
function M.compact_kernels(name, be, t, flags_type, pred)
  local cfg = M.config
  local key = ("compact1:%s:%s:%d:%d:%d"):format(t, pred and ("pred:" .. pred)
    or ("flags:" .. flags_type), M.compact_items(t), cfg.window, cfg.lag)
  local fix = "write a bool expression over the element x, e.g. \"(gt x 0i32)\" for an i32 "
    .. "buffer (literals carry their type)"
  return U.user_kernel(name, be, key .. ":l", compact_text(t, flags_type, pred, true), fix),
    U.user_kernel(name, be, key .. ":s", compact_text(t, flags_type, pred, false), fix)
end

--- Appends the launch that compacts src[0..n) (n >= 1) into dst by flags (a Buffer) or
--- pred, writing the count to total[0].
function M.compact_steps(kernels, be, t, src, flags, dst, total, n, steps)
  local ntiles = U.cdiv(n, M.compact_tile(t))
  local args = { src = src, flags = flags, dst = dst, total = total, n = n }
  if ntiles <= M.config.small then
    steps[#steps + 1] = { kernels[2], args, { grid = { 1 } } }
    return
  end
  args.st, args.ctr = state(be, "u32", ntiles)
  steps[#steps + 1] = { kernels[1], args, { grid = { ntiles } } }
end

--- lib.compact after its argument checks: compacts src by flags (a Buffer) or pred (text)
--- into dst; returns the count and the timing.
function M.compact(name, timed, be, src, flags, pred, dst)
  local t, n = src.type, src.count
  local k1, k2 = M.compact_kernels(name, be, t, flags and flags.type, pred)
  if n == 0 then return 0, U.no_time() end
  local total = U.scratch(be, "compact_total", "u32", 1)
  local steps = {}
  M.compact_steps({ k1, k2 }, be, t, src, flags, dst, total, n, steps)
  local out, timing = U.run(name, be, steps, { { total, 1, 1 } }, timed)
  return out[1][1], timing
end

return M
