-- vyre.planners.compaction — result compaction: of many result slots (each a buffer
-- with a capacity and fewer meaningful bytes), read back only the meaningful bytes, the
-- small ones packed into one compact buffer read in one transfer, the large ones read
-- directly.
--   compaction.plan({slots = {{slot, meaningful_bytes, capacity_bytes}, ...},
--                    record_limit_bytes = N})
--     -> plan {compact = {{slot, compact_offset, bytes}, ...}, direct = {{slot, bytes}},
--              empty = {slot, ...}, full_bytes, compact_bytes, direct_bytes, read_bytes,
--              avoided_bytes, transfers, avoided_transfers, record_limit_bytes}
--   compaction.readback(be, plan, buffers) -> {[slot] = Array, ...}, stats
-- Rule: slots sorted by slot number; empty ones (0 meaningful bytes) skipped; slots of
-- at most record_limit_bytes packed consecutively (offsets in slot order) into the
-- compact buffer, larger ones read back directly. full = sum of capacities (reading
-- every slot whole), avoided = full - compact - direct. Errors: meaningful over
-- capacity, a repeated or invalid slot, a negative size or limit, sums past 2^53.
-- readback runs the plan: one launch per 8 compact slots of a generated gather program
-- (dst[offset + i] = src[i]) into one device buffer, all in one be:sequence that
-- downloads exactly the compact bytes, then one download per direct slot.
-- docs/PLANNERS.md §3.9.
local check = require("vyre.planners.check")

local M = {}

local FNAME = "vyre.planners.compaction.plan"

local function add(a, b, what)
  return check.add(a, b, what, FNAME)
end

function M.plan(input)
  check.table(input, "input", FNAME, "pass {slots = {...}, record_limit_bytes = n}")
  local limit = check.int(input, "record_limit_bytes", 0, FNAME)
  local list = check.table(input.slots, "input.slots", FNAME,
    "slots = {{slot = 0, meaningful_bytes = 12, capacity_bytes = 4096}, ...}")
  local slots, seen = {}, {}
  for i, s in ipairs(list) do
    local label = ("slots[%d]"):format(i)
    check.table(s, label, FNAME, "a slot is {slot =, meaningful_bytes =, capacity_bytes =}")
    local id = check.int(s, "slot", 0, FNAME, nil, label)
    if seen[id] then
      check.fail(FNAME, ("slots[%d] repeats slot %d of slots[%d]"):format(i, id, seen[id]),
        "list every slot once")
    end
    seen[id] = i
    local cap = check.int(s, "capacity_bytes", 0, FNAME, nil, label)
    local m = check.int(s, "meaningful_bytes", 0, FNAME, nil, label)
    if m > cap then
      check.fail(FNAME, ("slot %d has %d meaningful bytes, more than its capacity of %d")
        :format(id, m, cap), "meaningful_bytes is the used part of the slot: at most "
        .. "capacity_bytes")
    end
    slots[#slots + 1] = { slot = id, meaningful_bytes = m, capacity_bytes = cap }
  end
  table.sort(slots, function(a, b) return a.slot < b.slot end)
  local plan = { compact = {}, direct = {}, empty = {}, full_bytes = 0, compact_bytes = 0,
    direct_bytes = 0, record_limit_bytes = limit }
  for _, s in ipairs(slots) do
    plan.full_bytes = add(plan.full_bytes, s.capacity_bytes, "full bytes")
    if s.meaningful_bytes == 0 then
      plan.empty[#plan.empty + 1] = s.slot
    elseif s.meaningful_bytes <= limit then
      plan.compact[#plan.compact + 1] = { slot = s.slot, compact_offset = plan.compact_bytes,
        bytes = s.meaningful_bytes }
      plan.compact_bytes = add(plan.compact_bytes, s.meaningful_bytes, "compact bytes")
    else
      plan.direct[#plan.direct + 1] = { slot = s.slot, bytes = s.meaningful_bytes }
      plan.direct_bytes = add(plan.direct_bytes, s.meaningful_bytes, "direct bytes")
    end
  end
  plan.read_bytes = plan.compact_bytes + plan.direct_bytes
  plan.avoided_bytes = plan.full_bytes - plan.read_bytes
  plan.transfers = (#plan.compact > 0 and 1 or 0) + #plan.direct
  plan.avoided_transfers = #slots - plan.transfers
  return plan
end

-- Runtime -------------------------------------------------------------------------------

local RNAME = "vyre.planners.compaction.readback"
local SIZE = { bool = 4, i32 = 4, u32 = 4, f32 = 4, i64 = 8, u64 = 8, f64 = 8 }
local BATCH = 8 -- compact slots gathered per launch (buffers per generated program)

-- The gather program for k sources of type t: invocation i copies element i of each
-- source j with i < n_j to dst[o_j + i].
local function gather_text(t, k)
  local out = { ("(program gather_slots_%s_%d (workgroup 256)"):format(t, k),
    ("  (buffer dst %s write)"):format(t) }
  for j = 1, k do out[#out + 1] = ("  (buffer s%d %s read)"):format(j, t) end
  for j = 1, k do out[#out + 1] = ("  (param o%d u32) (param n%d u32)"):format(j, j) end
  out[#out + 1] = "  (let i (gid x))"
  for j = 1, k do
    out[#out + 1] = ("  (if (lt i n%d) (then (store dst (add o%d i) (load s%d i))))"):format(j,
      j, j)
  end
  return table.concat(out, "\n") .. ")\n"
end

local function mt_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") or nil
end

local function plan_list(plan, k)
  local l = plan[k]
  if type(l) ~= "table" then
    check.fail(RNAME, ("plan.%s is missing"):format(k),
      "pass the table vyre.planners.compaction.plan returned", 2)
  end
  return l
end

--- readback(be, plan, buffers) -> results, stats. buffers[slot] is the Buffer holding
--- slot `slot` (all of one type; a slot's meaningful bytes are its first bytes, whole
--- elements). results[slot] is an Array of the meaningful elements of every slot in the
--- plan (empty slots: an Array of 0 elements); stats = {transfers, launches, bytes}.
function M.readback(be, plan, buffers)
  local vyre = require("vyre")
  local U = require("vyre.lib.util")
  if mt_name(be) ~= "vyre.Backend" or be.freed then
    check.fail(RNAME, "argument 1 must be a live vyre.Backend", "pass vyre.backend()")
  end
  check.table(plan, "argument 2 (plan)", RNAME, "pass compaction.plan(...)'s result")
  check.table(buffers, "argument 3 (buffers)", RNAME, "buffers = {[slot] = Buffer, ...}")
  local compact, direct, empty = plan_list(plan, "compact"), plan_list(plan, "direct"),
    plan_list(plan, "empty")
  local t
  local function buffer_of(slot, bytes)
    local b = buffers[slot]
    if mt_name(b) ~= "vyre.Buffer" or b.freed then
      check.fail(RNAME, ("buffers[%s] must be a live vyre.Buffer (got %s)"):format(
        tostring(slot), mt_name(b) or type(b)), "give a buffer for every slot of the plan", 2)
    end
    t = t or b.type
    if b.type ~= t then
      check.fail(RNAME, ("buffers[%s] is %s, the others %s"):format(tostring(slot), b.type, t),
        "gather slots of one element type per call", 2)
    end
    local size = SIZE[t]
    if bytes % size ~= 0 or bytes > b.count * size then
      check.fail(RNAME, ("slot %s: %d meaningful bytes are not whole %s elements within its %d")
        :format(tostring(slot), bytes, t, b.count), "plan with the slots' real sizes", 2)
    end
    return b, bytes // size
  end
  local results, stats = {}, { transfers = 0, launches = 0, bytes = 0 }
  local srcs = {}
  for i, c in ipairs(compact) do
    local b, n = buffer_of(c.slot, c.bytes)
    srcs[i] = { b = b, n = n, o = c.compact_offset // SIZE[t], slot = c.slot }
  end
  if #srcs > 0 then
    check.int(plan, "compact_bytes", 1, RNAME, nil, "plan")
    local total = plan.compact_bytes // SIZE[t]
    local dst = U.scratch(be, "compaction.readback", t, total)
    local steps = {}
    for first = 1, #srcs, BATCH do
      local k = math.min(BATCH, #srcs - first + 1)
      local kern = U.kernel(be, ("gather_slots:%s:%d"):format(t, k), function()
        return gather_text(t, k)
      end)
      local args, maxn = { dst = dst }, 0
      for j = 1, k do
        local s = srcs[first + j - 1]
        args["s" .. j], args["o" .. j], args["n" .. j] = s.b, s.o, s.n
        maxn = math.max(maxn, s.n)
      end
      steps[#steps + 1] = { kern, args, { grid = { (maxn + 255) // 256 } } }
    end
    local got = be:sequence(steps, { readback = { { dst, 1, total } } })
    local bytes = got[1]:bytes()
    for _, s in ipairs(srcs) do
      local off = s.o * SIZE[t]
      results[s.slot] = vyre.array(t, bytes:sub(off + 1, off + s.n * SIZE[t]))
    end
    stats.transfers, stats.launches = 1, #steps
    stats.bytes = plan.compact_bytes
  end
  for _, d in ipairs(direct) do
    local b, n = buffer_of(d.slot, d.bytes)
    results[d.slot] = b:download({ first = 1, count = n })
    stats.transfers, stats.bytes = stats.transfers + 1, stats.bytes + d.bytes
  end
  for _, slot in ipairs(empty) do
    local b = buffers[slot]
    results[slot] = vyre.array(mt_name(b) == "vyre.Buffer" and b.type or t or "u32", 0)
  end
  return results, stats
end

M.gather_text = gather_text

return M
