-- 66: vyre.planners.fusion (the original's greedy launch-fusion planner: every joining
-- rule, the byte accounting, ZeroBudget / DuplicateStage / StageOverBudget / Overflow,
-- the dot and table views) and vyre.planners.multiquery (grouping by layout and
-- traversal key, packing within the budget, the graph uploaded once, the counts).
local vyre = require("vyre")
local H = require("spec.helpers")
local fusion = vyre.planners.fusion
local mq = vyre.planners.multiquery

local function stage(id, h, inb, outb, scratch, host)
  return { id = id, layout_hash = h, input_bytes = inb, output_bytes = outb,
    scratch_bytes = scratch, requires_host_materialization = host }
end

local function ids(plan)
  local out = {}
  for i, g in ipairs(plan.groups) do out[i] = table.concat(g.stages, ",") end
  return out
end

describe("fusion.plan", function()
  it("fuses a same-layout chain and counts the avoided launches and intermediate bytes", function()
    local p = fusion.plan({ budget_bytes = 1000, stages = {
      stage("a", 7, 100, 100, 10), stage("b", 7, 100, 100, 10), stage("c", 7, 100, 100, 10),
      stage("d", 8, 100, 100, 0) } })
    assert.are.same({ "a,b,c", "d" }, ids(p))
    -- a opens with in + out + scratch = 210; b and c each add scratch + output (110).
    assert.are.same({ 430, 200 }, { p.groups[1].required_bytes, p.groups[2].required_bytes })
    assert.are.same({ 200, 0 }, { p.groups[1].avoided_bytes, p.groups[2].avoided_bytes })
    assert.are.same({ 7, 8 }, { p.groups[1].layout_hash, p.groups[2].layout_hash })
    assert.are.same({ 2, 4, 2, 200, 1000 }, { p.launches, p.unfused_launches,
      p.avoided_launches, p.avoided_bytes, p.budget_bytes })
  end)

  it("a different layout hash starts a new launch", function()
    local p = fusion.plan({ budget_bytes = 1000, stages = {
      stage(1, "x", 1, 1, 0), stage(2, "y", 1, 1, 0), stage(3, "y", 1, 1, 0) } })
    assert.are.same({ "1", "2,3" }, ids(p))
  end)

  it("a stage that must reach the host is never fused, on either side", function()
    local p = fusion.plan({ budget_bytes = 1000, stages = {
      stage("a", 1, 8, 8, 0), stage("b", 1, 8, 8, 0, true), stage("c", 1, 8, 8, 0),
      stage("d", 1, 8, 8, 0) } })
    assert.are.same({ "a", "b", "c,d" }, ids(p))
    assert.are.equal(8, p.avoided_bytes)
  end)

  it("takes the next stage exactly when required + its scratch + output fits", function()
    local st = { stage("a", 1, 40, 30, 0), stage("b", 1, 30, 20, 10) }
    -- 70 + 10 + 20 = 100.
    assert.are.same({ "a,b" }, ids(fusion.plan({ budget_bytes = 100, stages = st })))
    assert.are.same({ "a", "b" }, ids(fusion.plan({ budget_bytes = 99, stages = st })))
  end)

  it("after a budget break the next group starts fresh and can fuse again", function()
    local st = {}
    for i = 1, 6 do st[i] = stage(i, 1, 10, 10, 0) end
    -- 20 + 10 + 10 = 40 per group of three.
    local p = fusion.plan({ budget_bytes = 40, stages = st })
    assert.are.same({ "1,2,3", "4,5,6" }, ids(p))
    assert.are.same({ 2, 4, 40 }, { p.launches, p.avoided_launches, p.avoided_bytes })
  end)

  it("no stages: no launches", function()
    local p = fusion.plan({ budget_bytes = 1, stages = {} })
    assert.are.same({ 0, 0, 0 }, { p.launches, p.avoided_launches, p.avoided_bytes })
  end)

  it("errors carry the original's names", function()
    local cases = {
      { { budget_bytes = 0, stages = {} }, "input.budget_bytes is 0 [ZeroBudget]" },
      { { stages = {} }, "input.budget_bytes must be an integer >= 0" },
      { { budget_bytes = 10, stages = { stage("a", 1, 1, 1, 0), stage("a", 1, 1, 1, 0) } },
        "stages[2] repeats the id 'a' of stages[1] [DuplicateStage]" },
      { { budget_bytes = 10, stages = { stage("a", 1, 5, 5, 1) } },
        "stage 'a' needs 11 bytes (in + out + scratch), over the budget of 10 [StageOverBudget]" },
      { { budget_bytes = 2^53, stages = { stage("a", 1, 2^52, 2^52, 2^52) } },
        "overflows" },
      { { budget_bytes = 10, stages = { { id = {}, layout_hash = 1 } } },
        "stages[1].id must be a string or an integer" },
      { { budget_bytes = 10, stages = { { id = 1, layout_hash = 1.5 } } },
        "stages[1].layout_hash must be an integer or a string" },
      { { budget_bytes = 10, stages = { stage("a", 1, -1, 1, 0) } },
        "stages[1].input_bytes must be an integer >= 0" },
      { { budget_bytes = 10, stages = { stage("a", 1, 1, 1, 0, "yes") } },
        "stages[1].requires_host_materialization must be a boolean" },
      { "x", "input must be a table" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(fusion.plan, c[1])
      assert.truthy(e:find("vyre.planners.fusion.plan: ", 1, true), e)
      assert.truthy(e:find(c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
    local e = H.error_of(fusion.plan, { budget_bytes = 2^53,
      stages = { stage("a", 1, 2^52, 2^52, 2^52) } })
    assert.truthy(e:find("[Overflow]", 1, true), e)
  end)

  it("random pipelines: groups partition the stages in order, fit, and are maximal", function()
    local rng = 12345
    local function rand(n)
      rng = (rng * 1103515245 + 12345) % 2147483648
      return rng % n
    end
    for _ = 1, 300 do
      local st, by_id = {}, {}
      for i = 1, 1 + rand(12) do
        st[i] = stage(i, rand(3), rand(50), rand(50), rand(20), rand(8) == 0)
        by_id[i] = st[i]
      end
      local budget = 60 + rand(200)
      local ok, p = pcall(fusion.plan, { budget_bytes = budget, stages = st })
      if ok then
        local n, avoided = 0, 0
        for gi, g in ipairs(p.groups) do
          local first = by_id[g.stages[1]]
          local req = first.input_bytes + first.output_bytes + first.scratch_bytes
          for k = 2, #g.stages do
            local s, prev = by_id[g.stages[k]], by_id[g.stages[k - 1]]
            assert.are.equal(first.layout_hash, s.layout_hash)
            assert.is_false(s.requires_host_materialization or prev.requires_host_materialization)
            req = req + s.scratch_bytes + s.output_bytes
            avoided = avoided + prev.output_bytes
          end
          assert.are.equal(req, g.required_bytes)
          assert.is_true(req <= budget)
          for _, id in ipairs(g.stages) do
            n = n + 1
            assert.are.equal(n, id) -- in order, each stage once
          end
          local nxt = p.groups[gi + 1] and by_id[p.groups[gi + 1].stages[1]]
          if nxt then -- maximal: the next group's first stage could not join
            local last = by_id[g.stages[#g.stages]]
            assert.is_true(nxt.layout_hash ~= last.layout_hash
              or nxt.requires_host_materialization or last.requires_host_materialization
              or req + nxt.scratch_bytes + nxt.output_bytes > budget)
          end
        end
        assert.are.same({ #st, avoided, #st - #p.groups }, { n, p.avoided_bytes,
          p.avoided_launches })
      else
        assert.truthy(tostring(p):find("[StageOverBudget]", 1, true), p)
      end
    end
  end)

  it("dot() is Graphviz with a cluster per launch; tostring is a table", function()
    local p = fusion.plan({ budget_bytes = 100, stages = {
      stage("a", 1, 10, 10, 0), stage("b\"q", 1, 10, 10, 0), stage("c", 2, 10, 10, 0) } })
    local d = p:dot()
    assert.matches("^digraph fusion {", d)
    assert.truthy(d:find("subgraph cluster_group1 {", 1, true))
    assert.truthy(d:find("subgraph cluster_group2 {", 1, true))
    assert.truthy(d:find('"a" -> "b\\"q";', 1, true), d)
    assert.truthy(d:find('"b\\"q" -> "c" [style=dashed];', 1, true), d)
    local t = tostring(p)
    assert.truthy(t:find("2 launches instead of 3 (1 avoided), 10 intermediate bytes avoided",
      1, true), t)
    assert.truthy(t:find("\n     1  1 ", 1, true), t)
  end)

  it("dot renders with Graphviz where it is installed", function()
    local dot = io.popen("command -v dot 2>/dev/null"):read("a")
    if dot == "" then
      pending("Graphviz (dot) is not installed: rendering not checked")
      return
    end
    local p = fusion.plan({ budget_bytes = 100, stages = { stage("a", 1, 10, 10, 0),
      stage("b", 1, 10, 10, 0) } })
    local tmp = os.tmpname()
    local f = assert(io.open(tmp, "w"))
    f:write(p:dot())
    f:close()
    local svg = io.popen("dot -Tsvg " .. tmp .. " 2>&1"):read("a")
    os.remove(tmp)
    assert.truthy(svg:find("<svg", 1, true), svg)
  end)
end)

local function q(id, layout, trav, upload, frontier, scratch, out)
  return { query = id, graph_layout_hash = layout, traversal_key = trav,
    graph_upload_bytes = upload, frontier_bytes = frontier, scratch_bytes = scratch,
    output_bytes = out }
end

local function batches(plan)
  local out = {}
  for i, b in ipairs(plan.batches) do
    local t = {}
    for j, id in ipairs(b.queries) do t[j] = tostring(id) end
    out[i] = table.concat(t, ",")
  end
  return out
end

describe("multiquery.plan", function()
  it("groups by layout and traversal key, packs within the budget, uploads a graph once",
    function()
      local p = mq.plan({ budget_bytes = 1000, queries = {
        q(1, 1, 1, 500, 100, 50, 10), q(2, 1, 1, 500, 100, 80, 10), q(3, 1, 2, 500, 100, 0, 0),
        q(4, 1, 1, 500, 200, 0, 10), q(5, 9, 1, 300, 0, 0, 0) } })
      -- 1+2: 500 + 200 + max(50, 80) + 20 = 800; adding 4 gives 1010 > 1000.
      assert.are.same({ "1,2", "4", "3", "5" }, batches(p))
      assert.are.same({ 800, 710, 600, 300 }, { p.batches[1].resident_bytes,
        p.batches[2].resident_bytes, p.batches[3].resident_bytes, p.batches[4].resident_bytes })
      assert.are.same({ true, false, false, true }, { p.batches[1].uploads_graph,
        p.batches[2].uploads_graph, p.batches[3].uploads_graph, p.batches[4].uploads_graph })
      assert.are.same({ 500, 0, 0, 300 }, { p.batches[1].upload_bytes, p.batches[2].upload_bytes,
        p.batches[3].upload_bytes, p.batches[4].upload_bytes })
      for _, b in ipairs(p.batches) do assert.are.equal(1, b.host_fences) end
      assert.are.same({ 4, 5, 1, 4, 1, 800, 4 * 500 + 300 - 800, 800 }, { p.launches,
        p.unbatched_launches, p.avoided_launches, p.host_fences, p.avoided_host_fences,
        p.upload_bytes, p.avoided_upload_bytes, p.peak_resident_bytes })
      assert.are.same({ 1, 2 }, { p.batches[3].graph_layout_hash, p.batches[3].traversal_key })
    end)

  it("scratch is the maximum over a batch, frontier and output the sum", function()
    local st = { q("a", 1, 1, 10, 5, 40, 1), q("b", 1, 1, 10, 5, 30, 1) }
    -- 10 + 10 + 40 + 2 = 62.
    assert.are.same({ "a,b" }, batches(mq.plan({ budget_bytes = 62, queries = st })))
    assert.are.same({ "a", "b" }, batches(mq.plan({ budget_bytes = 61, queries = st })))
  end)

  it("many queries of one key: one launch and one fence instead of n", function()
    local qs = {}
    for i = 1, 64 do qs[i] = q(i, 5, 5, 1 << 20, 64, 256, 4) end
    local p = mq.plan({ budget_bytes = 1 << 30, queries = qs })
    assert.are.same({ 1, 63, 63, 63 * (1 << 20) }, { p.launches, p.avoided_launches,
      p.avoided_host_fences, p.avoided_upload_bytes })
    assert.are.equal((1 << 20) + 64 * 64 + 256 + 64 * 4, p.peak_resident_bytes)
    assert.truthy(tostring(p):find("1 launches instead of 64", 1, true))
  end)

  it("errors", function()
    local cases = {
      { { budget_bytes = 0, queries = {} }, "input.budget_bytes is 0" },
      { { budget_bytes = 10, queries = { q(1, 0, 1, 1) } },
        "queries[1].graph_layout_hash must be a non-zero integer or a string (got 0)" },
      { { budget_bytes = 10, queries = { q(1, 1, 0, 1) } },
        "queries[1].traversal_key must be a non-zero integer or a string (got 0)" },
      { { budget_bytes = 10, queries = { q(1, 1, 1, 0) } },
        "queries[1].graph_upload_bytes must be an integer >= 1 (got 0)" },
      { { budget_bytes = 10, queries = { q(1, 1, 1, 1), q(1, 1, 1, 1) } },
        "queries[2] repeats the id 1 of queries[1]" },
      { { budget_bytes = 10, queries = { q(1, 1, 1, 5, 3, 2, 1) } },
        "query 1 alone needs 11 resident bytes, over the budget of 10" },
      { { budget_bytes = 10, queries = { q(1, 1, 1, 5), q(2, 1, 2, 6) } },
        "queries[2] gives layout 1 6 upload bytes, queries[1] gave 5" },
      { { budget_bytes = 10, queries = { q(nil, 1, 1, 5) } },
        "queries[1].query must be a string or an integer" },
      { { budget_bytes = 10, queries = { q(1, 1, 1, 5, -1) } },
        "queries[1].frontier_bytes must be an integer >= 0" },
      { { budget_bytes = 2^53, queries = { q(1, 1, 1, 2^52, 2^52, 2^52) } }, "overflows" },
      { { budget_bytes = 10 }, "input.queries must be a table" },
    }
    for _, c in ipairs(cases) do
      local e = H.error_of(mq.plan, c[1])
      assert.truthy(e:find("vyre.planners.multiquery.plan: ", 1, true), e)
      assert.truthy(e:find(c[2], 1, true), e)
      assert.truthy(e:find(". Fix: ", 1, true), e)
    end
  end)
end)
