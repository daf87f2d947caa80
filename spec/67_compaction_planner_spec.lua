-- 67: vyre.planners.compaction — the plan (slots sorted, empty ones skipped, small ones
-- packed with offsets, large ones direct; full / compact / direct / avoided bytes and
-- transfers; every error) and its runtime path, compaction.readback: the meaningful
-- bytes of many slots gathered on the device by a generated vyre program and read in
-- one transfer, compared with reading each slot directly — on the reference backend,
-- and (#gpu) on CUDA against the reference, bit for bit.
local vyre = require("vyre")
local H = require("spec.helpers")
local comp = vyre.planners.compaction

local function slot(s, m, c) return { slot = s, meaningful_bytes = m, capacity_bytes = c } end

describe("compaction.plan", function()
  it("sorts slots, skips empty ones, packs small ones and reads large ones directly", function()
    local p = comp.plan({ record_limit_bytes = 16, slots = {
      slot(3, 8, 64), slot(1, 0, 64), slot(2, 40, 64), slot(0, 12, 64), slot(7, 16, 16) } })
    assert.are.same({ { slot = 0, compact_offset = 0, bytes = 12 },
      { slot = 3, compact_offset = 12, bytes = 8 },
      { slot = 7, compact_offset = 20, bytes = 16 } }, p.compact)
    assert.are.same({ { slot = 2, bytes = 40 } }, p.direct)
    assert.are.same({ 1 }, p.empty)
    assert.are.same({ 4 * 64 + 16, 36, 40, 76, 4 * 64 + 16 - 76, 2, 3, 16 }, { p.full_bytes,
      p.compact_bytes, p.direct_bytes, p.read_bytes, p.avoided_bytes, p.transfers,
      p.avoided_transfers, p.record_limit_bytes })
  end)

  it("the record limit is inclusive; limit 0 reads every non-empty slot directly", function()
    local p = comp.plan({ record_limit_bytes = 8, slots = { slot(0, 8, 8), slot(1, 9, 9) } })
    assert.are.same({ 1, 1, 2 }, { #p.compact, #p.direct, p.transfers })
    p = comp.plan({ record_limit_bytes = 0, slots = { slot(0, 4, 8), slot(1, 0, 8) } })
    assert.are.same({ 0, 1, 1, 1 }, { #p.compact, #p.direct, #p.empty, p.transfers })
  end)

  it("no slots or all empty: nothing read, no transfer", function()
    local p = comp.plan({ record_limit_bytes = 8, slots = { slot(0, 0, 8) } })
    assert.are.same({ 0, 0, 8, 0, 1 }, { p.read_bytes, p.transfers, p.avoided_bytes,
      #p.compact + #p.direct, p.avoided_transfers })
    p = comp.plan({ record_limit_bytes = 8, slots = {} })
    assert.are.same({ 0, 0 }, { p.full_bytes, p.transfers })
  end)

  it("errors", function()
    local cases = {
      { { slots = {} }, "input.record_limit_bytes must be an integer >= 0 (got nil)" },
      { { record_limit_bytes = -1, slots = {} },
        "input.record_limit_bytes must be an integer >= 0" },
      { { record_limit_bytes = 4 }, "input.slots must be a table" },
      { { record_limit_bytes = 4, slots = { slot(0, 9, 8) } },
        "slot 0 has 9 meaningful bytes, more than its capacity of 8" },
      { { record_limit_bytes = 4, slots = { slot(2, 1, 8), slot(2, 1, 8) } },
        "slots[2] repeats slot 2 of slots[1]" },
      { { record_limit_bytes = 4, slots = { slot(-1, 1, 8) } },
        "slots[1].slot must be an integer >= 0" },
      { { record_limit_bytes = 4, slots = { slot(0, 1, nil) } },
        "slots[1].capacity_bytes must be an integer >= 0" },
      { { record_limit_bytes = 4, slots = { slot(0, 1, 2^53), slot(1, 1, 2^53) } }, "overflows" },
      { { record_limit_bytes = 4, slots = { 5 } }, "slots[1] must be a table" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(comp.plan, c[1])
      assert.truthy(e:find("vyre.planners.compaction.plan: ", 1, true), e)
      assert.truthy(e:find(c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)

-- Slots of type t: slot s holds `cap` elements, the first counts[s] meaningful.
local function setup(be, t, counts, cap, seed)
  local bufs, slots = {}, {}
  local size = (t == "f64" or t == "i64" or t == "u64") and 8 or 4
  for s, n in pairs(counts) do
    local a = vyre.array(t, cap):random(seed + s)
    bufs[s] = be:buffer(t, a)
    slots[#slots + 1] = slot(s, n * size, cap * size)
  end
  return bufs, slots
end

-- The same slots read one by one, whole elements.
local function direct(bufs, counts)
  local out = {}
  for s, n in pairs(counts) do out[s] = bufs[s]:download({ first = 1, count = n }) end
  return out
end

local function same_bytes(want, got, counts)
  for s, n in pairs(counts) do
    assert.are.equal(n, #got[s], "slot " .. s)
    assert.are.equal(want[s]:bytes(), got[s]:bytes(), "slot " .. s)
  end
end

local function readback_checks(be)
  -- 20 slots (more than one gather launch of 8), sizes 0..64 elements, limit 40 elements.
  local counts = {}
  for s = 0, 19 do counts[s] = (s * 37) % 65 end
  counts[5] = 0
  for _, t in ipairs({ "u32", "f32", "f64", "i64" }) do
    local bufs, slots = setup(be, t, counts, 64, 11)
    local size = (t == "f64" or t == "i64") and 8 or 4
    local plan = comp.plan({ slots = slots, record_limit_bytes = 40 * size })
    local got, stats = comp.readback(be, plan, bufs)
    same_bytes(direct(bufs, counts), got, counts)
    assert.are.equal(0, #got[5])
    assert.are.equal(1 + #plan.direct, stats.transfers)
    assert.are.equal(math.ceil(#plan.compact / 8), stats.launches)
    assert.are.equal(plan.read_bytes, stats.bytes)
    assert.is_true(#plan.compact > 8 and #plan.direct > 0)
  end
end

describe("compaction.readback (reference)", function()
  it("gathers the meaningful bytes of many slots in one transfer, as direct reads", function()
    readback_checks(vyre.backend("reference"))
  end)

  it("one compact slot, only direct slots, only empty slots", function()
    local be = vyre.backend("reference")
    for _, counts in ipairs({ { [4] = 3 }, { [0] = 50, [1] = 60 }, { [0] = 0 } }) do
      local bufs, slots = setup(be, "u32", counts, 64, 3)
      local plan = comp.plan({ slots = slots, record_limit_bytes = 16 })
      local got, stats = comp.readback(be, plan, bufs)
      same_bytes(direct(bufs, counts), got, counts)
      assert.are.equal(plan.transfers, stats.transfers)
    end
  end)

  it("the gather program is plain program text that validates", function()
    local p = vyre.parse(comp.gather_text("f32", 3))
    assert.is_true((p:validate()))
    assert.truthy(comp.gather_text("u32", 2):find("(store dst (add o2 i) (load s2 i))", 1, true))
  end)

  it("errors", function()
    local be = vyre.backend("reference")
    local bufs, slots = setup(be, "u32", { [0] = 4, [1] = 2 }, 8, 1)
    local plan = comp.plan({ slots = slots, record_limit_bytes = 64 })
    local cases = {
      { { 5, plan, bufs }, "argument 1 must be a live vyre.Backend" },
      { { be, {}, bufs }, "plan.compact is missing" },
      { { be, plan, {} }, "buffers[0] must be a live vyre.Buffer (got nil)" },
      { { be, plan, { [0] = bufs[0], [1] = be:buffer("f32", 8) } },
        "buffers[1] is f32, the others u32" },
      { { be, plan, { [0] = bufs[0], [1] = be:buffer("u32", 1) } },
        "slot 1: 8 meaningful bytes are not whole u32 elements within its 1" },
      { { be, comp.plan({ slots = { slot(0, 6, 32) }, record_limit_bytes = 64 }), bufs },
        "slot 0: 6 meaningful bytes are not whole u32 elements" },
      { { be, plan, nil }, "argument 3 (buffers) must be a table" },
      { { be, { compact = plan.compact, direct = {}, empty = {} }, bufs },
        "plan.compact_bytes must be an integer >= 1 (got nil)" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(comp.readback, table.unpack(c[1], 1, 3))
      assert.truthy(e:find("vyre.planners.compaction.readback: ", 1, true), e)
      assert.truthy(e:find(c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)

describe("compaction.readback on CUDA #gpu", function()
  it("gives the direct reads' bytes and the reference's, with one compacted transfer", function()
    local be = assert(require("vyre.cuda").device(0))
    readback_checks(be)
    local ref = vyre.backend("reference")
    local counts = { [0] = 7, [1] = 0, [2] = 100, [3] = 31, [9] = 1 }
    local gb, slots = setup(be, "f32", counts, 128, 5)
    local rb = setup(ref, "f32", counts, 128, 5)
    local plan = comp.plan({ slots = slots, record_limit_bytes = 256 })
    local got = comp.readback(be, plan, gb)
    same_bytes(comp.readback(ref, plan, rb), got, counts)
  end)
end)
