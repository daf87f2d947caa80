-- 77: e-graph limits that must hold up front (issue 26). eg:rule refuses a left-hand
-- side too deep for its matching kernel to compile (it used to fail at eg:run with an
-- internal compile error that dumped the generated kernel), and accepts and runs the
-- deepest one that fits. from_image refuses crafted images (huge counts, ids out of
-- range, truncated, a few words declaring millions of ids) quickly with a clear error,
-- before it allocates anything past the image's size. Reference backend.
local vyre = require("vyre")
local H = require("spec.helpers")
local match = require("vyre.egraph.match")

local function chain(n, inner)
  local s = inner or "?a"
  for _ = 1, n do s = "(Neg " .. s .. ")" end
  return s
end

local function graph()
  local eg = vyre.egraph(vyre.backend("reference"))
  eg:op("Neg", 1)
  eg:op("Num", 0)
  eg:op("Add", 2)
  return eg
end

describe("eg:rule and deep left-hand sides", function()
  it("derives the depth limit from vyre's nesting limit", function()
    assert.are.equal(64, match.MAX_NESTING)
    assert.are.equal(31, match.MAX_CHAIN)
  end)

  it("accepts and runs the deepest chain that fits", function()
    local eg = graph()
    local x = eg:leaf("Num", 7)
    local top = x
    for _ = 1, match.MAX_CHAIN do top = eg:add("Neg", top) end
    eg:rule("deep", chain(match.MAX_CHAIN), "?a")
    eg:run({ iterations = 2 })
    assert.are.equal(eg:find(x), eg:find(top))
  end)

  it("refuses one level more at eg:rule, with the limit and a Fix", function()
    for _, lhs in ipairs({ chain(match.MAX_CHAIN + 1), chain(40), chain(200) }) do
      local eg = graph()
      local msg = H.error_of(eg.rule, eg, "deep", lhs, "?a")
      assert.matches("vyre.EGraph:rule: left-hand pattern '(Neg (Neg", msg, 1, true)
      assert.matches("is too deep to match on the device: its matching kernel would nest "
        .. "%d+ statement levels, more than vyre's limit of 64%. Fix: write a shallower "
        .. "pattern: a chain of one%-child ops may be 31 ops deep", msg)
      assert.is_nil(msg:find("program eq_", 1, true)) -- no generated kernel in the message
      assert.is_nil(eg.rule_list) -- nothing was added
    end
  end)

  it("counts repeated variables, literals and when-tests against the limit", function()
    local eg = graph()
    -- a literal leaf in place of ?a costs a loop and a check (3 levels): one Neg less fits
    eg:rule("lit_fits", chain(match.MAX_CHAIN - 1, "(Num 0)"), "(Num 1)")
    local msg = H.error_of(eg.rule, eg, "lit", chain(match.MAX_CHAIN, "(Num 0)"), "(Num 1)")
    assert.matches("more than vyre's limit of 64", msg, 1, true)
    -- a when-test on the device costs one level
    eg:rule("when_fits", chain(match.MAX_CHAIN), "?a", { when = "(!= ?a 0)" })
    eg:rule("when_deeper", chain(match.MAX_CHAIN - 1, "(Add ?a ?a)"), "?a")
    msg = H.error_of(eg.rule, eg, "when2", chain(match.MAX_CHAIN - 1, "(Add ?a ?a)"), "?a",
      { when = "(!= ?a 0)" })
    assert.matches("would nest 65 statement levels", msg, 1, true)
  end)

  it("refuses a when predicate too deep for the kernel, with the validator's words", function()
    local eg = graph()
    local t = {}
    for i = 1, 200 do t[i] = ("(!= ?a %d)"):format(i) end
    local msg = H.error_of(eg.rule, eg, "w", "(Add ?a ?b)", "?a",
      { when = "(and " .. table.concat(t, " ") .. ")" })
    assert.matches("left-hand pattern '(Add ?a ?b)' cannot be matched on the device: its "
      .. "matching kernel is not a valid program (expression nesting exceeds 128 levels", msg,
      1, true)
    assert.matches("Fix: write a shallower pattern or a shorter when predicate", msg, 1, true)
    for i = 101, 200 do t[i] = nil end
    eg:rule("w_fits", "(Add ?a ?b)", "?a", { when = "(and " .. table.concat(t, " ") .. ")" })
  end)

  it("agrees with the validator exactly at the boundary", function()
    -- M.levels is arithmetic; M.problem builds and validates the real kernels.
    local eg = graph()
    eg:rule("ok", chain(match.MAX_CHAIN), "?a")
    local pat = eg.rule_list[1].pats[1]
    assert.are.equal(match.MAX_NESTING - 1, match.levels(pat, nil))
    assert.is_nil(match.problem(pat, nil, false))
    assert.is_nil(match.problem(pat, nil, true))
    -- one level deeper: the validator says the same as the arithmetic
    local deeper = { kind = "op", op = pat.op, args = { pat } }
    assert.are.equal(match.MAX_NESTING + 1, match.levels(deeper, nil))
    assert.matches("statements nest deeper than 64 levels", match.problem(deeper, nil, false),
      1, true)
  end)
end)

describe("vyre.egraph.from_image and crafted images", function()
  local be = vyre.backend("reference")
  local function sp(off, count) return { offset = 4 * off, bytes = 4 * count, count = count } end
  -- A 7-word image of one leaf row; every span points into the same words.
  local function crafted(eclass, nids)
    local words = { eclass, 0, 0, 2, 0, 5, 0 } -- eclass, op, off, len, sig, payload lo, hi
    local spans = { nrows = 1, nwords = 2, ngroups = 0, nids = nids,
      ops = { { name = "Num", arity = 0 } },
      row_eclass = sp(0, 1), row_op = sp(1, 1), row_children_offset = sp(2, 1),
      row_children_len = sp(3, 1), row_signature = sp(4, 1), children = sp(5, 2),
      group_eclass = sp(0, 0), group_offset = sp(0, 1), group_rows = sp(0, 1) }
    return vyre.array("u32", words), spans
  end

  -- The error of from_image on (image, spans). Not timed: a refusal returns (a loop over
  -- a crafted count would not), and it is the checker's message, not a later failure.
  local function refused(image, spans)
    local msg = H.error_of(vyre.egraph.from_image, be, image, spans)
    assert.matches("^vyre%.egraph%.from_image: ", msg)
    assert.matches("Fix: ", msg, 1, true)
    return msg
  end

  it("loads a well-formed crafted image (the baseline)", function()
    local eg = vyre.egraph.from_image(be, crafted(100, 101))
    assert.are.same({ 1, 1 }, { eg:size() })
  end)

  it("refuses a few words that declare millions of ids (used to cost 70 s and 1.5 GB)", function()
    local msg = refused(crafted(400000000, 400000001))
    assert.matches("spans.nids is 400000001 for an image of 7 words, more than the 4208 ids",
      msg, 1, true)
  end)

  it("refuses ids out of range of spans.nids", function()
    local msg = refused(crafted(400000000, 1))
    assert.matches("1 e-node rows of the image are malformed (op, children range, arity, or an "
      .. "e-class id not below spans.nids = 1)", msg, 1, true)
    -- a child (here: an inner row's) out of range too
    local eg = graph()
    eg:add("Neg", eg:leaf("Num", 3))
    local img, spans = eg:image()
    local w = img:download():totable()
    w[spans.children.offset // 4 + 3] = spans.nids -- the Neg row's child
    assert.matches("malformed", refused(vyre.array("u32", w), spans), 1, true)
  end)

  it("refuses huge counts, truncated images and bad spans", function()
    local img, spans = crafted(0, 1)
    for _, k in ipairs({ "nrows", "nwords", "ngroups", "nids" }) do
      local bad = {}
      for kk, v in pairs(spans) do bad[kk] = v end
      bad[k] = 1 << 40
      assert.matches(("spans.%s must be a count"):format(k), refused(img, bad), 1, true)
      bad[k] = nil
      assert.matches(("spans.%s must be a count"):format(k), refused(img, bad), 1, true)
    end
    local bad = {}
    for k, v in pairs(spans) do bad[k] = v end
    bad.nrows, bad.row_eclass = 1000000, sp(0, 1000000)
    assert.matches("does not fit the image (28 bytes)", refused(img, bad), 1, true)
    -- truncated: the real image of a graph, cut short
    local eg = graph()
    eg:add("Add", eg:leaf("Num", 1), eg:leaf("Num", 2))
    local real, rspans = eg:image()
    local text = real:download():bytes()
    assert.matches("does not fit the image", refused(text:sub(1, #text - 8), rspans), 1, true)
    assert.matches("the image string has 7 bytes, not a whole number of u32 words",
      refused(text:sub(1, 7), rspans), 1, true)
  end)

  it("refuses a row whose length is not its op's arity without walking it", function()
    local eg = graph()
    eg:add("Neg", eg:leaf("Num", 3))
    local img, spans = eg:image()
    local w = img:download():totable()
    -- the Neg row (row 2) claims the whole children column
    w[spans.row_children_len.offset // 4 + 2] = spans.nwords
    w[spans.row_children_offset.offset // 4 + 2] = 0
    assert.matches("malformed", refused(vyre.array("u32", w), spans), 1, true)
  end)
end)

describe("the deepest left-hand side on CUDA #gpu", function()
  it("compiles and matches as on the reference backend", function()
    local gpu = assert(vyre.backend("cuda"))
    local found = {}
    for i, be in ipairs({ vyre.backend("reference"), gpu }) do
      local eg = vyre.egraph(be)
      eg:op("Neg", 1)
      eg:op("Num", 0)
      local x = eg:leaf("Num", 7)
      local top = x
      for _ = 1, match.MAX_CHAIN + 3 do top = eg:add("Neg", top) end
      -- the deepest chain, with a device when-test on top (64 statement levels)
      eg:rule("deep", chain(match.MAX_CHAIN), "?a", { when = "(!= ?a 12345)" })
      local rep = eg:run({ iterations = 3 })
      found[i] = { rep[1].matches.deep, select(2, eg:size()), eg:find(top) == eg:find(x) }
    end
    assert.are.same(found[1], found[2])
  end)
end)
