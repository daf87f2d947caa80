-- 09: the object contract of §7 for every type the module hands out: named
-- metatables, __tostring, one idempotent release shared by :free()/__close/__gc,
-- `<close>` scopes, use after free that names the function and says how to fix
-- it, children that keep their parents alive; and misuse of the public functions
-- raising "vyre.<function>: ... Fix: ..." while environmental failures return nil,
-- reason. CUDA types cannot be created without a GPU: their metatables are checked
-- in the registry (and with a device under the `gpu` tag).
local vyre = require("vyre")
local H = require("spec.helpers")

--- Asserts that msg names fname ("fname: ...") and carries a "Fix:".
local function assert_named(msg, fname)
  assert(msg:find(fname .. ": ", 1, true), "error does not name " .. fname .. ": " .. msg)
  assert(msg:find("Fix:", 1, true), "error has no Fix: " .. msg)
end

--- Calls fn(...) expecting an error that names fname and carries a Fix; returns it.
local function misuse(fname, fn, ...)
  local msg = H.error_of(fn, ...)
  assert_named(msg, fname)
  return msg
end

--- Runs `code` as a chunk (Lua 5.4 syntax such as <close>) with vyre as `...`.
local function chunk(code, ...)
  return assert(load(code, "=chunk", "t"))(...)
end

local tiny_text = "(program tiny (workgroup 1)\n  (buffer o u32 write 1)\n  (store o 0u32 7u32))\n"

-- One freshly made object of each kind that exists without a GPU, with what its
-- tostring looks like live and freed, and a method that must fail after release.
local function kinds()
  local be = H.ref()
  return {
    { name = "vyre.Program", make = function() return vyre.parse(tiny_text) end,
      live = "^%(program tiny", freed = "^vyre%.Program %(freed%)",
      use = function(p) return p:text() end, fname = "vyre.Program:text" },
    { name = "vyre.Array", make = function() return vyre.array("u32", { 1, 2 }) end,
      live = "^vyre%.Array%(u32, 2%)", freed = "^vyre%.Array %(freed%)",
      use = function(a) return a:totable() end, fname = "vyre.Array:totable" },
    { name = "vyre.Buffer", make = function() return be:buffer("u32", 4) end,
      live = "^vyre%.Buffer%(reference, u32, 4%)$", freed = "freed",
      use = function(b) return b:download() end, fname = "vyre.Buffer:download" },
    { name = "vyre.Kernel", make = function() return be:compile(vyre.parse(tiny_text)) end,
      live = "^vyre%.Kernel%(reference, tiny%)$",
      freed = "^vyre%.Kernel%(reference, tiny, freed%)$",
      use = function(k) return k:launch({}) end, fname = "vyre.Kernel:launch" },
  }
end

describe("objects without a GPU", function()
  for _, kind in ipairs(kinds()) do
    describe(kind.name, function()
      it("has a named metatable with __tostring, __gc and __close", function()
        local mt = getmetatable(kind.make())
        assert.are.equal(kind.name, mt.__name)
        assert.is_function(mt.__tostring)
        assert.is_function(mt.__gc)
        assert.is_function(mt.__close)
      end)

      it("prints what it is, live and freed", function()
        local x = kind.make()
        assert.matches(kind.live, tostring(x))
        x:free()
        assert.matches(kind.freed, tostring(x))
      end)

      it("releases idempotently through :free(), __close and __gc", function()
        local x = kind.make()
        local mt = getmetatable(x)
        x:free()
        x:free()
        mt.__close(x, nil)
        mt.__gc(x)
        x:free()
        assert.matches(kind.freed, tostring(x))
      end)

      it("raises on use after free, naming the function and the fix", function()
        local x = kind.make()
        x:free()
        local msg = misuse(kind.fname, kind.use, x)
        assert.truthy(msg:find("freed", 1, true), msg)
      end)

      it("is released at the end of a <close> scope", function()
        local kept = chunk([[
          local make = ...
          local keep
          do
            local x <close> = make()
            keep = x
          end
          return keep
        ]], kind.make)
        assert.matches(kind.freed, tostring(kept))
      end)
    end)
  end

  it("a kernel keeps its program alive, and a buffer its backend", function()
    local be = H.ref()
    local k = be:compile(vyre.parse(tiny_text))
    local b = be:buffer("u32", 1)
    be = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.are.equal("tiny", k.program.name)
    k:launch({ o = b }, { n = 1 })
    assert.are.same({ 7 }, b:download():totable())
  end)

  it("a freed kernel drops its program and says how to get a new one", function()
    local k = H.ref():compile(vyre.parse(tiny_text))
    k:free()
    assert.is_nil(k.program)
    assert.are.equal("vyre.Kernel:launch: the kernel was freed. Fix: compile it again with "
      .. "be:compile(p)", H.error_of(k.launch, k, {}))
    misuse("vyre.Kernel:info", k.info, k)
  end)

  it("a kernel whose program was freed reports it by name", function()
    local p = vyre.parse(tiny_text)
    local k = H.ref():compile(p)
    p:free()
    assert.matches("^vyre%.Kernel%(reference, tiny%)$", tostring(k))
    local msg = misuse("vyre.Kernel:launch", k.launch, k, {})
    assert.truthy(msg:find("vyre.Program was freed", 1, true), msg)
  end)

  it("the reference backend has a named metatable and prints its name", function()
    local be = H.ref()
    local mt = getmetatable(be)
    assert.are.equal("vyre.Backend", mt.__name)
    assert.are.equal("vyre.Backend(reference)", tostring(be))
    assert.is_function(mt.__close)
  end)
end)

describe("object types (by their registered metatables)", function()
  -- Every class the C module registers: one type per kind of object, whichever
  -- backend made it. vyre.Box and vyre.ProblemsBox are internal holders of C
  -- memory that never reach user code.
  -- vyre.Error is the class of error values (tables, lerror.c), not a resource.
  local internal = { ["vyre.Box"] = true, ["vyre.ProblemsBox"] = true, ["vyre.Error"] = true }
  local classes = {}
  for key, mt in pairs(debug.getregistry()) do
    if type(key) == "string" and key:find("^vyre%.") and type(mt) == "table" and
        mt.__name == key and not internal[key] then
      classes[#classes + 1] = key
    end
  end
  table.sort(classes)

  it("include the device, buffer, kernel and graph types", function()
    for _, name in ipairs({ "vyre.Backend", "vyre.Buffer", "vyre.Kernel", "vyre.Launch",
        "vyre.Graph", "vyre.Program", "vyre.Array" }) do
      assert.truthy(debug.getregistry()[name], name .. " is not registered")
    end
  end)

  it("have __gc and __close sharing one release, and methods", function()
    for _, name in ipairs(classes) do
      local mt = debug.getregistry()[name]
      assert.is_function(mt.__gc, name .. " has no __gc")
      assert.is_function(mt.__close, name .. " has no __close")
      assert.are.equal(mt.__gc, mt.__close, name .. ": __gc and __close differ")
      assert.truthy(mt.__index, name .. " has no methods")
    end
  end)

  -- The methods table: __index itself, or the first upvalue of an __index
  -- function that serves fields before methods.
  local function methods_of(mt)
    if type(mt.__index) == "table" then return mt.__index end
    local _, up = debug.getupvalue(mt.__index, 1)
    return up
  end

  it("release through the same function as their explicit release method", function()
    local release = {}
    for _, name in ipairs(classes) do
      local mt = debug.getregistry()[name]
      local m = assert(methods_of(mt), name .. ": no methods table")[release[name] or "free"]
      assert.are.equal(mt.__gc, m, name .. ": :" .. (release[name] or "free")
        .. "() is not the __gc release")
    end
  end)

  it("have __tostring", function()
    local missing = {}
    for _, name in ipairs(classes) do
      if type(debug.getregistry()[name].__tostring) ~= "function" then
        missing[#missing + 1] = name
      end
    end
    assert.are.same({}, missing)
  end)
end)

describe("misuse names the function and says how to fix it", function()
  local be, p, k, b, a

  before_each(function()
    be = H.ref()
    p = H.saxpy()
    k = be:compile(p)
    b = be:buffer("f32", 4)
    a = vyre.array("f32", 3)
  end)

  it("programs: parse, validate, ptx, random_program and methods", function()
    misuse("vyre.parse", vyre.parse, nil)
    misuse("vyre.parse", vyre.parse, "(program")
    misuse("vyre.validate", vyre.validate, "not a program")
    misuse("vyre.ptx", vyre.ptx, 5)
    misuse("vyre.ptx", vyre.ptx, p, 90)
    misuse("vyre.ptx", vyre.ptx, p, { sm = "ninety" })
    misuse("vyre.ptx", vyre.ptx, p, { sm = 90.5 })
    misuse("vyre.ptx", vyre.ptx, p, { SM = 90 })
    misuse("vyre.random_program", vyre.random_program, 1, { max_stmt = 3 })
    misuse("vyre.program", vyre.program, "t", { workgroups = 64 }, function() end)
    misuse("vyre.random_program", vyre.random_program, "seed")
    misuse("vyre.random_program", vyre.random_program, 1, 5)
    misuse("vyre.random_program", vyre.random_program, 1, { max_stmts = 0 })
    misuse("vyre.Program:text", p.text, "x")
    misuse("vyre.Program:free", p.free, {})
    local q = vyre.parse(tiny_text)
    q:free()
    for fname, fn in pairs({ ["vyre.validate"] = vyre.validate, ["vyre.ptx"] = vyre.ptx,
        ["vyre.Program:hash"] = q.hash, ["vyre.Program:decls"] = q.decls,
        ["vyre.Program.name"] = function(x) return x.name end,
        ["vyre.Program.workgroup"] = function(x) return x.workgroup end }) do
      misuse(fname, fn, q)
    end
  end)

  it("vyre.ptx rejects an unsupported sm and an invalid program", function()
    local msg = misuse("vyre.ptx", vyre.ptx, p, { sm = 5 })
    assert.truthy(msg:find("sm_5", 1, true), msg)
    misuse("vyre.ptx", vyre.ptx, p, { sm = 2000 })
    local bad = vyre.parse("(program bad (workgroup 1) (buffer o u32 write) (store o 0u32 1.5f32))")
    msg = misuse("vyre.ptx", vyre.ptx, bad)
    assert.truthy(msg:find("invalid program 'bad'", 1, true), msg)
  end)

  it("arrays: bad type names, sizes, element values and indices", function()
    misuse("vyre.array", vyre.array, "f16", 3)
    misuse("vyre.array", vyre.array)
    misuse("vyre.array", vyre.array, "u32", -1)
    misuse("vyre.array", vyre.array, "u32", 1.5)
    misuse("vyre.array", vyre.array, "u32", true)
    misuse("vyre.array", vyre.array, "u32", "abc")
    misuse("vyre.array", vyre.array, "u32", { 1, -1 })
    misuse("vyre.array", vyre.array, "i32", { 2 ^ 31 })
    misuse("vyre.array", vyre.array, "i32", { 1.5 })
    misuse("vyre.array", vyre.array, "bool", { 1 })
    misuse("vyre.array", vyre.array, "f32", { "x" })
    misuse("vyre.Array", function() return a[0] end)
    misuse("vyre.Array", function() return a[5] end)
    misuse("vyre.Array", function() return a[1.5] end)
    misuse("vyre.Array", function() a[4] = 1 end)
    misuse("vyre.Array", function() a.field = 1 end)
    misuse("vyre.Array", function() a[1] = "x" end)
    misuse("vyre.Array", function() vyre.array("u64", 1)[1] = 0.5 end)
    misuse("vyre.Array:totable", a.totable, 5)
    misuse("vyre.Array:copy", a.copy, "x")
    misuse("vyre.Array:free", a.free, {})
  end)

  it("backends: unknown names, buffers, run and compile", function()
    misuse("vyre.backend", vyre.backend, "opencl")
    misuse("vyre.Backend:buffer", be.buffer, be, "f16", 3)
    misuse("vyre.Backend:buffer", be.buffer, be, "f32", -3)
    misuse("vyre.Backend:buffer", be.buffer, be, "f32")
    misuse("vyre.Backend:buffer", be.buffer, be, "f32", vyre.array("u32", 2))
    misuse("vyre.Backend:buffer", be.buffer, nil, "f32", 2)
    misuse("vyre.Backend:run", be.run, be, "not a program", {})
    misuse("vyre.Backend:run", be.run, be, nil, {})
    misuse("vyre.Backend:compile", be.compile, be, {})
    misuse("vyre.Backend:compile", be.compile, be, a)
    local q = vyre.parse(tiny_text)
    q:free()
    misuse("vyre.Backend:run", be.run, be, q, {})
    misuse("vyre.Backend:compile", be.compile, be, q)
    local bad = vyre.parse("(program bad (workgroup 1) (buffer o u32 write) (store o 0u32 1.5f32))")
    misuse("vyre.Backend:run", be.run, be, bad, {})
    misuse("vyre.Backend:compile", be.compile, be, bad)
    misuse("vyre.Backend:synchronize", be.synchronize)
    misuse("vyre.Backend:info", be.info)
    misuse("vyre.Backend:stats", be.stats)
  end)

  it("run: unknown args names, missing params, wrong counts and value ranges", function()
    local args = { x = { 1, 2 }, y = { 1, 2 }, a = 1.0 }
    args.z = 1
    misuse("vyre.Backend:run", be.run, be, p, args)
    misuse("vyre.Backend:run", be.run, be, p, { x = { 1 }, y = { 1 } })
    misuse("vyre.Backend:run", be.run, be, p, { x = { 1 }, y = { 1 }, a = "2" })
    misuse("vyre.Backend:run", be.run, be, p, { y = { 1 }, a = 1.0 })
    misuse("vyre.Backend:run", be.run, be, p, { x = 1, y = { 1 }, a = 1.0 })
    misuse("vyre.Backend:run", be.run, be, p, { [1] = 2, x = { 1 }, y = { 1 }, a = 1.0 })
    misuse("vyre.Backend:run", be.run, be, p, { x = { 1 }, y = { 1 }, a = 1.0 }, { n = -1 })
    misuse("vyre.Backend:run", be.run, be, p, { x = { 1 }, y = { 1 }, a = 1.0 }, { grid = { 0 } })
    misuse("vyre.Backend:run", be.run, be, p, { x = { 1 }, y = { 1 }, a = 1.0 }, 7)
    local q = H.parse([[
(program ranges (workgroup 1)
  (buffer o u32 write 1)
  (param n u32)
  (param s i32)
  (param f bool)
  (store o 0u32 n))
]])
    local ok = { n = 1, s = 1, f = true }
    local function with(k2, v)
      local t = { n = ok.n, s = ok.s, f = ok.f }
      t[k2] = v
      return t
    end
    assert.are.equal(1, be:run(q, ok).o[1])
    misuse("vyre.Backend:run", be.run, be, q, with("n", -1))
    misuse("vyre.Backend:run", be.run, be, q, with("n", 2 ^ 32 | 0))
    misuse("vyre.Backend:run", be.run, be, q, with("n", 1.5))
    misuse("vyre.Backend:run", be.run, be, q, with("s", 2 ^ 31 | 0))
    misuse("vyre.Backend:run", be.run, be, q, with("s", 0.25))
    misuse("vyre.Backend:run", be.run, be, q, with("f", 1))
    misuse("vyre.Backend:run", be.run, be, q, with("n", true))
  end)

  it("buffers: upload and download with bad data and byte ranges", function()
    misuse("vyre.Buffer:upload", b.upload, b, 5)
    misuse("vyre.Buffer:upload", b.upload, b, { 1, 2, 3, 4, 5 })
    misuse("vyre.Buffer:upload", b.upload, b, { 1 }, 3)
    misuse("vyre.Buffer:upload", b.upload, b, { 1 }, "x")
    misuse("vyre.Buffer:upload", b.upload, b, { 1 }, -4)
    misuse("vyre.Buffer:upload", b.upload, b, vyre.array("u32", 1))
    misuse("vyre.Buffer:upload", b.upload, b, { "x" })
    misuse("vyre.Buffer:upload", b.upload, 5)
    misuse("vyre.Buffer:download", b.download, b, 0, 100)
    misuse("vyre.Buffer:download", b.download, b, "x")
    misuse("vyre.Buffer:download", b.download, b, 0, 1.5)
    misuse("vyre.Buffer:download", b.download, b, 2)
    misuse("vyre.Buffer:free", b.free, 5)
  end)

  it("kernels: launch with wrong buffers, args and opts", function()
    misuse("vyre.Kernel:launch", k.launch, k, { x = a, y = b, a = 1.0 })
    misuse("vyre.Kernel:launch", k.launch, k, { x = H.ref():buffer("f32", 1), y = b, a = 1.0 })
    misuse("vyre.Kernel:launch", k.launch, k, { x = be:buffer("u32", 1), y = b, a = 1.0 })
    misuse("vyre.Kernel:launch", k.launch, k, { y = b, a = 1.0 })
    misuse("vyre.Kernel:launch", k.launch, k, { x = b, y = b })
    misuse("vyre.Kernel:launch", k.launch, k, { x = b, y = b, a = 1.0, zz = 1 })
    misuse("vyre.Kernel:launch", k.launch, k, 5)
    misuse("vyre.Kernel:launch", k.launch, {})
    misuse("vyre.Kernel:launch", k.launch, k, { x = b, y = b, a = 1.0 }, { grid = 5 })
    misuse("vyre.Kernel:launch", k.launch, k, { x = b, y = b, a = 1.0 }, { n = 1.5 })
    misuse("vyre.Kernel:launch", k.launch, k, { x = b, y = b, a = 1.0 }, 7)
    misuse("vyre.Kernel:info", k.info)
    misuse("vyre.Kernel:free", k.free, 5)
  end)

  it("the DSL names the declaration function or the operation", function()
    misuse("vyre.buffer", vyre.buffer, "x", "f16")
    misuse("vyre.buffer", vyre.buffer, "x", "f32", "rw")
    misuse("vyre.buffer", vyre.buffer, "x", "f32", "read", -1)
    misuse("vyre.buffer", vyre.buffer, "1x", "f32")
    misuse("vyre.shared", vyre.shared, "s", "f32")
    misuse("vyre.param", vyre.param, "true", "f32")
    misuse("vyre.lit", vyre.lit, "u32", -1)
    misuse("vyre.lit", vyre.lit, "i32", 0.5)
    misuse("vyre.lit", vyre.lit, "x", 1)
    misuse("vyre.program", vyre.program, "p", { workgroup = 1, 5 }, function() end)
    misuse("vyre.program", vyre.program, "p", {}, nil)
    misuse("vyre.program", vyre.program, "p", { workgroup = 0 }, function() end)
    misuse("vyre.program", vyre.program, "p", 5, function() end)
    misuse("vyre.program", vyre.program, "p", { vyre.buffer("o", "u32", "read") },
      function(kb) kb.o[0] = 1 end)
    misuse("vyre.program", vyre.program, "p", {}, function(kb) return kb.zz end)
    misuse("vyre.program", vyre.program, "p", { vyre.param("u", "u32") },
      function(kb) kb:let("v", kb.u + 0.5) end)
  end)

  it("cuda.device rejects bad ordinals; environmental failures return nil, reason", function()
    local cuda = require("vyre.cuda")
    misuse("vyre.cuda.device", cuda.device, -1)
    misuse("vyre.cuda.device", cuda.device, "a")
    if not cuda.available() then
      local be2, why = vyre.backend("cuda")
      assert.is_nil(be2)
      assert.truthy(why:find("Fix:", 1, true), why)
      local n, why2 = cuda.count()
      assert.is_nil(n)
      assert.are.equal(why, why2)
    end
  end)
end)

describe("CUDA objects on a device", function()
  local cuda = require("vyre.cuda")

  it("follow the same contract #gpu", function()
    local be = assert(cuda.device(0))
    local p = vyre.parse(tiny_text)
    local k = be:compile(p)
    local b = be:buffer("u32", 4)
    for _, pair in ipairs({ { b, "vyre.Buffer", "^vyre%.Buffer%(cuda, u32, 4%)$" },
        { k, "vyre.Kernel", "^vyre%.Kernel%(cuda, " } }) do
      local x, name, pat = pair[1], pair[2], pair[3]
      assert.are.equal(name, getmetatable(x).__name)
      assert.matches(pat, tostring(x))
    end
    -- the kernel keeps its program alive
    p = nil -- luacheck: ignore
    collectgarbage()
    assert.are.equal("tiny", k.program.name)
    b:free()
    b:free()
    getmetatable(b).__close(b)
    misuse("vyre.Buffer:download", b.download, b)
    k:free()
    k:free()
    misuse("vyre.Kernel:launch", k.launch, k, {})
    local fn = chunk([[
      local be = ...
      local keep
      do
        local x <close> = be:buffer("f32", 2)
        keep = x
      end
      return keep
    ]], be)
    assert.truthy(fn.freed)
    misuse("vyre.Backend:buffer", be.buffer, be, "f32", 1.5)
    misuse("vyre.Backend:buffer", be.buffer, nil, "f32", 1)
    misuse("vyre.Backend:compile", be.compile, be, "not a program")
    misuse("vyre.Backend:run", be.run, be, nil, {})
    -- a backend's <close> closes its device object; cuda.device(i) then opens a new one
    local closed = chunk([[
      local cuda = ...
      local keep
      do
        local b2 <close> = assert(cuda.open(0))
        keep = b2
      end
      return keep
    ]], cuda)
    misuse("vyre.Backend:info", closed.info, closed)
    closed:free()
    assert.are_not.equal(closed, cuda.device(0))
    assert.are.equal("cuda", cuda.device(0):info().backend)
    local bx = be:buffer("f32", 1)
    misuse("vyre.Kernel:launch", be:compile(vyre.parse(tiny_text)).launch,
      be:compile(vyre.parse(tiny_text)), { o = bx })
    misuse("vyre.Buffer:upload", be:buffer("f32", 1).upload, be:buffer("f32", 1), { 1 }, "x")
  end)
end)
