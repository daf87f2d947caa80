-- 08: errors name the function and say how to fix the call; userdata release
-- is idempotent through free/__close/__gc; nothing is left alive; and every
-- program the specs built round-trips through its text.
local vyre = require("vyre")
local H = require("spec.helpers")

describe("errors name the function and give a fix", function()
  local be, p, k

  before_each(function()
    be = H.ref()
    p = H.saxpy()
    k = be:compile(p)
  end)

  it("reports a missing param with its type and an example", function()
    local x, y = be:buffer("f32", 1), be:buffer("f32", 1)
    assert.are.equal("vyre.Kernel:launch: missing param 'a' (f32). Fix: pass it in the args "
      .. "table: {a = 1.5}", H.error_of(k.launch, k, { x = x, y = y }))
    assert.are.equal("vyre.Backend:run: missing param 'a' (f32). Fix: pass it in the args "
      .. "table: {a = 1.5}", H.error_of(be.run, be, p, { x = {}, y = {} }))
  end)

  it("reports unknown names, listing the declared ones", function()
    assert.matches("vyre.Backend:run: unknown argument 'z': program 'saxpy' declares x, y, a. "
      .. "Fix:", H.error_of(be.run, be, p, { x = {}, y = {}, a = 1.0, z = 1 }), 1, true)
  end)

  it("reports values of the wrong kind", function()
    assert.matches("param 'a' (f32) needs a number, got string. Fix: pass {a = 1.5}",
      H.error_of(be.run, be, p, { x = {}, y = {}, a = "2" }), 1, true)
    assert.matches("buffer 'x' (f32, read) needs a buffer, vyre.Array or table, got number",
      H.error_of(be.run, be, p, { x = 1, y = {}, a = 1.0 }), 1, true)
    assert.matches("vyre.Backend:run: missing buffer 'x' (f32, read). Fix:",
      H.error_of(be.run, be, p, { y = {}, a = 1.0 }), 1, true)
    assert.matches("vyre.Backend:run: buffer 'x' is declared f32 but the array holds i32",
      H.error_of(be.run, be, p, { x = vyre.array("i32", 1), y = {}, a = 1.0 }), 1, true)
    assert.matches("vyre.Backend:run: buffer 'y': element [1] must be a number",
      H.error_of(be.run, be, p, { x = {}, y = { "q" }, a = 1.0 }), 1, true)
    local b = H.ref():buffer("f32", 1)
    assert.matches("vyre.Kernel:launch: buffer 'x' must be a vyre.Buffer of this reference "
      .. "backend", H.error_of(k.launch, k, { x = b, y = b, a = 1.0 }), 1, true)
    assert.matches("vyre.Kernel:launch: buffer 'x' must be a vyre.Buffer",
      H.error_of(k.launch, k, { x = vyre.array("f32", 1), y = b, a = 1.0 }), 1, true)
  end)

  it("range-checks param values", function()
    local q = H.parse([[
(program pi (workgroup 1)
  (buffer o i32 write 1)
  (param n i32)
  (store o 0u32 n))
]])
    assert.matches("vyre.Backend:run: param 'n' = 2147483648 is out of range for i32",
      H.error_of(be.run, be, q, { n = 2 ^ 31 | 0 }), 1, true)
    assert.matches("vyre.Backend:run: param 'n' = 1.5 is not an exact integer",
      H.error_of(be.run, be, q, { n = 1.5 }), 1, true)
  end)

  it("rejects invalid programs in run and compile, naming the function", function()
    local bad = H.parse("(program bad (workgroup 1) (buffer o u32 write) (store o 0u32 1.5f32))")
    assert.matches("^vyre.Backend:run: invalid program 'bad': 1 problem:",
      H.error_of(be.run, be, bad, {}))
    assert.matches("^vyre.Backend:compile: invalid program 'bad'", H.error_of(be.compile, be, bad))
  end)

  it("rejects bad opts and grids", function()
    assert.matches("vyre.Backend:run: opts.n must be a non-negative integer",
      H.error_of(be.run, be, p, { x = {}, y = {}, a = 1.0 }, { n = -1 }), 1, true)
    assert.matches("vyre.Backend:run: grid axis 1 must be an integer >= 1",
      H.error_of(be.run, be, p, { x = {}, y = {}, a = 1.0 }, { grid = { 0 } }), 1, true)
    assert.matches("vyre.Backend:run: args must be a table",
      H.error_of(be.run, be, p, 5), 1, true)
  end)

  it("rejects methods called with a dot", function()
    assert.matches("vyre.Backend:run: called on a vyre.Program, not a vyre.Backend",
      H.error_of(be.run, p, {}), 1, true)
    assert.matches("bad argument #1 to '.-' %(vyre.Program expected, got string%)",
      H.error_of(p.text, "x"))
  end)
end)

describe("lifecycle", function()
  it("frees buffers idempotently and rejects use after free", function()
    local be = H.ref()
    local b = be:buffer("u32", 8)
    b:free()
    b:free()
    assert.matches("vyre.Buffer:download: the buffer was freed. Fix:",
      H.error_of(b.download, b), 1, true)
    assert.matches("freed", tostring(b), 1, true)
    assert.are.equal(0, be:stats().live_buffers)
  end)

  it("releases buffers at the end of a <close> scope", function()
    local be = H.ref()
    local fn = load([[
      local be = ...
      do
        local b <close> = be:buffer("f32", 4)
        assert(be:stats().live_buffers == 1)
      end
      return be:stats().live_buffers
    ]])
    assert.are.equal(0, fn(be))
  end)

  it("releases buffers in __gc", function()
    local be = H.ref()
    do
      be:buffer("f32", 16)
      be:buffer("f32", 16)
    end
    collectgarbage()
    collectgarbage()
    assert.are.equal(0, be:stats().live_buffers)
    assert.are.equal(0, be:stats().live_buffer_bytes)
  end)

  it("frees programs and arrays idempotently with :free / <close>", function()
    local p = vyre.parse(H.saxpy_text)
    p:free()
    p:free()
    assert.matches("vyre.Program was freed", H.error_of(p.text, p), 1, true)
    assert.matches("vyre.Program (freed)", tostring(p), 1, true)
    local a = vyre.array("f32", 4)
    a:free()
    a:free()
    assert.are.equal(0, #a)
    assert.matches("vyre.Array was freed", H.error_of(function() return a[1] end), 1, true)
    assert.matches("vyre.Array (freed)", tostring(a), 1, true)
    local fn = load([[
      local vyre = ...
      local keep
      do
        local q <close> = vyre.parse("(program c (workgroup 1))")
        local arr <close> = vyre.array("u32", 2)
        keep = { q, arr }
      end
      return keep
    ]])
    local keep = fn(vyre)
    assert.are.equal(0, #keep[2])
    assert.matches("was freed", H.error_of(keep[1].text, keep[1]), 1, true)
  end)

  it("gives every userdata and object a named metatable and a __tostring", function()
    local be = H.ref()
    local objs = { vyre.array("u32", 1), H.saxpy(), be, be:buffer("u32", 1),
      be:compile(H.saxpy()) }
    local names = { "vyre.Array", "vyre.Program", "vyre.Backend", "vyre.Buffer",
      "vyre.Kernel" }
    for i, o in ipairs(objs) do
      local mt = getmetatable(o)
      assert.are.equal(names[i], mt.__name)
      assert.is_function(mt.__tostring)
      assert.is_function(mt.__close)
      assert.is_function(mt.__gc)
    end
  end)
end)
