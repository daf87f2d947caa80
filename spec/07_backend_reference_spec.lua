-- 07: the backend interface (§7) as the reference backend implements it.
local vyre = require("vyre")
local H = require("spec.helpers")

describe("vyre.backend", function()
  it("returns the reference backend by name", function()
    local be = vyre.backend("reference")
    assert.are.equal("reference", be.name)
    assert.are.equal("vyre.Backend", getmetatable(be).__name)
  end)

  it("returns the best available backend without a name", function()
    local be = vyre.backend()
    assert.is_true(be.name == "cuda" or be.name == "reference")
    local gpu, why = vyre.backend("cuda")
    if gpu then
      assert.are.equal("cuda", gpu.name)
      assert.are.equal("cuda", be.name)
    else
      assert.is_string(why)
      assert.are.equal("reference", be.name)
    end
  end)

  it("rejects unknown backend names", function()
    assert.matches("vyre.backend: unknown backend 'tpu'. Fix: use 'reference' or 'cuda'",
      H.error_of(vyre.backend, "tpu"), 1, true)
  end)
end)

describe("reference backend", function()
  local be, p

  before_each(function()
    be = H.ref()
    p = H.saxpy()
  end)

  it("run returns arrays for write/read_write buffers only, leaving inputs alone", function()
    local x = vyre.array("f32", { 1, 2, 3 })
    local y = vyre.array("f32", { 10, 20, 30 })
    local out = be:run(p, { x = x, y = y, a = 0.5 })
    assert.are.same({ "y" }, (function()
      local ks = {}
      for k in pairs(out) do ks[#ks + 1] = k end
      return ks
    end)())
    assert.are.same({ 10.5, 21.0, 31.5 }, out.y:totable())
    assert.are.same({ 10.0, 20.0, 30.0 }, y:totable())
    assert.are.equal("f32", out.y.type)
  end)

  it("allocates unbound write buffers: declared count, else n, else largest buffer", function()
    local q = H.parse([[
(program fill (workgroup 4)
  (buffer x u32 read)
  (buffer o u32 write)
  (buffer d u32 write 3)
  (let i (gid x))
  (store o i (add i 1u32))
  (store d i 7u32))
]])
    local out = be:run(q, { x = vyre.array("u32", 5) })
    assert.are.same({ 1, 2, 3, 4, 5 }, out.o:totable())
    assert.are.same({ 7, 7, 7 }, out.d:totable())
    assert.are.equal(2, #be:run(q, { x = {} }, { n = 2 }).o)
    assert.matches("cannot size write buffer 'o'", H.error_of(be.run, be, H.parse([[
(program nosize (workgroup 4)
  (buffer o u32 write)
  (store o 0u32 1u32))
]]), {}), 1, true)
  end)

  it("creates buffers from a count, an array or a table, and up/downloads ranges", function()
    local b = be:buffer("i32", 4)
    assert.are.equal(4, #b)
    assert.are.equal(4, b.count)
    assert.are.equal("i32", b.type)
    assert.are.same({ 0, 0, 0, 0 }, b:download():totable())
    b:upload({ 1, 2, 3, 4 })
    b:upload(vyre.array("i32", { 9 }), { first = 3 })
    assert.are.same({ 1, 2, 9, 4 }, b:download():totable())
    assert.are.same({ 2, 9 }, b:download({ first = 2, count = 2 }):totable())
    assert.are.same({ 5, 6 }, be:buffer("i32", { 5, 6 }):download():totable())
    local src = vyre.array("f64", { 1.5 })
    local c = be:buffer("f64", src)
    src[1] = 2.5
    assert.are.same({ 1.5 }, c:download():totable())
  end)

  it("rejects byte ranges that are unaligned or outside the buffer", function()
    local b = be:buffer("u32", 2)
    assert.matches("vyre.Buffer:download: byte offset 2 and size 4 must be non-negative "
      .. "multiples of the element size 4",
      H.error_of(b.download, b, { byte_offset = 2, nbytes = 4 }), 1, true)
    assert.matches("vyre.Buffer:upload: byte offset 4 with size 8 is outside the 8 bytes held",
      H.error_of(b.upload, b, { 1, 2 }, { byte_offset = 4 }), 1, true)
    -- positional bytes went away (issue 21 §5): the error names both range tables
    assert.matches("vyre.Buffer:download: a range is no longer positional bytes (4, 4). Fix: "
      .. "write {first = 2, count = 1} (elements), or {byte_offset = 4, nbytes = 4}",
      H.error_of(b.download, b, 4, 4), 1, true)
    assert.matches("vyre.Buffer:upload: cannot copy f32 data into a u32 buffer",
      H.error_of(b.upload, b, vyre.array("f32", 1)), 1, true)
  end)

  it("compiles kernels and launches them on its buffers", function()
    local k = be:compile(p)
    assert.are.equal(p, k.program)
    local info = k:info()
    assert.are.equal("saxpy", info.name)
    assert.are.equal(p:hash(), info.hash)
    local x = be:buffer("f32", { 1, 2, 3 })
    local y = be:buffer("f32", { 1, 1, 1 })
    k:launch({ x = x, y = y, a = 2.0 }, { n = 3 })
    k:launch({ x = x, y = y, a = 2.0 })
    assert.is_true(be:synchronize())
    assert.are.same({ 5.0, 9.0, 13.0 }, y:download():totable())
  end)

  it("reports info and counts runs, launches, invocations and transfers", function()
    local info = be:info()
    assert.are.equal("reference", info.name)
    local x = vyre.array("f32", { 1, 2 })
    be:run(p, { x = x, y = x, a = 1.0 })
    local k = be:compile(p)
    local bx = be:buffer("f32", x)
    k:launch({ x = bx, y = bx, a = 1.0 }, { grid = { 2 } })
    bx:download()
    local st = be:stats()
    assert.are.equal(1, st.runs)
    assert.are.equal(1, st.launches)
    assert.are.equal(1, st.compiles)
    assert.are.equal(256 + 512, st.invocations)
    assert.are.equal(1, st.downloads)
    assert.are.equal(8, st.bytes_down)
    assert.are.equal(1, st.live_buffers)
    bx:free()
    assert.are.equal(0, be:stats().live_buffers)
  end)

  it("keeps separate stats per backend object", function()
    be:run(p, { x = {}, y = {}, a = 1.0 })
    assert.are.equal(0, H.ref():stats().runs)
  end)

  it("binds a kernel's arguments once and relaunches with l:launch() or l()", function()
    local inc = vyre.parse([[
(program inc_bound (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]])
    local k = be:compile(inc)
    local b = be:buffer("u32", { 1, 2, 3 })
    local l = k:bind({ v = b })
    l:launch()
    l()
    assert.are.same({ 3, 4, 5 }, b:download():totable())
    local ok, err = pcall(k.bind, k, { w = b })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("vyre.Kernel:bind", 1, true), err)
    l:free()
    ok, err = pcall(l.launch, l)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("Fix:", 1, true), err)
  end)
end)
