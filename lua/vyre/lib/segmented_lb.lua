-- vyre.lib.segmented_lb — load-balanced segmented reduce (docs/LIB.md, "segmented").
--
-- The host does not know the segments' lengths (the offsets stay on the device), so
-- the balance is decided on the device, in two launches:
--   1. short: one invocation per segment. A segment of at most LONG elements is folded
--      left to right by its invocation, as before. A longer one is registered instead:
--      it takes ceil(len / CHUNK) consecutive chunk slots from a counter (an atomic)
--      and an entry in a list (segment, first slot, chunks);
--   2. long: one workgroup per chunk slot the host can bound (every long segment has
--      more than LONG elements, so the slots are at most ceil(nv / CHUNK) + nv / (LONG +
--      1) + 1 when segments do not overlap). A workgroup finds the list entry that owns
--      its slot, reduces its chunk as lib.reduce reduces a chunk (invocation l folds
--      elements l, l + 256, ... from the identity, then the fixed tree over the 256
--      values), publishes the partial as tagged look-back words and counts itself in on
--      the entry; the workgroup that arrives last folds the entry's partials in the same
--      fixed order and writes the segment's result.
-- A long segment's result is therefore the chunk-reduce of its chunk partials, each the
-- chunk-reduce of CHUNK elements: an order that depends only on the segment's length,
-- identical on every run, device and backend. The last workgroup of launch 2 resets
-- the counters and advances the epoch of the partials' tags, so nothing is zeroed
-- between calls.
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local GEO = require("vyre.lib.geometry")
local reduce = require("vyre.lib.reduce")
local F = require("vyre.lib.fragments")

local M = {}

-- enabled false: segmented_reduce takes the one-invocation-per-segment kernel alone.
M.config = { enabled = true }

M.LONG = GEO.SEG_LONG   -- longer segments are split into chunks
M.CHUNK = GEO.SEG_CHUNK -- elements per chunk of a long segment

local WIDE = F.WIDE
local EPOCHS = GEO.EPOCHS
local launches = setmetatable({}, { __mode = "k" }) -- meta -> launches of kernel 2 so far

local SHORT = T.new("segshort", [[
(program lib_segred_short_$T_$OP (workgroup $WG)
  (buffer values $T read)
  (buffer offsets u32 read)
  (buffer out $T write)
  (buffer meta u32 read_write)
  (buffer lng u32 write)
  (buffer lbase u32 write)
  (buffer lnch u32 write)
  (param nseg u32)
  (param cap u32)
  (let s (gid x))
  (if (lt s nseg)
    (then
$SEGMENT
$REGISTER
      (if (lnot long)
        (then
          (let acc $EMPTY)
          (if (lt b e)
            (then
              (set acc (load values b))
              $FOLD))
          (store out s acc))))))
]])

local bits, decode = F.bits, F.decode

-- rpartial: the partial of slot index $IDX, read with a plain load and then, while its
-- tag is not this launch's (ep), with atomics (the writer published it with an atomic
-- exchange; any tagged value is the final one). Binds $V. One template per word count.
local function read_partial(t, idx, v)
  local nw = WIDE[t] and 2 or 1
  local L = { ("(let @b (mul $IDX %du32))"):format(nw) }
  for k = 0, nw - 1 do L[#L + 1] = ("(let @w%d (load pw (add @b %du32)))"):format(k, k) end
  local ok = "(eq (cast u32 (shr @w0 32u64)) ep)"
  if nw == 2 then ok = ("(land %s (eq (cast u32 (shr @w1 32u64)) ep))"):format(ok) end
  L[#L + 1] = "(for @it 0u32 4294967295u32 1u32"
  L[#L + 1] = ("  (if %s (then (break)))"):format(ok)
  for k = 0, nw - 1 do
    L[#L + 1] = ("  (let @a%d (atomic or pw (add @b %du32) 0u64))"):format(k, k)
    L[#L + 1] = ("  (set @w%d @a%d)"):format(k, k)
  end
  L[#L + 1] = "  )"
  L[#L + 1] = ("(let $V %s)"):format(decode(t, "@w0", "@w1"))
  return T.new("rpartial", table.concat(L, "\n"))({ IDX = idx, V = v })
end

-- The word of the partial (tag ep); 64-bit types publish two words.
local PUBLISH = T.new("publish", "(atomic exchange pw slot (or (shl (cast u64 ep) 32u64) "
  .. "(cast u64 $BITS)))")
local PUBLISH2 = T.new("publishwide", [[
(let @pb $BITS)
(atomic exchange pw (mul slot 2u32)
  (or (shl (cast u64 ep) 32u64) (cast u64 (cast u32 @pb))))
(atomic exchange pw (add (mul slot 2u32) 1u32)
  (or (shl (cast u64 ep) 32u64) (cast u64 (cast u32 (shr @pb 32u64)))))]])

local function publish_partial(t, v)
  if not WIDE[t] then return PUBLISH({ BITS = bits(t, v) }) end
  return PUBLISH2({ BITS = bits(t, v) })
end

-- The second fold: partials l, l + WG, ... of the entry, in that order, from the identity.
local FOLD2 = T.new("partials", [[
      (for @fq l nch ${WG}u32
$READ
        (set f_acc ($OP f_acc @rv)))]])

local LONG = T.new("seglong", [[
(program lib_segred_long_$T_$OP (workgroup $WG)
  (buffer values $T read)
  (buffer offsets u32 read)
  (buffer out $T write)
  (buffer meta u32 read_write)
  (buffer lng u32 read)
  (buffer lbase u32 read)
  (buffer lnch u32 read)
  (buffer cnt u32 read_write)
  (buffer pw u64 read_write)
  (shared red $T $WG)
  (shared own u32 1)
  (shared sep u32 1)
  (shared sl u32 1)
  (let l (lid x))
  (let g (wgid x))
  (if (eq l 0u32)
    (then
      (let e0 (atomic or meta 2u32 0u32))
      (store sep 0u32 (add e0 1u32))
      (store own 0u32 0u32)
      (store sl 0u32 0u32)))
  (barrier)
  (let m (load meta 0u32))
  (for q l m ${WG}u32
    (let qb (load lbase q))
    (if (land (ge g qb) (lt (sub g qb) (load lnch q))) (then (store own 0u32 (add q 1u32)))))
  (barrier)
  (let ow (load own 0u32))
  (let ep (load sep 0u32))
  (let pos (sub ow 1u32))
  (let sg (load lng pos))
$SEGMENT
  (let nch (load lnch pos))
  (let base (load lbase pos))
  (let slot g)
  (let cb (add sb (mul (sub g base) ${SEG_CHUNK}u32)))
  (let ce (select (lt (sub se cb) ${SEG_CHUNK}u32) se (add cb ${SEG_CHUNK}u32)))
  (let c_acc $ID)
  (if (ne ow 0u32)
    (then
$FOLD1))
  (store red l c_acc)
  (barrier)
$TREE
  (if (land (eq l 0u32) (ne ow 0u32))
    (then
      (let part (load red 0u32))
$PUBLISH
      (let old (atomic add cnt pos 1u32))
      (store sl 0u32 (select (eq old (sub nch 1u32)) 1u32 0u32))))
  (barrier)
  (let last (load sl 0u32))
  (let f_acc $ID)
  (if (ne last 0u32)
    (then
$FOLD2))
  (store red l f_acc)
  (barrier)
$TREE
  (if (land (eq l 0u32) (ne last 0u32))
    (then
      (store out sg (load red 0u32))
      (atomic exchange cnt pos 0u32)))
  (if (eq l 0u32)
    (then
      (let dn (atomic add meta 3u32 1u32))
      (if (eq dn (sub (ngroups x) 1u32))
        (then
          (atomic exchange meta 0u32 0u32)
          (atomic exchange meta 1u32 0u32)
          (atomic exchange meta 3u32 0u32)
          (atomic exchange meta 2u32 (select (ge ep ${EPOCHS}u32) 0u32 ep)))))))
]])

local function long_text(t, op)
  local id = U.identity(op, t)
  return LONG:render({
    T = t, OP = op, ID = id, TREE = reduce.tree(op),
    SEGMENT = F.SEGMENT({ S = "sg", B = "sb", E = "se" }),
    FOLD1 = reduce.fold({ first = "(add cb l)", stop = "ce", src = "values", acc = "c_acc",
      op = op, id = id, before = "" }),
    FOLD2 = FOLD2({ OP = op, READ = read_partial(t, "(add base @fq)", "@rv") }),
    PUBLISH = publish_partial(t, "part"),
  })
end

local function short_text(t, op)
  return SHORT:render({ T = t, OP = op, EMPTY = U.empty_value(op, t),
    SEGMENT = F.SEGMENT({ S = "s", B = "b", E = "e" }),
    REGISTER = F.REGISTER({ LONG = M.LONG, CHUNK = M.CHUNK, CHUNK_M1 = M.CHUNK - 1 }),
    FOLD = F.SEQFOLD({ B = "b", E = "e", ACC = "acc", OP = op }) })
end

M.short_text, M.long_text = short_text, long_text

--- Appends the launches of a segmented reduce of nseg >= 1 segments of values into out.
function M.reduce_steps(be, values, offsets, out, op, nseg, steps)
  local t, nv = values.type, values.count
  local cap = U.cdiv(nv, M.CHUNK) + nv // (M.LONG + 1) + 1
  local lists = math.max(1, math.min(nseg, nv // (M.LONG + 1)))
  local meta = U.scratch(be, "segred_meta", "u32", 4)
  local lng = U.scratch(be, "segred_lng", "u32", lists)
  local lbase = U.scratch(be, "segred_lbase", "u32", lists)
  local lnch = U.scratch(be, "segred_lnch", "u32", lists)
  local ks = U.kernel(be, ("segred_short:%s:%s:%d:%d"):format(t, op, M.LONG, M.CHUNK),
    function() return short_text(t, op) end)
  if nv <= M.LONG then cap = 0 end -- no segment can be long: launch 1 alone
  steps[#steps + 1] = { ks, { values = values, offsets = offsets, out = out, meta = meta,
    lng = lng, lbase = lbase, lnch = lnch, nseg = nseg, cap = cap },
    { grid = { U.cdiv(nseg, U.WG) } } }
  if cap == 0 then return end
  local cnt = U.scratch(be, "segred_cnt", "u32", lists)
  local pw = U.scratch(be, "segred_pw", "u64", cap * (WIDE[t] and 2 or 1))
  -- the device's epoch wraps after 2^31 - 1 launches, when an old partial word could read
  -- as this launch's: every EPOCHS - 1 plain calls the words and counters are zeroed first
  local k = (launches[meta] or 0) + 1
  if k >= EPOCHS - 1 then
    pw:zero()
    meta:zero()
    k = 1
  end
  launches[meta] = k
  local kl = U.kernel(be, ("segred_long:%s:%s:%d"):format(t, op, M.CHUNK),
    function() return long_text(t, op) end)
  steps[#steps + 1] = { kl, { values = values, offsets = offsets, out = out, meta = meta,
    lng = lng, lbase = lbase, lnch = lnch, cnt = cnt, pw = pw }, { grid = { cap } } }
end

return M
