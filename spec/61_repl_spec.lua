-- 61: vyre repl (lua/vyre/cli/repl.lua) and the value printer it uses
-- (lua/vyre/cli/pretty.lua). Sessions are fed lines through repl.eval / session:feed, so
-- no terminal is needed.
local vyre = require("vyre")
local repl = require("vyre.cli.repl")
local pretty = require("vyre.cli.pretty")
local C = require("vyre.cli.common")

local function eval(lines) return (repl.eval(lines)) end

describe("the REPL", function()
  it("prints the value of an expression and nothing for a statement", function()
    assert.are.equal("2\n", eval({ "1 + 1" }))
    assert.are.equal("", eval({ "x = 5" }))
    assert.are.equal("10\n", eval({ "x = 5", "x * 2" }))
    assert.are.equal("1\thello\n", eval({ "1, 'hello'" }))
    assert.are.equal("3\n", eval({ "=1 + 2" }))
  end)

  it("continues unfinished input on the next line", function()
    local s = repl.session({ out = function() end })
    assert.are.equal("> ", s:prompt())
    assert.are.equal("more", s:feed("function f(a)"))
    assert.are.equal(">> ", s:prompt())
    assert.are.equal("more", s:feed("  return a * 2"))
    assert.are.equal("ok", s:feed("end"))
    assert.are.equal("> ", s:prompt())
    assert.are.equal("84\n", eval({ "function f(a)", "return a * 2", "end", "f(42)" }))
    assert.are.equal("3\n", eval({ "1 +", "2" }))
    assert.are.equal("{1, 2}\n", eval({ "t = {", "1,", "2}", "t" }))
  end)

  it("shows errors and keeps going", function()
    local out = eval({ "error('boom')", "nil + 1", "if then", "40 + 2" })
    assert.matches("^error: stdin:1: boom\n", out)
    assert.matches("\nerror: stdin:1: attempt to perform arithmetic on a nil value\n", out)
    assert.matches("\nerror: stdin:1: unexpected symbol near 'then'\n", out)
    assert.matches("\n42\n$", out)
    assert.matches("error: %(error object is a table value%)",
      eval({ "error({})" }))
  end)

  it("has vyre = require(\"vyre.cuda\"): the library and the device functions", function()
    assert.are.equal("true\ttrue\ttrue\n", eval({
      "vyre == require('vyre.cuda'), vyre.program == require('vyre').program, "
        .. "type(vyre.device) == 'function'" }))
    assert.are.equal("true\n", eval({ "vyre.cuda.device == vyre.device" }))
  end)

  it("survives a value whose __tostring raises (and keeps going)", function()
    local bad = "bad = setmetatable({}, {__name = 'Bad', __tostring = function() "
      .. "error('no text', 0) end})"
    local out = eval({ bad, "bad", "{[bad] = 1, [setmetatable({}, getmetatable(bad))] = 2}",
      "print(bad, 1)", "pp(bad)", "error(bad)", "40 + 2" })
    local shown = "<value: __tostring raised: no text>"
    assert.are.equal(table.concat({ shown, shown, shown .. "\t1", shown, "error: " .. shown,
      "42" }, "\n") .. "\n", out)
    -- An error whose __tostring raises an object whose __tostring raises too.
    out = eval({ bad, "error(setmetatable({}, {__tostring = function() error(bad) end}))",
      "1" })
    assert.are.equal("error: <value: __tostring raised: (a table whose __tostring raised)>\n"
      .. "1\n", out)
  end)

  it("keeps `local` names for the following lines", function()
    assert.are.equal("7\n", eval({ "local y = 7", "y" }))
    assert.are.equal("9\n", eval({ "local function sq(a) return a * a end", "sq(3)" }))
    assert.are.equal("5\n", eval({ "local a, b = 2, 3", "a + b" }))
  end)

  it("stops at exit or quit", function()
    assert.are.equal("1\n", eval({ "1", "exit", "2" }))
    assert.are.equal("", eval({ "quit", "2" }))
  end)

  it("has vyre, lib, be, help and pp defined, print going to the session", function()
    local out = eval({ "vyre.version", "be.name", "type(lib.reduce)", "print('a', 1)",
      "pp({b = 1})" })
    assert.are.equal(vyre.version .. "\n" .. vyre.backend().name .. "\nfunction\na\t1\n{b = 1}\n",
      out)
    local h = eval({ "help(vyre.array)" })
    assert.matches("^vyre%.array%(type, n | table | binary string%) %-> Array\n", h)
    assert.matches("no help for 'nosuch'", eval({ "help('nosuch')" }), 1, true)
  end)

  it("prints vyre objects usefully", function()
    local out = eval({
      "ref = vyre.backend('reference')",
      "ref",
      "p = vyre.parse('(program inc (workgroup 1) (buffer v u32 read_write))')",
      "p.name, p.workgroup",
      "buf = ref:buffer('u32', {1, 2, 3})",
      "buf",
      "ref:compile(p)",
      "vyre.array('f32', {0.1, 2, 3})",
      "ref:run(p, {v = {4, 5}})",
      "p",
    })
    local want = table.concat({
      "vyre.Backend(reference)",
      "inc\t{1, 1, 1, x = 1, y = 1, z = 1}",
      "vyre.Buffer(reference, u32, 3)",
      "vyre.Kernel(reference, inc)",
      "vyre.Array(f32, 3) [0.1, 2.0, 3.0]",
      "{v = vyre.Array(u32, 2) [4, 5]}\t0", -- be:run: results, rounds
      "(program inc (workgroup 1)\n  (buffer v u32 read_write))",
    }, "\n") .. "\n"
    assert.are.equal(want, out)
    local stats = eval({ "vyre.backend('reference'):stats()" })
    assert.matches("^{\n  buffers_created = 0,\n", stats)
    assert.matches("\n  live_buffers = 0,\n", stats, 1, true)
  end)

  it("runs -e code and a whole input through run(); prompts only when not quiet", function()
    local lines = { "x = 20", "x + 1" }
    local i = 0
    local function input()
      i = i + 1
      return lines[i]
    end
    local ctx = C.capture()
    assert.are.equal(0, repl.run({ "-e", "y = 1" }, ctx, input))
    local out = ctx.stdout()
    assert.matches("^vyre " .. vyre.version:gsub("%.", "%%.") .. " on Lua 5%.4", out)
    assert.matches("\n> > 21\n> \n$", out)
    i = 0
    local q = C.capture()
    assert.are.equal(0, repl.run({ "--quiet", "-e", "print(y)" }, q, input))
    assert.are.equal("nil\n21\n", q.stdout())
    assert.are.equal(2, repl.run({ "--bogus" }, C.capture(), input))
  end)
end)

describe("the value printer", function()
  it("sorts keys, quotes nested strings and leaves a top-level string alone", function()
    assert.are.equal('{1, 2, [5] = "x", a = 1, b = {c = true}}',
      pretty({ 1, 2, [5] = "x", b = { c = true }, a = 1 }))
    assert.are.equal("a\nb", pretty("a\nb"))
    assert.are.equal('{"a\\nb"}', pretty({ "a\nb" }))
    assert.are.equal('{["a key"] = 1}', pretty({ ["a key"] = 1 }))
    assert.are.equal("{}", pretty({}))
  end)

  it("marks cycles, limits depth and item counts, and wraps long tables", function()
    local t = { name = "t" }
    t.self = t
    assert.are.equal('{name = "t", self = <cycle>}', pretty(t))
    assert.are.equal("{{{{{{…}}}}}}", pretty({ { { { { { 1 } } } } } }, { depth = 5 }))
    local many = {}
    for i = 1, 60 do many[i] = i end
    local text = pretty(many)
    assert.matches("^{\n  1, 2, 3, ", text)
    assert.matches(" 50, … %(10 more%)\n}$", text)
    for line in text:gmatch("[^\n]+") do assert.is_true(#line <= 80) end
    local long = {}
    for i = 1, 8 do long["key" .. i] = ("v"):rep(10) end
    assert.matches('^{\n  key1 = "vvvvvvvvvv",\n  key2 = ', pretty(long))
  end)

  it("shows arrays with type, length and first/last elements", function()
    local a = vyre.array("i32", 100)
    for i = 1, 100 do a[i] = i end
    assert.are.equal("vyre.Array(i32, 100) [1, 2, 3, 4, 5, 6, 7, 8, …, 97, 98, 99, 100]",
      pretty(a))
    assert.are.equal("vyre.Array(f64, 0) []", pretty(vyre.array("f64", 0)))
    local f = vyre.array("f32", { 0.1, 1 / 3, 1e30 })
    assert.are.equal("vyre.Array(f32, 3) [0.1, 0.33333334, 1e+30]", pretty(f))
    local u = vyre.array("u64", { -1 })
    assert.are.equal("vyre.Array(u64, 1) [18446744073709551615]", pretty(u))
    a:free()
    assert.matches("^vyre%.Array %(freed%)", pretty(a))
  end)

  it("prints floats so that they read back exactly", function()
    for _, x in ipairs({ 0.1, 1 / 3, 2 ^ -1074, 1e300, -0.0, 123456789.125 }) do
      assert.are.equal(x, tonumber(pretty(x)))
      assert.matches("[.eni]", pretty(x))
    end
  end)
end)
