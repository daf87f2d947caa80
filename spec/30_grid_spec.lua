-- 30: grid barriers and convergence loops (ARCHITECTURE.md §3, docs/GRID.md): the text
-- format, the validator's grid rules, the DSL, the reference interpreter's section
-- semantics and reported rounds, random programs with allow_grid, and (#gpu) the CUDA
-- backend bit for bit against the reference with the cooperative kernel, the host split
-- and graph mode (a CUDA graph per converge round), each forced.
local vyre = require("vyre")
local H = require("spec.helpers")

local N = 64

-- Random params and read buffers for a generated program (spec/helpers.lua).
local function inputs(p, seed) return H.random_inputs(p, seed, N) end

local EXCHANGE = [[
(program exchange (workgroup 4)
  (buffer a u32 read_write)
  (buffer b u32 read_write)
  (let i (gid x))
  (store a i (mul i 10u32))
  (grid_barrier)
  (let j (gid x))
  (store b j (load a (sub (sub (len a) j) 1u32))))
]]

local COUNTDOWN = [[
(program countdown (workgroup 32)
  (buffer x u32 read_write)
  (buffer flag u32 read_write)
  (param max u32)
  (converge flag max
    (let i (gid x))
    (if (lt i (len x))
      (then
        (if (gt (load x i) 0u32)
          (then
            (store x i (sub (load x i) 1u32))
            (store flag 0u32 1u32)))))))
]]

-- Section semantics in one program: a return ends a section only, shared memory is zero
-- again in the next one, grid loop variables are seen by their sections, and the rounds
-- of a converge inside a grid loop add up.
local SECTIONS = [[
(program sections (workgroup 4)
  (buffer a u32 read_write)
  (buffer f u32 read_write)
  (shared sh u32 4)
  (store sh (lid x) 5u32)
  (if (eq (lid x) 1u32) (then (return)))
  (store a (gid x) (add (load a (gid x)) 1u32))
  (grid_barrier)
  (store a (gid x) (add (load a (gid x)) (mul 10u32 (load sh (lid x)))))
  (for k 0u32 3u32 1u32
    (converge f 2u32
      (store a (gid x) (add (load a (gid x)) k))
      (store f 0u32 1u32))))
]]

local function problems(text)
  local ok, probs = vyre.validate(vyre.parse(text))
  assert.is_false(ok)
  local codes = {}
  for _, pr in ipairs(probs) do
    codes[#codes + 1] = pr.code .. "@" .. pr.path
    assert.truthy(pr.fix and #pr.fix > 0)
  end
  return table.concat(codes, " ")
end

describe("grid barriers and converge on the reference backend", function()
  local be = H.ref()

  it("prints and parses grid_barrier and converge canonically", function()
    for _, text in ipairs({ EXCHANGE, COUNTDOWN, SECTIONS }) do
      local p = H.parse(text, "30 grid")
      assert.is_true(H.roundtrips(p))
      assert.is_true((vyre.validate(p)))
    end
    assert.are.equal(EXCHANGE:gsub("^%s+", ""), vyre.parse(EXCHANGE):text())
    local e = H.error_of(vyre.parse,
      "(program a (workgroup 1) (buffer f u32 read_write) (converge f))")
    assert.truthy(e:find("Fix:", 1, true))
  end)

  it("rejects grid statements the rules forbid, each with a Fix", function()
    local head = "(program v (workgroup 4) (buffer a u32 read_write) (buffer f u32 read_write) "
    assert.truthy(problems(head .. "(let i (gid x)) (grid_barrier) (store a i 1u32))")
      :find("grid-scope@body[2].index", 1, true))
    assert.truthy(problems(head .. "(if (lt (wgid x) 2u32) (then (grid_barrier))))")
      :find("grid-nonuniform@body[0].cond", 1, true))
    assert.truthy(problems(head .. "(for k 0u32 (load a 0u32) 1u32 (grid_barrier)))")
      :find("grid-nonuniform@body[0].to", 1, true))
    assert.truthy(problems(head .. "(converge f (gid x) (store a 0u32 1u32)))")
      :find("grid-nonuniform@body[0].value", 1, true))
    assert.truthy(problems(head .. "(for k 0u32 3u32 1u32 (grid_barrier) "
      .. "(if (eq (gid x) 0u32) (then (break)))))")
      :find("grid-break@body[0].body[1].then[0]", 1, true))
    assert.truthy(problems("(program v (workgroup 4) (buffer f f32 read_write) (converge f 3u32))")
      :find("converge-flag@body[0]", 1, true))
    assert.truthy(problems("(program v (workgroup 4) (buffer f u32 read) (converge f 3u32))")
      :find("converge-flag@body[0]", 1, true))
  end)

  it("builds grid barriers and converge loops with the DSL", function()
    local p = H.program("dsl_grid", { workgroup = 32,
      vyre.buffer("x", "u32", "read_write"), vyre.buffer("flag", "u32", "read_write") },
      function(k)
        k:converge(k.flag, 100, function()
          local i = k:let("i", k.gid.x)
          k:when(i:lt(k.x:len()), function()
            k:when(k.x[i]:gt(0), function()
              k.x[i] = k.x[i] - 1
              k:atomic("or", k.flag, 0, 1)
            end)
          end)
        end)
        k:grid_barrier()
        local j = k:let("j", k.gid.x)
        k:when(j:lt(k.x:len()), function() k.x[j] = k.x[j] + 7 end)
      end)
    local out, rounds = be:run(p, { x = { 3, 1, 4, 1, 5, 9, 2, 6 }, flag = { 5 } })
    assert.are.same({ 7, 7, 7, 7, 7, 7, 7, 7 }, out.x:totable())
    assert.are.equal(0, out.flag[1])
    assert.are.equal(10, rounds)
    -- a variable used after the grid barrier that ended its section
    local e = H.error_of(vyre.program, "dsl_scope", { workgroup = 4,
      vyre.buffer("x", "u32", "read_write") }, function(k)
        local i = k:let("i", k.gid.x)
        k:grid_barrier()
        k.x[i] = 1
      end)
    assert.truthy(e:find("earlier section", 1, true) and e:find("Fix:", 1, true))
  end)

  it("finishes every workgroup's section before any starts the next", function()
    local out = be:run(vyre.parse(EXCHANGE), { a = vyre.array("u32", 16),
      b = vyre.array("u32", 16) })
    local want = {}
    for i = 0, 15 do want[i + 1] = (15 - i) * 10 end
    assert.are.same(want, out.b:totable())
  end)

  it("reports the rounds of converge loops and keeps the last round's flag", function()
    local p = vyre.parse(COUNTDOWN)
    local out, rounds = be:run(p, { x = { 3, 0, 1, 5, 2, 0, 4, 1 }, flag = { 7 }, max = 100 })
    assert.are.equal(6, rounds)
    assert.are.equal(0, out.flag[1])
    out, rounds = be:run(p, { x = { 3, 0, 1, 5, 2, 0, 4, 1 }, flag = { 0 }, max = 2 })
    assert.are.equal(2, rounds)
    assert.are.equal(1, out.flag[1])
    assert.are.same({ 1, 0, 0, 3, 0, 0, 2, 0 }, out.x:totable())
    local _, r, t = be:run_timed(p, { x = { 9 }, flag = { 0 }, max = 0 })
    assert.are.equal(0, r)
    assert.is_nil(t.rounds) -- the timing record holds times only
    assert.is_true(t.wall_ns >= 0)
    local k = be:compile(p)
    local x, f = be:buffer("u32", { 2, 2 }), be:buffer("u32", 1)
    k:launch({ x = x, flag = f, max = 50 })
    assert.are.equal(3, k:rounds())
  end)

  it("gives every section fresh variables and shared memory; return ends a section", function()
    local out, rounds = be:run(vyre.parse(SECTIONS), { a = vyre.array("u32", 8), f = { 0 } },
      { n = 8 })
    assert.are.equal(6, rounds)
    local want = {}
    for i = 0, 7 do want[i + 1] = (i % 4 == 1 and 0 or 1) + 2 * (0 + 1 + 2) end
    assert.are.same(want, out.a:totable())
  end)

  it("generates random programs with grid statements that validate and run", function()
    local converge = 0
    for seed = 1, 150 do
      local o = { allow_grid = true, allow_barriers = seed % 2 == 0, max_stmts = 5 }
      local p = vyre.random_program(seed, o)
      assert.are.equal(p:text(), vyre.random_program(seed, o):text())
      assert.is_true((vyre.validate(p)))
      if p:text():find("(converge", 1, true) then converge = converge + 1 end
      be:run(p, inputs(p, seed), { n = N })
    end
    assert.is_true(converge > 10)
  end)

  it("records grid_sync on the reference and checks the mode", function()
    assert.are.equal("auto", be:grid_sync())
    assert.are.equal("auto", be:grid_sync("split"))
    assert.are.equal("split", be:grid_sync("auto"))
    local e = H.error_of(be.grid_sync, be, "fast")
    assert.truthy(e:find("Fix:", 1, true))
  end)
end)

-- On a GPU (#gpu) and on the fake driver (#fakecuda, scripts/test.sh's fake pass: the
-- runtime's cooperative kernel, host split and graph rounds, each kernel interpreted on
-- the CPU). Trimmed on the fake: 100 random programs instead of 200, and the
-- more-workgroups-than-fit case at 2^14 elements instead of 2^20.
for _, kind in ipairs(H.cuda_kinds()) do
describe("grid barriers on " .. kind.name .. " " .. kind.tag, function()
  local ref, gpu
  local seeds = kind.small and (os.getenv("VYRE_FULL") == "1" and 100 or 40) or 200
  setup(function()
    ref = vyre.backend("reference")
    gpu = kind.open()
  end)
  teardown(function()
    if gpu then gpu:grid_sync("auto") end
  end)

  for _, mode in ipairs({ "cooperative", "split", "graph" }) do
    it("matches the reference bit for bit, " .. mode, function()
      gpu:grid_sync(mode)
      local fixed = {
        { EXCHANGE, { a = vyre.array("u32", 4096), b = vyre.array("u32", 4096) }, nil },
        { COUNTDOWN, { x = { 3, 0, 1, 5, 2, 0, 4, 1 }, flag = { 7 }, max = 100 }, nil },
        { SECTIONS, { a = vyre.array("u32", 4000), f = { 0 } }, { n = 4000 } },
      }
      for i, c in ipairs(fixed) do
        local p = vyre.parse(c[1])
        local want, wr = ref:run(p, c[2], c[3])
        local got, gr = gpu:run(p, c[2], c[3])
        assert.are.equal(wr, gr)
        for name, arr in pairs(want) do
          assert.is_nil(H.parity_diff(arr, got[name]), ("fixed %d %s"):format(i, name))
        end
      end
      for seed = 1, seeds do
        local p = vyre.random_program(seed, { allow_grid = true, allow_barriers = seed % 2 == 0,
          allow_subgroup = seed % 5 == 0, max_stmts = 6 })
        local args = inputs(p, seed)
        local want, wr = ref:run(p, args, { n = N })
        local got, gr = gpu:run(p, args, { n = N })
        assert.are.equal(wr, gr, "rounds of random_program(" .. seed .. ")")
        for name, arr in pairs(want) do
          local d = H.parity_diff(arr, got[name])
          if d then error(("random_program(%d) %s: %s\n%s"):format(seed, name, d, p:text()), 0) end
        end
      end
    end)
  end

  it("runs more virtual workgroups than fit (cooperative) and reports rounds", function()
    gpu:grid_sync("cooperative")
    local n = kind.small and 1 << 14 or 1 << 20
    local out = gpu:run(vyre.parse(EXCHANGE), { a = vyre.array("u32", n),
      b = vyre.array("u32", n) })
    local b = out.b
    assert.are.equal((n - 1) * 10 & 0xffffffff, b[1])
    assert.are.equal(0, b[n])
    local k = gpu:compile(vyre.parse(COUNTDOWN))
    local x, f = gpu:buffer("u32", { 5, 1, 2 }), gpu:buffer("u32", 1)
    k:launch({ x = x, flag = f, max = 100 })
    assert.are.equal(6, k:rounds())
    gpu:grid_sync("split")
    k:launch({ x = x, flag = f, max = 100 })
    assert.are.equal(1, k:rounds())
    gpu:grid_sync("auto")
  end)
end)
end
