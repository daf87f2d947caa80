-- spec/70_opt_spec.lua — the optimiser seen from Lua (docs/OPT.md): p:optimize([opts])
-- returns a new, optimised Program and a report of the rewrites, leaving p as it was;
-- vyre.ptx(p, {opt = ...}) switches passes one by one; the optimised programs compute
-- the same bits as the originals on the reference backend (the C suite,
-- tests/c/test_opt_props.c, does 10^4 programs; here a few hundred through Lua).
local vyre = require("vyre")
local H = require("spec.helpers")

local PASSES = { "fold", "simplify", "copy", "cse", "licm", "dce" }

local SRC = [[
(program shapes (workgroup 64)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (param n u32)
  (let i (gid x))
  (let j i)
  (let unused (mul a a))
  (if (lt j (len y))
    (then
      (for k 0u32 4u32 1u32
        (store y j (add (load y j) (mul (mul a (load x 0u32)) (cast f32 (mul (add n 0u32) 8u32))))))
      (store y i (add (mul a (load x j)) (mul a (load x j))))
      (if (lt 2u32 1u32) (then (store y 0u32 a))))))
]]

local function same_outputs(ref, p, q, args, opts)
  local a = ref:run(p, args, opts)
  local b = ref:run(q, args, opts)
  for name, arr in pairs(a) do
    assert.are.equal(arr:bytes(), b[name]:bytes(), "output " .. name .. " differs")
  end
end

describe("p:optimize", function()
  it("returns an optimised copy and a report, and leaves p unchanged", function()
    local p = H.parse(SRC)
    local text, hash = p:text(), p:hash()
    local q, rep = p:optimize()
    assert.are.equal("vyre.Program", getmetatable(q).__name)
    assert.are.equal(text, p:text())
    assert.are.equal(hash, p:hash())
    assert.are_not.equal(hash, q:hash())
    assert.are.equal("shapes", q.name)
    local qt = q:text()
    assert.is_nil(qt:find("unused", 1, true))       -- dead let
    assert.is_nil(qt:find("(let j", 1, true))       -- copy propagated, then dead
    assert.is_nil(qt:find("(lt 2u32 1u32)", 1, true)) -- constant branch
    assert.is_truthy(qt:find("(let licm", 1, true)) -- invariant hoisted out of the loop
    assert.is_truthy(qt:find("(let cse", 1, true))  -- (mul a (load x i)) once
    for _, k in ipairs({ "folded", "simplified", "copied", "cse", "hoisted", "removed" }) do
      assert.is_true(math.type(rep[k]) == "integer", k)
    end
    assert.is_true(rep.hoisted >= 1 and rep.cse >= 1 and rep.removed >= 2 and rep.copied >= 1)
    assert.is_true(vyre.validate(q))
    assert.is_true(vyre.parse(qt) == q)
  end)

  it("computes the same bits as the original on the reference backend", function()
    local p = H.parse(SRC)
    local ref = vyre.backend("reference")
    local x, y = vyre.array("f32", 100), vyre.array("f32", 100)
    for i = 1, 100 do x[i] = i * 0.37 - 9; y[i] = 1 / i end
    same_outputs(ref, p, p:optimize(), { x = x, y = y, a = 1.5, n = 3 }, { n = 100 })
    same_outputs(ref, p, p:optimize(), { x = x, y = y, a = 0 / 0, n = 0xffffffff }, { n = 100 })
  end)

  it("switches passes off one by one", function()
    local p = H.parse(SRC)
    local all = p:optimize():text()
    for _, pass in ipairs(PASSES) do
      local q, rep = p:optimize({ [pass] = false })
      assert.is_true(vyre.validate(q))
      if pass == "licm" then
        assert.is_nil(q:text():find("(let licm", 1, true))
        assert.are.equal(0, rep.hoisted)
      elseif pass == "cse" then
        assert.is_nil(q:text():find("(let cse", 1, true))
        assert.are.equal(0, rep.cse)
      end
      assert.are_not.equal(all, q:text(), pass .. " off changed nothing")
    end
    local none, rep = p:optimize(false)
    assert.is_true(none == p)
    for _, v in pairs(rep) do assert.are.equal(0, v) end
    assert.are.equal(all, p:optimize(true):text())
    assert.are.equal(all, p:optimize({}):text())
  end)

  it("keeps random programs with the targeted shapes bit-identical", function()
    local ref = vyre.backend("reference")
    local changed = 0
    for seed = 1, 150 do
      local p = vyre.random_program(seed,
        { allow_opt_shapes = true, allow_barriers = seed % 2 == 0 })
      local q = p:optimize()
      if q ~= p then changed = changed + 1 end
      local args = {}
      for _, d in ipairs(p:decls()) do
        if d.kind == "param" then
          args[d.name] = ({ bool = true, f32 = 1.25, f64 = -2.5 })[d.type] or 7
        elseif d.kind == "buffer" then
          local count = d.count > 0 and d.count or 70
          local arr = vyre.array(d.type, count)
          if d.type ~= "bool" then for i = 1, count do arr[i] = (i * 7 + seed) % 13 end end
          args[d.name] = arr
        end
      end
      -- n = {70}: an explicit 1-D grid. The optimised copy may lose the flattened index
      -- (its ngroups) and keep a stray gid.z, which a scalar n refuses (largs.c).
      local ok, err = pcall(same_outputs, ref, p, q, args, { n = { 70 } })
      if not ok then error(("seed %d: %s\n%s\n---\n%s"):format(seed, err, p:text(), q:text())) end
    end
    assert.is_true(changed > 100)
  end)

  it("rejects bad options with the function's name and a fix", function()
    local p = H.parse(SRC)
    local ok, err = pcall(p.optimize, p, 5)
    assert.is_false(ok)
    assert.matches("vyre.Program:optimize: opt must be a table of booleans", err, 1, true)
    assert.matches("Fix:", err, 1, true)
    ok, err = pcall(p.optimize, p, { cse = "no" })
    assert.is_false(ok)
    assert.matches("opt.cse must be a boolean, got string. Fix:", err, 1, true)
    ok, err = pcall(p.optimize, p, { csee = false })
    assert.is_false(ok)
    assert.matches("unknown option 'csee'", err, 1, true)
    ok, err = pcall(vyre.parse(SRC).optimize, vyre.parse("(program t (workgroup 1))"), {})
    assert.is_true(ok, err)
    local freed = vyre.parse(SRC)
    freed:free()
    ok, err = pcall(freed.optimize, freed)
    assert.is_false(ok)
    assert.matches("was freed", err, 1, true)
  end)
end)

describe("vyre.ptx opt switches", function()
  it("emits from the optimised program by default, and follows {opt = ...}", function()
    local p = H.parse(SRC)
    local dflt = vyre.ptx(p, { sm = 90 })
    assert.are.equal(dflt, vyre.ptx(p, { sm = 90, opt = true }))
    assert.are.equal(dflt, vyre.ptx(p, { sm = 90, opt = {} }))
    local off = vyre.ptx(p, { sm = 90, opt = false })
    assert.are_not.equal(dflt, off)
    -- the program's own entry is shorter; the optimised program may also have become
    -- elementwise and gained a vector entry NAME_v4 (ARCHITECTURE.md §5), not counted
    local function own_entry(ptx)
      local v4 = ptx:find(".entry shapes_v4", 1, true)
      return v4 and ptx:sub(1, v4) or ptx
    end
    assert.is_true(#own_entry(dflt) < #own_entry(off))
    for _, pass in ipairs(PASSES) do
      local t = vyre.ptx(p, { sm = 90, opt = { [pass] = false } })
      assert.is_string(t)
      assert.is_truthy(t:find(".visible .entry shapes", 1, true))
    end
    assert.are_not.equal(dflt, vyre.ptx(p, { sm = 90, opt = { cse = false } }))
    assert.are_not.equal(dflt, vyre.ptx(p, { sm = 90, opt = { licm = false } }))
  end)

  it("rejects a bad opt value", function()
    local p = H.parse(SRC)
    local ok, err = pcall(vyre.ptx, p, { opt = { cse = 1 } })
    assert.is_false(ok)
    assert.matches("vyre.ptx: opt.cse must be a boolean, got number. Fix:", err, 1, true)
    ok, err = pcall(vyre.ptx, p, { opt = "none" })
    assert.is_false(ok)
    assert.matches("vyre.ptx: opt must be a table of booleans, true or false, got string", err, 1,
      true)
  end)
end)

describe("the optimiser on programs with grid statements", function()
  -- Sections between grid barriers run as separate dispatches (docs/GRID.md): a value
  -- or a load from before a barrier is not the same after it, so only fold and simplify
  -- run on such programs (regression: cse/copy across a barrier changed results).
  it("keeps random grid programs bit-identical on the reference", function()
    local be = H.ref()
    for seed = 1, 120 do
      local p = vyre.random_program(seed, { allow_grid = true, allow_barriers = seed % 2 == 0,
        allow_subgroup = seed % 5 == 0, max_stmts = 6 })
      local q = p:optimize()
      local args = {}
      for i, d in ipairs(p:decls()) do
        if d.kind == "buffer" then
          local a = vyre.array(d.type, d.count > 0 and d.count or 300)
          if d.type ~= "bool" then a:random(seed * 31 + i) end
          args[d.name] = a
        elseif d.kind == "param" then
          local float = d.type == "f32" or d.type == "f64"
          args[d.name] = d.type == "bool" and true or (float and 1.5 or 3)
        end
      end
      local want = be:run(p, args, { n = { 300 } }) -- explicit 1-D grid, as above
      local got = be:run(q, args, { n = { 300 } })
      for name, arr in pairs(want) do
        local diff = H.parity_diff(arr, got[name])
        assert(not diff, ("random_program(%d) %s: %s"):format(seed, name, tostring(diff)))
      end
    end
  end)
end)
