-- 60: the `vyre` command line (lua/vyre/cli/*.lua, bin/vyre). The commands are called
-- in-process through vyre.cli.main with a capturing context; a few cases spawn
-- `lua5.4 bin/vyre` to check the launcher and its exit statuses.
local vyre = require("vyre")
local cli = require("vyre.cli")
local C = require("vyre.cli.common")
local check = require("vyre.cli.check")
local run = require("vyre.cli.run")
local bench = require("vyre.cli.bench")
local H = require("spec.helpers")

-- Runs `vyre argv...` in-process: status, stdout, stderr.
local function vy(...)
  local ctx = C.capture()
  local st = cli.main({ ... }, ctx)
  return st, ctx.stdout(), ctx.stderr()
end

local tmpdir = os.tmpname()
os.remove(tmpdir)
assert(os.execute("mkdir -p '" .. tmpdir .. "'"))

local function file(name, text)
  local path = tmpdir .. "/" .. name
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
  return path
end

local SAXPY = file("saxpy.vyre", [[
; saxpy, with a comment
(program saxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y))
    (then (store y i (add (mul a (load x i)) (load y i))))))
]])

-- Four problems on lines 4 and 8 (two per statement).
local BAD = file("bad.vyre", [[
(program bad (workgroup 64)
  (buffer v f32 read)
  (let i (gid x))
  (store v 0u32 1i32)
  (if (lt i (len v))
    (then
      (let j (add i 1u32))
      (store v i (add i 1.0f32)))))
]])

local SYNTAX = file("syntax.vyre", "(program s (workgroup 1)\n  (let a 1u32) (foo))\n")

local DBL_LUA_TEXT = [[
local p = vyre.program("dbl", {workgroup = 64, vyre.buffer("v", "i32", "read_write"),
    vyre.param("m", "i32")},
  function(k)
    local i = k:let("i", k.gid.x)
    k:when(i:lt(k.v:len()), function() k.v[i] = k.v[i] * k.m end)
  end)
return {program = p, args = {v = {1, 2, 3}, m = 2}}
]]
local DBL_LUA = file("dbl.lua", DBL_LUA_TEXT)

local BAD_LUA = file("badlua.lua", [[
return vyre.program("bad", {workgroup = 64, vyre.buffer("v", "f32", "read")}, function(k)
  local i = k:let("i", k.gid.x)
  k.v[i] = 1.0
  k.v[i + 1] = 2.0
end)
]])

local NOTHING_LUA = file("nothing.lua", "local x = 1\n")
local TWO_LUA = file("two.lua", [[
return {vyre.parse("(program a (workgroup 1) (buffer o u32 write 1) (store o 0u32 7u32))"),
  vyre.parse("(program b (workgroup 1) (buffer o u32 write 1) (store o 0u32 9u32))")}
]])

describe("vyre (top level)", function()
  it("--help and help list every command and exit 0", function()
    for _, argv in ipairs({ { "--help" }, { "-h" }, { "help" } }) do
      local st, out = vy(table.unpack(argv))
      assert.are.equal(0, st)
      for _, name in ipairs(cli.COMMANDS) do assert.matches("\n  " .. name .. " ", out, 1, true) end
    end
  end)

  it("no command prints the usage to stderr and exits 2", function()
    local st, out, err = vy()
    assert.are.equal(2, st)
    assert.are.equal("", out)
    assert.matches("usage: vyre COMMAND", err, 1, true)
  end)

  it("an unknown command says so, names the commands and exits 2", function()
    local st, _, err = vy("frobnicate")
    assert.are.equal(2, st)
    assert.matches("unknown command 'frobnicate'. Fix: use one of info, check", err, 1, true)
  end)

  it("every command has --help (exit 0) and `vyre help COMMAND` prints the same", function()
    for _, name in ipairs(cli.COMMANDS) do
      local st, out = vy(name, "--help")
      assert.are.equal(0, st, name)
      assert.matches("^usage: vyre " .. name, out)
      local st2, out2 = vy("help", name)
      assert.are.equal(0, st2)
      assert.are.equal(out, out2)
    end
    assert.are.equal(2, (vy("help", "nope")))
  end)

  it("--version prints the version", function()
    local st, out = vy("--version")
    assert.are.equal(0, st)
    assert.are.equal("vyre " .. vyre.version .. "\n", out)
  end)

  it("an unknown option is a usage error (exit 2) naming the command", function()
    local st, _, err = vy("check", "--frob", SAXPY)
    assert.are.equal(2, st)
    assert.matches("vyre check: unknown option '--frob'", err, 1, true)
  end)
end)

describe("vyre info", function()
  it("reports the version, whether CUDA is usable and the cache", function()
    local st, out = vy("info")
    assert.are.equal(0, st)
    assert.matches("^vyre " .. vyre.version:gsub("%.", "%%.") .. "\nCUDA: ", out)
    assert.matches("\ncubin cache: ", out, 1, true)
  end)
end)

describe("vyre check", function()
  it("accepts a valid text file and summarises it", function()
    local st, out = vy("check", SAXPY)
    assert.are.equal(0, st)
    assert.are.equal(SAXPY .. ": ok: program saxpy, workgroup 256x1x1, 2 buffers, 1 param, "
      .. "hash " .. vyre.parse(assert(C.read_file(SAXPY))):hash() .. "\n", out)
  end)

  it("lists every problem with FILE:LINE:COLUMN, code, path and Fix, and exits 1", function()
    local st, out = vy("check", BAD)
    assert.are.equal(1, st)
    local _, problems = vyre.validate(vyre.parse(assert(C.read_file(BAD))))
    assert.are.equal(4, #problems)
    for _, pr in ipairs(problems) do
      assert.matches(("error [%s] %s: %s"):format(pr.code, pr.path, pr.message), out, 1, true)
      assert.matches("    Fix: " .. pr.fix, out, 1, true)
    end
    assert.matches(BAD .. ":4:3: error [store-read-only] body[1]:", out, 1, true)
    assert.matches(BAD .. ":8:7: error [type-mismatch] body[2].then[1].value:", out, 1, true)
    assert.matches(BAD .. ": 4 problems\n", out, 1, true)
  end)

  it("reports a syntax error at its line and column", function()
    local st, out = vy("check", SYNTAX)
    assert.are.equal(1, st)
    assert.matches(SYNTAX .. ":2:17: error [syntax] expected a statement, found 'foo'", out, 1,
      true)
    assert.matches("    Fix: use let set store", out, 1, true)
  end)

  it("runs a Lua file and checks the program it returns", function()
    local st, out = vy("check", DBL_LUA, TWO_LUA)
    assert.are.equal(0, st)
    assert.matches(DBL_LUA .. ": ok: program dbl, workgroup 64x1x1, 1 buffer, 1 param", out, 1,
      true)
    assert.matches(TWO_LUA .. ": ok: program a", out, 1, true)
    assert.matches(TWO_LUA .. ": ok: program b", out, 1, true)
  end)

  it("lists every problem of a program the DSL rejected, the first at its Lua line", function()
    local st, out = vy("check", BAD_LUA)
    assert.are.equal(1, st)
    assert.matches(BAD_LUA .. ":3: error [store-read-only] body[1]:", out, 1, true)
    assert.matches(BAD_LUA .. ": error [store-read-only] body[2]:", out, 1, true)
    assert.matches(BAD_LUA .. ": 2 problems", out, 1, true)
  end)

  it("says how to fix a Lua file that returns no program", function()
    local st, out = vy("check", NOTHING_LUA)
    assert.are.equal(1, st)
    assert.matches("the file returned nothing, not a program", out, 1, true)
    assert.matches("Fix: end the file with `return p`", out, 1, true)
  end)

  it("checks every file, fails when any fails, and --quiet prints only problems", function()
    local st, out = vy("check", "--quiet", SAXPY, BAD)
    assert.are.equal(1, st)
    assert.not_matches("ok:", out, 1, true)
    assert.matches("error [store-read-only]", out, 1, true)
    local st2, out2 = vy("check", "-h")
    assert.are.equal(0, st2)
    assert.matches("--quiet", out2, 1, true)
  end)

  it("a missing file, a directory and no file are usage errors (2)", function()
    local st, out = vy("check", tmpdir .. "/missing.vyre")
    assert.are.equal(2, st)
    assert.matches("error [io] cannot read the file", out, 1, true)
    assert.matches("Fix: name a program file", out, 1, true)
    assert.are.equal(2, (vy("check")))
    -- A directory used to end in a Lua traceback (issue 26).
    st, out = vy("check", tmpdir)
    assert.are.equal(2, st)
    assert.matches(tmpdir .. ": error [io] cannot read the file: " .. tmpdir
      .. ": Is a directory", out, 1, true)
    -- With a valid file too: the missing one decides the status.
    assert.are.equal(2, (vy("check", SAXPY, tmpdir .. "/missing.vyre")))
    assert.are.equal(2, (vy("ptx", tmpdir)))
    assert.are.equal(2, (vy("run", tmpdir .. "/missing.vyre")))
  end)

  it("locates statements inside then, else and for blocks", function()
    local text = "(program p (workgroup 1)\n" -- line 1
      .. "  (buffer o u32 write)\n" --            line 2
      .. "  (for j 0u32 4u32\n" --                 line 3 (no step)
      .. "    (if (lt j 2u32)\n" --                 line 4
      .. "      (then (store o j j))\n" --          line 5
      .. "      (else\n" --                        line 6
      .. "        (let q j)\n" --                  line 7
      .. "        (store o j q)))))\n" --          line 8
    assert.are.same({ 2, 3 }, { check.locate(text, "decls[0]") })
    assert.are.same({ 3, 3 }, { check.locate(text, "body[0]") })
    assert.are.same({ 4, 5 }, { check.locate(text, "body[0].body[0].cond") })
    assert.are.same({ 5, 13 }, { check.locate(text, "body[0].body[0].then[0].value") })
    assert.are.same({ 8, 9 }, { check.locate(text, "body[0].body[0].else[1]") })
  end)
end)

describe("vyre ptx", function()
  it("prints the PTX for the target asked for (default sm_70)", function()
    local st, out = vy("ptx", SAXPY, "--sm", "90")
    assert.are.equal(0, st)
    assert.are.equal(vyre.ptx(vyre.parse(assert(C.read_file(SAXPY))), { sm = 90 }), out)
    local _, out70 = vy("ptx", SAXPY)
    assert.matches("%.target sm_70", out70)
    local _, out80 = vy("ptx", "--sm=80", SAXPY)
    assert.matches("%.target sm_80", out80)
  end)

  it("writes to a file with -o, and picks one program of several", function()
    local out = tmpdir .. "/b.ptx"
    assert.are.equal(0, (vy("ptx", TWO_LUA, "--program", "b", "-o", out)))
    local ptx = assert(C.read_file(out))
    assert.matches(".entry b(", ptx, 1, true)
    assert.not_matches(".entry a(", ptx, 1, true)
    local st, _, err = vy("ptx", TWO_LUA, "--program", "c")
    assert.are.equal(2, st)
    assert.matches("no program named 'c' (the file has: a, b)", err, 1, true)
  end)

  it("refuses an invalid program (1) and an unknown target (2)", function()
    local st, out = vy("ptx", BAD)
    assert.are.equal(1, st)
    assert.matches("error [type-mismatch]", out, 1, true)
    local st2, _, err = vy("ptx", SAXPY, "--sm", "61")
    assert.are.equal(2, st2)
    assert.matches("--sm 61 is not a PTX target", err, 1, true)
    assert.are.equal(2, (vy("ptx", SAXPY, "--sm", "x")))
  end)
end)

describe("vyre run", function()
  it("runs with inline lists and params and prints the written buffers", function()
    local st, out, err = vy("run", SAXPY, "x=1,2,3", "y=[1,1,1]", "a=2", "--backend", "reference")
    assert.are.equal(0, st)
    assert.are.equal("y = vyre.Array(f32, 3) [3.0, 5.0, 7.0]\n", out)
    assert.matches("^backend: reference", err)
  end)

  it("reads buffers from text and binary files and generators", function()
    local txt = file("x.txt", "# values\n1 2\n3, 4\n")
    local bin = file("y.bin", string.pack("<ffff", 10, 20, 30, 40))
    local _, out = vy("run", SAXPY, "x=@" .. txt, "y=@" .. bin, "a=0.5", "--backend=reference")
    assert.are.equal("y = vyre.Array(f32, 4) [10.5, 21.0, 31.5, 42.0]\n", out)
    _, out = vy("run", SAXPY, "x=iota:5", "y=fill:5:1.5", "a=1", "--backend", "reference")
    assert.are.equal("y = vyre.Array(f32, 5) [1.5, 2.5, 3.5, 4.5, 5.5]\n", out)
    _, out = vy("run", SAXPY, "x=zeros:2", "y=7", "a=1", "--backend", "reference")
    assert.are.equal("y = vyre.Array(f32, 1) [7.0]\n", out)
  end)

  it("takes defaults from a Lua file; the command line overrides them", function()
    local _, out = vy("run", DBL_LUA, "--backend", "reference")
    assert.are.equal("v = vyre.Array(i32, 3) [2, 4, 6]\n", out)
    _, out = vy("run", DBL_LUA, "m=-3", "v=iota:20", "--backend", "reference")
    assert.are.equal("v = vyre.Array(i32, 20) [0, -3, -6, -9, -12, -15, -18, -21, …, -48, -51, "
      .. "-54, -57]\n", out)
    _, out = vy("run", DBL_LUA, "m=1", "v=iota:20", "--full", "--backend", "reference")
    assert.matches("[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]", out,
      1, true)
  end)

  it("sizes an unbound write buffer, honours --n and --grid, and --time", function()
    local iota = file("iota.vyre", "(program iota (workgroup 4) (buffer o u32 write)\n"
      .. "  (let i (gid x)) (if (lt i (len o)) (then (store o i (mul i 2u32)))))\n")
    local st, out = vy("run", iota, "--n", "6", "--backend", "reference")
    assert.are.equal(0, st)
    assert.are.equal("o = vyre.Array(u32, 6) [0, 2, 4, 6, 8, 10]\n", out)
    st, out = vy("run", iota, "o=zeros:20", "--grid", "1", "--backend", "reference")
    assert.are.equal(0, st)
    assert.are.equal("o = vyre.Array(u32, 20) [0, 2, 4, 6, 0, 0, 0, 0, …, 0, 0, 0, 0]\n", out)
    st, out = vy("run", iota, "--n", "2", "--time", "--backend", "reference")
    assert.are.equal(0, st)
    assert.matches("\ntime: wall [%d.]+ [µnms]+, device ", out)
  end)

  it("takes a 2-D and 3-D --n, and refuses a 2-D program sized by a scalar --n", function()
    local img = file("img.vyre", "(program img (workgroup 8 8) (buffer o u32 write)\n"
      .. "  (param w u32) (param h u32) (let x (gid x)) (let y (gid y))\n"
      .. "  (if (land (lt x w) (lt y h)) (then (store o (add x (mul y w)) (add y 1u32)))))\n")
    local st, out = vy("run", img, "w=4", "h=3", "--n", "4,3", "--backend", "reference")
    assert.are.equal(0, st)
    assert.are.equal("o = vyre.Array(u32, 12) [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]\n", out)
    st, out = vy("run", img, "w=4", "h=3", "--n", "4x3", "--backend", "reference")
    assert.are.equal(0, st)
    assert.matches("[1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]", out, 1, true)
    local cube = file("cube.vyre", "(program cube (workgroup 2 2 2) (buffer o u32 write)\n"
      .. "  (let i (add (gid x) (mul 2u32 (add (gid y) (mul 2u32 (gid z))))))\n"
      .. "  (if (lt i (len o)) (then (store o i (gid z)))))\n")
    st, out = vy("run", cube, "--n", "2,2,2", "--backend", "reference")
    assert.are.equal(0, st)
    assert.are.equal("o = vyre.Array(u32, 8) [0, 0, 0, 0, 1, 1, 1, 1]\n", out)
    local err
    st, out, err = vy("run", img, "w=4", "h=3", "--n", "12", "--backend", "reference")
    assert.are.equal(1, st)
    assert.are.equal("", out) -- nothing computed, nothing printed
    assert.matches("program 'img' reads gid.y or wgid.y, but the launch is sized from a scalar "
      .. "n", err, 1, true)
    assert.matches("Fix: launch with n = {W, H} or grid = {x, y, z}", err, 1, true)
    for _, bad in ipairs({ "4,", "a,3", "1,2,3,4", "-1", "4,,3" }) do
      st, _, err = vy("run", img, "w=4", "h=3", "--n", bad, "--backend", "reference")
      assert.are.equal(2, st, bad)
      assert.matches("--n wants N or W,H[,D] of integers >= 0, got '" .. bad .. "'", err, 1,
        true)
    end
  end)

  it("counts out-of-bounds accesses with --debug", function()
    local shift = file("shift.vyre", H.SHIFT_OOB .. "\n")
    local st, out = vy("run", shift, "a=1,2,3,4", "o=zeros:4", "--debug", "--backend",
      "reference")
    assert.are.equal(0, st)
    assert.are.equal("o = vyre.Array(u32, 4) [0, 0, 2, 3]\n"
      .. "out of bounds: a: 1 loads, 0 stores\nout of bounds: o: 0 loads, 2 stores\n", out)
    local _, inb = vy("run", SAXPY, "x=1", "y=1", "a=1", "--debug", "--backend", "reference")
    assert.matches("\nout of bounds: none\n$", inb)
  end)

  it("prints 64-bit and special values exactly", function()
    local p = file("wide.vyre", "(program w (workgroup 1) (buffer u u64 read_write)\n"
      .. "  (buffer f f32 read_write) (buffer b bool read_write))\n")
    local _, out = vy("run", p, "u=18446744073709551615,5", "f=nan,-inf,0.1", "b=true,0",
      "--backend", "reference")
    assert.matches("u = vyre.Array(u64, 2) [18446744073709551615, 5]\n", out, 1, true)
    assert.matches("f = vyre.Array(f32, 3) [nan, -inf, 0.1]\n", out, 1, true)
    assert.matches("b = vyre.Array(bool, 2) [true, false]\n", out, 1, true)
  end)

  it("rejects unknown names, missing arguments and bad values (exit 2)", function()
    local function usage(want, ...)
      local st, _, err = vy("run", SAXPY, ...)
      assert.are.equal(2, st)
      assert.matches(want, err, 1, true)
    end
    usage("program 'saxpy' has no buffer or param 'b' (it declares: x, y, a)", "x=1", "y=1",
      "a=1", "b=2")
    usage("program 'saxpy' needs y=… (buffer f32 read_write), a=… (param f32)", "x=1")
    usage("a: 'two' is not a number (for f32)", "x=1", "y=1", "a=two")
    usage("'x' is not name=value", "x")
    usage("x: unknown generator 'rand:'", "x=rand:3", "y=1", "a=1")
    usage("unknown backend 'gpu'", "x=1", "y=1", "a=1", "--backend", "gpu")
    usage("--grid wants X[,Y[,Z]]", "x=1", "y=1", "a=1", "--grid", "0")
  end)

  it("refuses integers outside their type (exit 2 with a Fix), never wraps them", function()
    local p = file("ints.vyre", "(program ints (workgroup 1) (buffer u u64 read_write)\n"
      .. "  (buffer w u32 read_write) (buffer s i32 read_write) (buffer l i64 read_write)\n"
      .. "  (param a u64))\n")
    local ok = { "w=1", "s=1", "l=1", "a=1" }
    local function refused(arg, want)
      local args = { "run", p, "u=1" }
      for _, a in ipairs(ok) do
        if a:sub(1, 2) ~= arg:sub(1, 2) then args[#args + 1] = a end
      end
      args[#args + 1] = arg
      args[#args + 1] = "--backend=reference"
      local st, out, err = vy(table.unpack(args))
      assert.are.equal(2, st, arg)
      assert.are.equal("", out)
      assert.matches(want, err, 1, true)
      assert.matches("Fix: pass a value in that range", err, 1, true)
    end
    -- 2^64 used to become 0 and 0x1FFFFFFFFFFFFFFFF 2^64 - 1 (issue 26).
    refused("a=18446744073709551616", "'18446744073709551616' is out of range for u64 "
      .. "(0 .. 18446744073709551615)")
    refused("a=0x1FFFFFFFFFFFFFFFF", "'0x1FFFFFFFFFFFFFFFF' is out of range for u64")
    refused("a=-1", "'-1' is out of range for u64")
    refused("w=4294967296", "w: element 1: '4294967296' is out of range for u32 "
      .. "(0 .. 4294967295)")
    refused("w=fill:2:-1", "'-1' is out of range for u32")
    refused("s=1,2147483648", "s: element 2: '2147483648' is out of range for i32")
    refused("s=-2147483649", "'-2147483649' is out of range for i32")
    refused("l=9223372036854775808", "'9223372036854775808' is out of range for i64")
    refused("l=-0x8000000000000001", "out of range for i64")
    -- The ends of every range pass, in decimal and hex.
    local st, out = vy("run", p, "u=18446744073709551615,0xffffffffffffffff",
      "w=4294967295,0", "s=-2147483648,2147483647", "l=-9223372036854775808,1e3",
      "a=0xFFFFFFFFFFFFFFFF", "--backend", "reference")
    assert.are.equal(0, st)
    assert.matches("u = vyre.Array(u64, 2) [18446744073709551615, 18446744073709551615]", out,
      1, true)
    assert.matches("w = vyre.Array(u32, 2) [4294967295, 0]", out, 1, true)
    assert.matches("s = vyre.Array(i32, 2) [-2147483648, 2147483647]", out, 1, true)
    assert.matches("l = vyre.Array(i64, 2) [-9223372036854775808, 1000]", out, 1, true)
  end)

  it("refuses a generator count past the array limit cleanly (exit 2)", function()
    for _, gen in ipairs({ "zeros:99999999999999", "iota:99999999999999",
      "fill:99999999999999:1" }) do
      local st, out, err = vy("run", SAXPY, "x=" .. gen, "y=1", "a=1", "--backend", "reference")
      assert.are.equal(2, st, gen)
      assert.are.equal("", out)
      assert.matches("99999999999999 elements is more than the limit", err, 1, true)
      assert.matches("Fix: ", err, 1, true)
      assert.is_nil(err:find("traceback", 1, true))
    end
  end)

  it("reports a run that raises (exit 1) and an invalid program (exit 1)", function()
    -- The Lua file's own defaults reach be:run, which raises: the work failed.
    local raises = file("raises.lua", (DBL_LUA_TEXT:gsub("m = 2}", "m = 99999999999}")))
    local st, _, err = vy("run", raises, "--backend", "reference")
    assert.are.equal(1, st)
    assert.matches("vyre run: vyre.Backend:run: ", err, 1, true)
    assert.are.equal(1, (vy("run", BAD, "v=1")))
  end)

  it("builds args tables in-process (run.build_args)", function()
    local p = vyre.parse(assert(C.read_file(SAXPY)))
    local args = assert(run.build_args(p, { "x=1,2", "a=0x10" }, { y = { 5, 6 } }))
    assert.are.same({ 1.0, 2.0 }, args.x)
    assert.are.same({ 5, 6 }, args.y)
    assert.are.equal(16.0, args.a)
  end)

  it("runs on CUDA when asked and gives the reference's bits #gpu", function()
    local st, out = vy("run", SAXPY, "x=iota:1000", "y=fill:1000:0.1", "a=3.3", "--full",
      "--backend", "cuda")
    assert.are.equal(0, st)
    local _, ref = vy("run", SAXPY, "x=iota:1000", "y=fill:1000:0.1", "a=3.3", "--full",
      "--backend", "reference")
    assert.are.equal(ref, out)
    -- --debug: the device's out-of-bounds counts are the reference's
    local shift = file("shift_gpu.vyre", H.SHIFT_OOB .. "\n")
    local _, dref = vy("run", shift, "a=1,2,3,4", "o=zeros:4", "--debug", "--backend",
      "reference")
    local _, dgpu = vy("run", shift, "a=1,2,3,4", "o=zeros:4", "--debug", "--backend", "cuda")
    assert.are.equal(dref, dgpu)
    assert.is_false(vyre.backend("cuda"):debug()) -- switched back off after the run
  end)
end)

describe("vyre bench", function()
  it("measures every row on the reference backend and checks each result", function()
    local rows = bench.measure(vyre.backend("reference"), { n = 1000, launches = 10, reps = 1 })
    local names = {}
    for _, r in ipairs(rows) do
      names[#names + 1] = r.name
      assert.is_true(r.value > 0 and r.value < math.huge, r.name)
    end
    assert.are.same({ "launch", "from table", "run", "upload", "download", "copy kernel",
      "saxpy kernel", "lib.reduce" }, names)
  end)

  it("prints a table (exit 0); bad options are usage errors", function()
    local st, out = vy("bench", "--backend", "reference", "--n", "512", "--launches", "4",
      "--reps", "1")
    assert.are.equal(0, st)
    assert.matches("^vyre bench, backend: reference", out)
    assert.matches("\nsaxpy kernel +[%d.]+  GB/s  512 f32", out)
    assert.are.equal(2, (vy("bench", "--n", "0")))
    assert.are.equal(2, (vy("bench", "extra")))
  end)

  it("runs on CUDA #gpu", function()
    local st, out = vy("bench", "--backend", "cuda", "--n", "1048576", "--launches", "100")
    assert.are.equal(0, st, out)
    assert.matches("^vyre bench, backend: cuda", out)
  end)
end)

describe("exit statuses of every subcommand (docs/CLI.md)", function()
  it("usage errors exit 2 with a message and no traceback", function()
    local missing = tmpdir .. "/missing.vyre"
    local cases = {
      { "info", "--bogus" }, { "info", "extra" },
      { "check" }, { "check", "--bogus", SAXPY }, { "check", missing }, { "check", tmpdir },
      { "ptx" }, { "ptx", "--bogus", SAXPY }, { "ptx", missing }, { "ptx", tmpdir },
      { "ptx", SAXPY, "--sm", "12" }, { "ptx", SAXPY, "--sm", "x" },
      { "ptx", SAXPY, "--program", "nope" },
      { "run" }, { "run", "--bogus", SAXPY }, { "run", missing }, { "run", tmpdir },
      { "run", SAXPY, "x=1", "y=1", "a=1", "--backend", "gpu" },
      { "run", SAXPY, "x=1", "y=1", "a=1", "--program", "nope" },
      { "run", SAXPY, "x=1", "y=1", "a=1e400" }, { "run", SAXPY, "x=1e39", "y=1", "a=1" },
      { "run", SAXPY, "x=zeros:-1", "y=1", "a=1" },
      { "bench", "--bogus" }, { "bench", "extra" }, { "bench", "--n", "0" },
      { "bench", "--backend", "gpu" },
      { "repl", "--bogus" }, { "repl", "extra" },
      { "help", "nope" }, { "nope" }, {},
    }
    for _, argv in ipairs(cases) do
      local st, out, err = vy(table.unpack(argv))
      local what = "vyre " .. table.concat(argv, " ")
      assert.are.equal(2, st, what)
      -- check, ptx and run list a file's problems on stdout, the rest go to stderr
      assert.is_true(#err > 0 or out:find("error [io]", 1, true) ~= nil, what)
      assert.is_nil((out .. err):find("traceback", 1, true), what)
    end
  end)

  it("failed work exits 1", function()
    assert.are.equal(1, (vy("check", BAD)))
    assert.are.equal(1, (vy("ptx", BAD)))
    assert.are.equal(1, (vy("run", BAD, "v=1")))
    assert.are.equal(1, (vy("ptx", SAXPY, "-o", tmpdir .. "/no/such/dir/out.ptx")))
  end)
end)

describe("bin/vyre (a separate process)", function()
  local function spawn(args)
    local ok, how, code = os.execute("lua5.4 bin/vyre " .. args .. " >/dev/null 2>&1")
    assert.are.equal("exit", how)
    return ok and 0 or code
  end

  it("exits 0 for --help and a valid check, 1 for problems, 2 for usage errors", function()
    assert.are.equal(0, spawn("--help"))
    assert.are.equal(0, spawn("run --help"))
    assert.are.equal(0, spawn("check " .. SAXPY))
    assert.are.equal(1, spawn("check " .. BAD))
    assert.are.equal(2, spawn(""))
    assert.are.equal(2, spawn("frobnicate"))
    assert.are.equal(2, spawn("ptx --sm 12 " .. SAXPY))
    assert.are.equal(2, spawn("check " .. tmpdir))
    assert.are.equal(2, spawn("run " .. SAXPY .. " x=zeros:99999999999999 y=1 a=1"))
  end)

  it("ends usage errors with a message, not a Lua traceback", function()
    for _, args in ipairs({ "check " .. tmpdir, "ptx " .. tmpdir,
      "run " .. SAXPY .. " x=zeros:99999999999999 y=1 a=1 --backend reference" }) do
      local p = io.popen("lua5.4 bin/vyre " .. args .. " 2>&1")
      local out = p:read("a")
      p:close()
      assert.is_nil(out:find("traceback", 1, true), out)
      assert.matches("Fix: ", out, 1, true)
    end
  end)

  it("runs a program and prints its result on stdout", function()
    local p = io.popen("lua5.4 bin/vyre run " .. SAXPY
      .. " x=1,2 y=0,0 a=4 --backend reference 2>/dev/null")
    local out = p:read("a")
    assert.is_true(p:close())
    assert.are.equal("y = vyre.Array(f32, 2) [4.0, 8.0]\n", out)
  end)

  it("runs no shell code from its own path (issue 26)", function()
    -- bin/vyre lists build*/ next to itself through the shell: a path holding " and $( )
    -- used to run that command.
    local dir = tmpdir .. '/x"$(touch pwned)"y'
    assert(os.execute("mkdir -p '" .. dir .. "/bin' && cp bin/vyre '" .. dir .. "/bin/vyre'"))
    local p = io.popen("cd '" .. tmpdir .. "' && lua5.4 '" .. dir .. "/bin/vyre' --version")
    local out = p:read("a")
    p:close()
    assert.are.equal("vyre " .. vyre.version .. "\n", out)
    assert.is_nil(io.open(tmpdir .. "/pwned", "rb"))
  end)

  it("works from another directory (paths relative to the script)", function()
    local here = io.popen("pwd"):read("l")
    local p = io.popen("cd / && lua5.4 '" .. here .. "/bin/vyre' --version")
    local out = p:read("a")
    assert.is_true(p:close())
    assert.are.equal("vyre " .. vyre.version .. "\n", out)
  end)
end)

teardown(function()
  os.execute("rm -rf '" .. tmpdir .. "'")
end)
