-- vyre.lib.fragments — template fragments that several vyre.lib kernels share
-- (vyre.lib.template; docs/LIB.md, "How a lib kernel is written"), so that each piece of
-- kernel text is written once. The prologues bind the names their comments list in the
-- kernel's own scope (every kernel that uses one reads those names); the rest take the
-- names they bind or read as parameters.
local T = require("vyre.lib.template")

local F = {}

--- chunk: workgroup g's contiguous chunk [cbeg, cend) of a pass over n elements in
--- chunks of `chunk` (params n and chunk); binds l, g, cbeg, cend.
F.CHUNK = T.new("chunkhead", [[
  (let l (lid x))
  (let g (wgid x))
  (let cbeg (min (mul g chunk) n))
  (let cend (select (lt chunk (sub n cbeg)) (add cbeg chunk) n))]])

--- tiles: binds ntiles, the tiles of the chunk [cbeg, cend) (under a device count,
--- vyre.lib.util's with_count binds a uniform bound instead).
F.TILES = T.new("tiles", "  (let ntiles (div (add (sub cend cbeg) ${TILE_M1}u32) ${TILE}u32))")

--- segment: segment $S of CSR offsets over buffer values, clipped to it; binds nv (the
--- values' length), $B and $E (its first and end).
F.SEGMENT = T.new("segment", [[
      (let nv (len values))
      (let $B (load offsets $S))
      (let $E (min (load offsets (add $S 1u32)) nv))]])

--- seqfold: $ACC = $ACC op values[i] for i in ($B, $E), left to right (the caller set
--- $ACC to values[$B]).
F.SEQFOLD = T.new("seqfold",
  "(for @i (add $B 1u32) $E 1u32 (set $ACC ($OP $ACC (load values @i))))")

--- register: a segmented kernel's invocation for segment s = [b, e) (caller's names)
--- registers it as long when it has more than $LONG elements: ceil(len / $CHUNK) chunk
--- slots from counter meta[1] (all or none, within cap) and an entry of the lists lng,
--- lbase, lnch at counter meta[0]. Binds long (true when registered) in the caller's
--- scope; CHUNK_M1 is $CHUNK - 1.
F.REGISTER = T.new("register", [[
      (let long false)
      (if (land (lt b e) (gt (sub e b) ${LONG}u32))
        (then
          (let @nch (div (add (sub e b) ${CHUNK_M1}u32) ${CHUNK}u32))
          (let @base (atomic add meta 1u32 @nch))
          (if (land (lt @base cap) (le @nch (sub cap @base)))
            (then
              (let @pos (atomic add meta 0u32 1u32))
              (store lng @pos s)
              (store lbase @pos @base)
              (store lnch @pos @nch)
              (set long true)))))]])

-- The step of a sequential (segmented) scan for element i of value xi, with the running
-- value acc (names of the caller's loop); dst is the output buffer. Inclusive: fold, then
-- store. Exclusive: store $V, then fold.
local SCANSTEP_INCL = T.new("scanincl", "(set acc ($OP acc xi))\n(store dst i acc)")
local SCANSTEP_EXCL = T.new("scanexcl", "(store dst i $V)\n(set acc ($OP acc xi))")

--- scanstep: the step above for op; v nil: inclusive, else exclusive storing v (acc, or
--- an expression choosing the exclusive init at the segment's head).
function F.scanstep(op, v)
  if v == nil then return SCANSTEP_INCL({ OP = op }) end
  return SCANSTEP_EXCL({ OP = op, V = v })
end

-- Look-back words ----------------------------------------------------------------------
-- A published value travels as one u64 word per 32 bits, (tag << 32) | 32 bits of the
-- value (the one-pass scans' look-back, the long segments' partials). These build the
-- expressions of that encoding as text for a template (their arguments may be a
-- template's @locals, so they return text, not instances).

local WIDE = { u64 = true, i64 = true, f64 = true }
F.WIDE = WIDE

--- The bits of value text v of type t as a u64 (64-bit types) or u32 expression.
function F.bits(t, v)
  if t == "u32" or t == "u64" then return v end
  return ("(bitcast %s %s)"):format(WIDE[t] and "u64" or "u32", v)
end

--- The value of type t held by the low halves of words lo (and hi for 64-bit types).
function F.decode(t, lo, hi)
  if not WIDE[t] then
    local b = ("(cast u32 %s)"):format(lo)
    return t == "u32" and b or ("(bitcast %s %s)"):format(t, b)
  end
  local b = ("(or (shl %s 32u64) (and %s 4294967295u64))"):format(hi, lo)
  return t == "u64" and b or ("(bitcast %s %s)"):format(t, b)
end

--- A look-back word: (tag << 32) | half, both u32 expressions.
function F.word(tag, half)
  return ("(or (shl (cast u64 %s) 32u64) (cast u64 %s))"):format(tag, half)
end

--- The tag (high half) of word w.
function F.tag_of(w) return ("(cast u32 (shr %s 32u64))"):format(w) end

return F
