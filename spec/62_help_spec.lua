-- 62: vyre.help covers the whole public surface. Every function of vyre, vyre.cuda,
-- vyre.reference, vyre.lib, vyre.egraph, vyre.policy, vyre.profiles, vyre.plan_view and
-- every planner, every method of every userdata type and of the EGraph (read from the
-- metatables themselves), every DSL expression method and operator, and the builder's
-- statements have a help entry; every entry names something that exists; and
-- vyre.help finds entries from functions, objects and names.
local vyre = require("vyre")
local help = require("vyre.help")

local entries = help.entries()

local function missing_from(tbl, prefix)
  local miss = {}
  for k, v in pairs(tbl) do
    if type(v) == "function" and not entries[prefix .. k] then miss[#miss + 1] = prefix .. k end
  end
  table.sort(miss)
  return miss
end

local function printed(x)
  local out = {}
  local saved = _G.print
  _G.print = function(...)
    local t = {}
    for i = 1, select("#", ...) do t[i] = tostring((select(i, ...))) end
    out[#out + 1] = table.concat(t, "\t")
  end
  local ok, err = pcall(vyre.help, x)
  _G.print = saved
  assert(ok, err)
  return table.concat(out, "\n")
end

-- A DSL builder (the k of a program body), captured while a program is built.
local function builder()
  local k
  vyre.program("capture", { workgroup = 1, vyre.buffer("o", "u32", "write") }, function(b)
    k = b
  end)
  return k
end

describe("vyre.help coverage", function()
  it("has an entry for every function of the vyre module and its submodules", function()
    assert.are.same({}, missing_from(vyre, "vyre."))
    assert.are.same({}, missing_from(require("vyre.cuda"), "vyre.cuda."))
    assert.are.same({}, missing_from(require("vyre.reference"), "vyre.reference."))
    assert.are.same({}, missing_from(require("vyre.lib"), "vyre.lib."))
    assert.are.same({}, missing_from(require("vyre.lib").steps, "vyre.lib.steps."))
    -- Every planner the package lists, so a new planner needs its help too.
    for _, n in ipairs(vyre.planners.NAMES) do
      local m = "vyre.planners." .. n
      assert.are.same({}, missing_from(require(m), m .. "."))
    end
    for _, m in ipairs({ "vyre.egraph", "vyre.policy", "vyre.profiles", "vyre.plan_view" }) do
      assert.are.same({}, missing_from(require(m), m .. "."))
    end
    for _, k in ipairs({ "vyre", "vyre.cuda", "vyre.reference", "vyre.lib", "vyre.version",
      "vyre.types", "vyre.lib.geometry", "vyre.egraph", "vyre.policy", "vyre.profiles",
      "vyre.plan_view" }) do
      assert.is_string(entries[k], k)
    end
  end)

  it("has an entry for every method of every userdata type", function()
    local miss = {}
    local seen = 0
    for tname, key in pairs(help.TYPES) do
      assert.is_string(entries[key], key)
      local methods = help.methods_of(tname)
      if methods then
        seen = seen + 1
        for _, m in ipairs(missing_from(methods, key .. ":")) do miss[#miss + 1] = m end
      end
    end
    assert.is_true(seen >= 8) -- Program Array Backend Buffer Kernel Launch Graph EGraph
    assert.is_table(help.methods_of("vyre.EGraph"))
    table.sort(miss)
    assert.are.same({}, miss)
  end)

  it("has an entry for every expression method and operator of the DSL", function()
    local expr_methods = getmetatable(vyre.lit("u32", 0)).__index
    assert.are.same({}, missing_from(expr_methods, "Expr:"))
    for _, op in ipairs(vyre.core.ops()) do
      assert.is_string(entries["Expr:" .. op.method], "operator " .. op.name
        .. ": add its line to OPS in lua/vyre/help/dsl.lua")
    end
  end)

  it("names only things that exist", function()
    local k = builder()
    local expr_methods = getmetatable(vyre.lit("u32", 0)).__index
    local methods = {}
    for tname, key in pairs(help.TYPES) do methods[key] = help.methods_of(tname) end
    local mods = { vyre = vyre, ["vyre.cuda"] = require("vyre.cuda"),
      ["vyre.reference"] = require("vyre.reference"), ["vyre.lib"] = require("vyre.lib"),
      ["vyre.lib.steps"] = require("vyre.lib").steps }
    for _, m in ipairs({ "vyre.egraph", "vyre.policy", "vyre.profiles", "vyre.plan_view" }) do
      mods[m] = require(m)
    end
    for _, n in ipairs(vyre.planners.NAMES) do
      mods["vyre.planners." .. n] = vyre.planners[n]
    end
    local stale = {}
    for key in pairs(entries) do
      local owner, member = key:match("^(%a+):([%w_]+)$")
      local ok
      if owner == "Builder" then
        ok = k[member] ~= nil
      elseif owner == "Expr" then
        ok = expr_methods[member] ~= nil
      elseif owner then
        ok = methods[owner] ~= nil and methods[owner][member] ~= nil
      elseif mods[key] or help.TYPES["vyre." .. key] or key == "Builder" or key == "Expr" then
        ok = true
      else
        local mod, name = key:match("^(.*)%.([%w_]+)$")
        ok = mods[mod] ~= nil and mods[mod][name] ~= nil
      end
      if not ok then stale[#stale + 1] = key end
    end
    table.sort(stale)
    assert.are.same({}, stale)
  end)

  it("starts every entry with the call, then says what it does", function()
    for key, text in pairs(entries) do
      local first = text:match("^[^\n]+")
      assert.is_truthy(first, key)
      local member = key:match("[:.]([%w_]+)$")
      if member and key ~= "vyre.lib" and key ~= "vyre.cuda" and key ~= "vyre.reference" then
        assert.is_truthy(first:find(member, 1, true), key .. ": " .. first)
        assert.is_truthy(text:find("\n", 1, true), key .. " has no description line")
      end
    end
  end)
end)

describe("vyre.help lookup", function()
  it("lists the topics without an argument", function()
    local out = printed()
    assert.matches("^vyre.help%(x%)", out)
    assert.matches("\n  Backend +buffer check compile", out)
    assert.matches("\n  vyre.lib ", out)
  end)

  it("finds functions and methods by value", function()
    assert.matches("^vyre%.parse%(text%) %-> Program\n", printed(vyre.parse))
    local be = vyre.backend("reference")
    assert.matches("^be:run%(p, args", printed(be.run))
    assert.matches("^buf:upload%(", printed(be:buffer("u32", 1).upload))
    assert.matches("^lib%.reduce_timed%(be, buf", printed(require("vyre.lib").reduce_timed))
    assert.matches("^a:sqrt%(%) %-> Expr", printed(vyre.lit("f32", 1).sqrt))
    assert.matches("not part of vyre's public API", printed(print))
  end)

  it("describes an object's type with its methods, and modules with their functions", function()
    local be = vyre.backend("reference")
    local out = printed(be)
    assert.matches("^vyre%.Backend", out)
    assert.matches("\nMethods:\n", out, 1, true)
    assert.matches("\n  be:compile%(p%) %-> Kernel", out)
    assert.matches("^vyre%.Array", printed(vyre.array("u32", 1)))
    assert.matches("^vyre%.Program", printed(vyre.parse("(program p (workgroup 1))")))
    assert.matches("^e — a typed DSL expression", printed(vyre.lit("u32", 1)))
    assert.matches("^k — the program builder", printed(builder()))
    assert.matches("\n  cuda%.available%(%)", printed(require("vyre.cuda")))
    assert.matches("^local vyre = require%(\"vyre%.cuda\"%)", printed(vyre))
  end)

  it("finds names written the ways people write them", function()
    for name, want in pairs({
      ["vyre.array"] = "^vyre%.array%(",
      ["array"] = "^vyre%.array%(",
      ["Buffer:upload"] = "^buf:upload",
      ["vyre.Buffer:upload"] = "^buf:upload",
      ["buf:device_ptr"] = "^buf:device_ptr",
      ["upload"] = "^buf:upload",
      ["k:when"] = "^k:when",
      ["for_"] = "^k:for_",
      ["sqrt"] = "^a:sqrt",
      [":land"] = "^a:land",
      ["and"] = "^a:band",
      ["Kernel"] = "^vyre%.Kernel",
      ["vyre.Graph"] = "^vyre%.Graph",
      ["cuda.device"] = "^cuda%.device",
      ["lib.sort"] = "^lib%.sort",
      ["be:run()"] = "^be:run",
    }) do
      assert.matches(want, printed(name), nil, false)
    end
  end)

  it("covers the e-graph, the policy, the profiles, the plan view and the planners",
    function()
      local egraph = require("vyre.egraph")
      local eg = egraph(vyre.backend("reference"))
      local out = printed(eg)
      assert.matches("^vyre%.EGraph", out)
      assert.matches("\n  eg:rebuild%(%) %-> rounds, unions, report", out)
      assert.matches("^eg:find%(c%)", printed(eg.find))
      assert.matches("^eg:free%(%)", printed(eg.free))
      eg:free()
      assert.matches("^vyre%.egraph%.from_image%(be", printed(egraph.from_image))
      assert.matches("\n  vyre%.egraph%.backoff%(", printed(egraph))
      assert.matches("^require%(\"vyre%.policy\"%)", printed(vyre.policy))
      assert.matches("^vyre%.policy%.decide%(facts", printed(vyre.policy.decide))
      assert.matches("^vyre%.profiles%.get%(name%)", printed("profiles.get"))
      -- vyre.profiles.get is vyre.cuda.profile: one function, either entry.
      assert.matches("^vyre%.[%w_.]+%(name%)", printed(vyre.profiles.get))
      assert.matches("^vyre%.plan_view%.attach%(plan%)", printed(vyre.plan_view.attach))
      assert.matches("^waves%.plan%(", printed(vyre.planners.waves.plan))
      assert.matches("^occupancy%.calc%(", printed("occupancy.calc"))
      assert.matches("^eg:union%(a, b%)", printed("eg:union"))
      assert.matches("^eg:run", printed("EGraph:run"))
      assert.matches("\n  vyre%.planners +capability%.check ", printed())
    end)

  it("lists every match of an ambiguous name, and suggests for an unknown one", function()
    local out = printed("free")
    assert.matches("^'free' is one of %d+:", out)
    assert.matches("\n  Buffer:free +buf:free%(%)", out)
    assert.matches("no help for 'nosuch'%. Fix: vyre%.help%(%) lists the topics",
      printed("nosuch"))
    assert.matches("Close: .*vyre%.lib%.segmented_reduce", printed("segmented"))
    assert.matches("no help for a number", printed(42))
  end)
end)

describe("vyre.help of the DSL builder", function()
  it("enumerates the builder's and the buffer handles' methods from their tables", function()
    local dsl = require("vyre.dsl")
    local k = builder()
    local n = 0
    for name, fn in pairs(dsl.Builder.__index) do
      assert.are.equal(fn, k[name], "k:" .. name .. " is not the builder's method")
      assert.is_string(entries["Builder:" .. name], "k:" .. name .. " has no help entry")
      n = n + 1
    end
    assert.is_true(n >= 17)
    for _, m in ipairs({ "converge", "grid_barrier", "for_", "ballot" }) do
      assert.is_function(dsl.Builder.__index[m], m)
    end
    assert.is_nil(dsl.Builder.__index._emit) -- internal, not listed
    for name in pairs(dsl.BufferHandle.__index) do
      assert.is_string(entries["Builder:" .. name], "k.buf:" .. name .. " has no help entry")
    end
    assert.matches("^k:converge%(flag, max, function", printed(k.converge))
    assert.matches("^k:grid_barrier%(%)", printed("k:grid_barrier"))
    assert.matches("\n  k:converge%(", printed(k))
  end)
end)

describe("vyre.help by walking the library", function()
  it("finds an entry for every function reachable from require('vyre.cuda')", function()
    -- the tables themselves, not a list: a new function anywhere below needs its entry
    local lib = require("vyre.cuda")
    local seen, miss, n = {}, {}, 0
    local function walk(t, path, depth)
      if seen[t] or depth > 4 then return end
      seen[t] = true
      local keys = {}
      for k in pairs(t) do keys[#keys + 1] = k end
      if t == lib then -- the lazily loaded modules, and the view's library underneath
        for k in pairs(vyre) do keys[#keys + 1] = k end
        for _, k in ipairs({ "lib", "egraph", "policy", "planners", "profiles", "plan_view" }) do
          keys[#keys + 1] = k
        end
      end
      for _, k in ipairs(keys) do
        local v = t[k]
        -- vyre.core is the C module under the library (documented through it), and
        -- names with a leading _ are internal
        if type(k) == "string" and not k:find("^_") and k ~= "core" then
          if type(v) == "function" then
            n = n + 1
            if not help.text(v) then miss[#miss + 1] = path .. "." .. k end
          elseif type(v) == "table" then
            walk(v, path .. "." .. k, depth + 1)
          end
        end
      end
    end
    walk(lib, "vyre", 0)
    for _, name in ipairs(vyre.planners.NAMES) do
      walk(vyre.planners[name], "vyre.planners." .. name, 1)
    end
    for tname in pairs(help.TYPES) do
      for k, fn in pairs(help.methods_of(tname) or {}) do
        if type(fn) == "function" and not k:find("^_") then
          n = n + 1
          if not help.text(fn) then miss[#miss + 1] = tname .. ":" .. k end
        end
      end
    end
    table.sort(miss)
    assert.are.same({}, miss)
    assert.is_true(n > 150, tostring(n))
  end)
end)
