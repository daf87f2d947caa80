-- bench/megakernel/dataflow.lua — reaching definitions over a generated control-flow
-- graph: B blocks, facts as bit vectors of `words` u32 words (32 x words definitions).
-- The CFG (from the seed): a fall-through edge b -> b+1, a forward jump (25%) up to 256
-- blocks ahead, a back edge (5%) up to 64 blocks back (loops). Each definition belongs
-- to a variable (4 definitions per variable) and a block; GEN[b] = b's definitions,
-- KILL[b] = the other definitions of the variables b defines (KEEP = not KILL).
-- Transfer: OUT[b] = GEN[b] | (OR over preds p of OUT[p]) & KEEP[b], iterated Jacobi
-- style over every (block, word) pair, two buffers in turn (each round is two sweeps),
-- so the rounds do not depend on thread order. Checked against a plain-Lua worklist.
local common = require("bench.megakernel.common")

local M = { name = "dataflow", title = "reaching definitions, generated CFG" }

local STEP = [[
(program reaching_defs (workgroup 256)
  (buffer pred_off u32 read)
  (buffer preds u32 read)
  (buffer gen u32 read)
  (buffer keep u32 read)
  (buffer src u32 read)
  (buffer dst u32 write)
  (buffer flag u32 read_write)
  (param words u32)
  (let i (gid x))
  (if (lt i (len dst))
    (then
      (let b (div i words))
      (let w (rem i words))
      (let acc 0u32)
      (for k (load pred_off b) (load pred_off (add b 1u32)) 1u32
        (set acc (or acc (load src (add (mul (load preds k) words) w)))))
      (let nv (or (load gen i) (and acc (load keep i))))
      (if (ne nv (load src i)) (then (atomic or flag 0u32 1u32)))
      (store dst i nv))))]]

M.STEP = STEP

--- The seeded CFG and facts: {blocks, words, succ = {list per block}, pred_off, preds,
--- gen, keep} (0-based block ids in the lists; pred_off/preds are the CSR of preds).
function M.generate(blocks, words, seed)
  local rng = common.rng(seed)
  local succ = {}
  for b = 0, blocks - 1 do
    local s = {}
    if b + 1 < blocks then s[#s + 1] = b + 1 end
    if rng:float() < 0.25 then
      local t = b + 1 + rng:int(256)
      if t < blocks then s[#s + 1] = t end
    end
    if rng:float() < 0.05 then
      local t = b - rng:int(64)
      if t >= 0 then s[#s + 1] = t end
    end
    succ[b] = s
  end
  local npred = {}
  for b = 0, blocks - 1 do npred[b] = 0 end
  for b = 0, blocks - 1 do for _, t in ipairs(succ[b]) do npred[t] = npred[t] + 1 end end
  local pred_off = { 0 }
  for b = 0, blocks - 1 do pred_off[b + 2] = pred_off[b + 1] + npred[b] end
  local fill, preds = {}, {}
  for b = 0, blocks - 1 do fill[b] = pred_off[b + 1] end
  for b = 0, blocks - 1 do
    for _, t in ipairs(succ[b]) do
      preds[fill[t] + 1] = b
      fill[t] = fill[t] + 1
    end
  end
  -- definitions: d in 0 .. 32 x words - 1, variable d // 4, in a random block
  local ndefs = 32 * words
  local n = blocks * words
  local gen, keep = {}, {}
  for i = 1, n do gen[i], keep[i] = 0, 0xffffffff end
  local def_block, vars_of = {}, {}
  for d = 0, ndefs - 1 do
    local b = rng:int(blocks) - 1
    -- one definition per variable per block: a second one moves to the next block
    while vars_of[b] and vars_of[b][d // 4] do b = (b + 1) % blocks end
    vars_of[b] = vars_of[b] or {}
    vars_of[b][d // 4] = true
    def_block[d] = b
    local i = b * words + d // 32 + 1
    gen[i] = gen[i] | (1 << (d % 32))
  end
  for b, vars in pairs(vars_of) do
    for v in pairs(vars) do
      for d = v * 4, v * 4 + 3 do
        if def_block[d] ~= b then
          local i = b * words + d // 32 + 1
          keep[i] = keep[i] & ~(1 << (d % 32)) & 0xffffffff
        end
      end
    end
  end
  if #preds == 0 then preds[1] = 0 end -- a buffer needs an element; pred_off says none
  return { blocks = blocks, words = words, succ = succ, pred_off = pred_off, preds = preds,
    gen = gen, keep = keep, edges = pred_off[blocks + 1] }
end

--- Plain-Lua reaching definitions (worklist to the fixpoint): OUT as a flat table.
function M.solve(g)
  local words, out = g.words, {}
  for i = 1, g.blocks * g.words do out[i] = g.gen[i] end
  local work, inwork = {}, {}
  for b = 0, g.blocks - 1 do work[#work + 1], inwork[b] = b, true end
  local head = 1
  while head <= #work do
    local b = work[head]
    head = head + 1
    inwork[b] = false
    local changed = false
    for w = 1, words do
      local acc = 0
      for k = g.pred_off[b + 1] + 1, g.pred_off[b + 2] do
        acc = acc | out[g.preds[k] * words + w]
      end
      local i = b * words + w
      local nv = g.gen[i] | (acc & g.keep[i])
      if nv ~= out[i] then out[i], changed = nv, true end
    end
    if changed then
      for _, t in ipairs(g.succ[b]) do
        if not inwork[t] then work[#work + 1], inwork[t] = t, true end
      end
    end
    if head > 4096 and head > #work // 2 then -- keep the queue short
      table.move(work, head, #work, 1)
      for i = #work - head + 2, #work do work[i] = nil end
      head = 1
    end
  end
  return out
end

--- setup(be, {blocks =, words =, seed =}) -> workload instance (see run.lua).
function M.setup(be, o)
  local vyre = require("vyre")
  local g = M.generate(o.blocks or 100000, o.words or 8, o.seed or 1)
  local n = g.blocks * g.words
  local pred_off, preds = be:buffer("u32", g.pred_off), be:buffer("u32", g.preds)
  local gen, keep = be:buffer("u32", g.gen), be:buffer("u32", g.keep)
  local a, b = be:buffer("u32", n), be:buffer("u32", n)
  local flag = be:buffer("u32", 1)
  local gen_arr = vyre.array("u32", g.gen)
  local k = common.kernel(be, STEP)
  local function step(src, dst)
    return { k, { pred_off = pred_off, preds = preds, gen = gen, keep = keep, src = src,
      dst = dst, flag = flag, words = g.words }, { n = n } }
  end
  local inst = {
    flag = flag, output = a, nodes = g.blocks, edges = g.edges,
    max_rounds = o.max_rounds or 20000,
    -- two sweeps, each reading gen, keep, src and the preds' words, writing dst
    bytes_per_round = 2 * (4 * n * 4 + 4 * g.edges * g.words + 8 * g.blocks),
    steps = { step(a, b), step(b, a) },
  }
  function inst.reset()
    a:upload(gen_arr)
    b:upload(gen_arr)
    flag:zero()
  end
  function inst.check(rounds)
    local want = M.solve(g)
    local got = common.u32s(a)
    for i = 1, n do
      if got[i] ~= want[i] then
        return false, ("block %d word %d: 0x%08x, the worklist says 0x%08x"):format(
          (i - 1) // g.words, (i - 1) % g.words, got[i], want[i])
      end
    end
    if rounds >= inst.max_rounds then
      return false, ("did not converge in %d rounds"):format(rounds)
    end
    return true, ("%d blocks, %d CFG edges, %d definitions"):format(g.blocks, g.edges,
      32 * g.words)
  end
  return inst
end

return M
