-- 23: the vector entry of elementwise programs (docs/ARCHITECTURE.md §5). Without a GPU:
-- vyre.random_program's `elementwise` option and which programs' PTX carries a vector
-- entry. With one (#gpu): bit-exact parity with the reference backend through the
-- vector entry, for saxpy over sizes around multiples of 4 and of the workgroup (0 to 9,
-- 255 to 257, 1023 to 1025, 10^5 + 3), buffers of different lengths, NaN, -0,
-- subnormals and infinities; a swap of every type; every launch path (run, launch,
-- bind, sequence, graph); a 2-D grid (the program's own entry); a misaligned view
-- through launch_raw (the vector entry's slow path); and generated elementwise programs
-- with tails.
local vyre = require("vyre")
local H = require("spec.helpers")

local RANDOM_PROGRAMS = tonumber(os.getenv("VYRE_VEC_PROGRAMS") or "") or 1000

local SAXPY = H.parse([[
(program vsaxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y))
    (then (store y i (add (mul a (load x i)) (load y i))))))]], "vsaxpy")

-- Not elementwise: reads (lid x).
local LID = H.parse([[
(program vlid (workgroup 64)
  (buffer y u32 write)
  (let i (gid x))
  (if (lt i (len y)) (then (store y i (lid x)))))]], "vlid")

-- y and x swap through a read_write buffer and a write buffer: one vector load of x and
-- of y, vector stores of y and z (z receives y's old value).
local function swap_program(t)
  return H.parse(([[
(program vswap_%s (workgroup 64)
  (buffer x %s read)
  (buffer y %s read_write)
  (buffer z %s write)
  (let i (gid x))
  (if (lt i (len y))
    (then
      (let old (load y i))
      (store y i (load x i))
      (store z i old))))]]):format(t, t, t, t), "vswap_" .. t)
end

-- A small deterministic generator (xorshift64*), as in spec 22.
local function rng(seed)
  local s = seed ~ 0x9E3779B97F4A7C15
  if s == 0 then s = 1 end
  return function()
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    return s * 0x2545F4914F6CDD1D
  end
end

-- Special values of both float widths: zeros, infinities, NaN, subnormals (f32 and
-- f64), the largest finite f32, and ordinary ones.
local SPECIAL_F = { 0.0, -0.0, 1 / 0, -1 / 0, 0 / 0, 1e-40, -1.4e-45, 3.4028234663852886e38,
  4.9e-324, -2.2e-308, 1.5, -2.25 }

local function value(t, r)
  local x = r()
  if t == "bool" then return x & 1 == 1 end
  if t == "i32" then return ((x >> 32) & 0xffffffff) - 0x80000000 end
  if t == "u32" then return (x >> 32) & 0xffffffff end
  if t == "i64" or t == "u64" then return x end
  if x & 7 == 0 then
    local v = SPECIAL_F[(x >> 8) % #SPECIAL_F + 1]
    if t == "f32" then v = string.unpack("f", string.pack("f", v)) end
    return v
  end
  local v = ((x >> 11) / (1 << 53) - 0.5) * 2.0 ^ (((x >> 4) & 31) - 10)
  if t == "f32" then v = string.unpack("f", string.pack("f", v)) end
  return v
end

local function array(t, n, r)
  local vals = {}
  for i = 1, n do vals[i] = value(t, r) end
  return vyre.array(t, vals)
end

describe("elementwise programs", function()
  it("are what vyre.random_program makes with elementwise = true", function()
    local with_vector = 0
    for seed = 1, 60 do
      local p = vyre.random_program(seed, { elementwise = true, allow_barriers = true })
      assert.are.equal(p:text(), vyre.random_program(seed, { elementwise = true }):text())
      assert.are.same({ 1, 1 }, { p.workgroup.y, p.workgroup.z })
      local text = p:text()
      for _, word in ipairs({ "(lid", "(wgid", "(wgsize", "(ngroups", "(gid y", "(gid z",
        "(barrier", "(atomic", "(shared", "subgroup", "shuffle", "ballot" }) do
        assert.is_nil(text:find(word, 1, true), word .. " in\n" .. text)
      end
      if vyre.ptx(p, { sm = 80 }):find("_v4(", 1, true) then with_vector = with_vector + 1 end
    end
    assert.is_true(with_vector >= 30, with_vector .. " of 60 have a vector entry")
  end)

  it("carry a vector entry in their PTX; other programs do not", function()
    local ptx = vyre.ptx(SAXPY, { sm = 90 })
    assert.truthy(ptx:find(".visible .entry vsaxpy_v4(", 1, true))
    assert.truthy(ptx:find("ld.global.nc.v4.f32", 1, true))
    assert.truthy(ptx:find("st.global.v4.f32", 1, true))
    assert.is_nil(vyre.ptx(LID, { sm = 90 }):find("_v4(", 1, true))
  end)
end)

describe("the vector entry on CUDA #gpu", function()
  local ref, gpu

  setup(function()
    ref = vyre.backend("reference")
    gpu = assert(require("vyre.cuda").device(0))
  end)

  teardown(function()
    gpu = nil
    assert.are.same({}, H.leftovers(require("vyre.cuda").device(0)))
  end)

  it("is used by launches of elementwise kernels with a 1-D grid", function()
    local k = gpu:compile(SAXPY)
    assert.is_true(k:info().vector)
    assert.is_false(gpu:compile(LID):info().vector)
    local x, y = gpu:buffer("f32", 1000), gpu:buffer("f32", 1000)
    local before = gpu:stats()
    k:launch({ x = x, y = y, a = 2.0 }, { n = 1000 })
    local after = gpu:stats()
    assert.are.equal(before.vector_launches + 1, after.vector_launches)
    assert.are.equal(before.launches + 1, after.launches)
    -- a 2-D grid runs the program's own entry (gid.x repeats over y there)
    local swap = gpu:compile(swap_program("u32"))
    local r = rng(7)
    local xs, ys = array("u32", 300, r), array("u32", 300, r)
    local bx, by, bz = gpu:buffer("u32", xs), gpu:buffer("u32", ys), gpu:buffer("u32", 300)
    before = gpu:stats().vector_launches
    swap:launch({ x = bx, y = by, z = bz }, { grid = { 5, 2, 1 } })
    assert.are.equal(before, gpu:stats().vector_launches)
    assert.are.same(xs:totable(), by:download():totable())
    x:free(); y:free(); bx:free(); by:free(); bz:free()
  end)

  it("runs saxpy bit-identically around every tail and with special values", function()
    local sizes = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 255, 256, 257, 1023, 1024, 1025, 100003 }
    local r = rng(23)
    for _, n in ipairs(sizes) do
      -- x as long, shorter (its loads read 0 past the end) and longer than y
      for _, dx in ipairs({ 0, -3, 5 }) do
        local nx = math.max(n + dx, 0)
        for _, a in ipairs({ 2.0, -0.0, 0 / 0, 1e-40 }) do
          local args = { x = array("f32", nx, r), y = array("f32", n, r), a = a }
          H.parity_run(ref, gpu, SAXPY, args, nil,
            ("vsaxpy n=%d nx=%d a=%s"):format(n, nx, tostring(a)))
        end
      end
    end
  end)

  it("swaps every type bit-identically", function()
    local r = rng(5)
    for _, t in ipairs({ "bool", "i32", "u32", "f32", "i64", "u64", "f64" }) do
      local p = swap_program(t)
      for _, n in ipairs({ 1, 3, 4, 63, 64, 65, 130, 1027 }) do
        local args = { x = array(t, n, r), y = array(t, n + (n % 3), r) }
        H.parity_run(ref, gpu, p, args, nil, ("vswap_%s n=%d"):format(t, n))
        H.parity_run(ref, gpu, p, args, { n = n - 1 }, ("vswap_%s n=%d, n-1 launched"):format(t, n))
      end
    end
  end)

  it("gives the same results through launch, bind, sequence and graph", function()
    local k = gpu:compile(SAXPY)
    local r = rng(11)
    for _, n in ipairs({ 5, 256, 4099 }) do
      local xs, ys = array("f32", n, r), array("f32", n, r)
      local want = ref:run(SAXPY, { x = xs, y = ys, a = -1.5 }).y
      local x, y = gpu:buffer("f32", xs), gpu:buffer("f32", ys)
      local args, opts = { x = x, y = y, a = -1.5 }, { n = n }
      local before = gpu:stats().vector_launches
      k:launch(args, opts)
      assert.is_nil(H.parity_diff(want, y:download()), "launch n=" .. n)
      y:upload(ys)
      local l = k:bind(args, opts)
      l()
      assert.is_nil(H.parity_diff(want, y:download()), "bind n=" .. n)
      y:upload(ys)
      local got = gpu:sequence({ { k, args, opts } }, { readback = { y } })
      assert.is_nil(H.parity_diff(want, got[1]), "sequence n=" .. n)
      y:upload(ys)
      local g = gpu:graph({ { k, args, opts } })
      g:launch(1)
      assert.is_nil(H.parity_diff(want, y:download()), "graph n=" .. n)
      assert.are.equal(before + 4, gpu:stats().vector_launches)
      g:free(); l:free(); x:free(); y:free()
    end
  end)

  it("takes the slow path for a misaligned view, with the same results", function()
    local k = gpu:compile(SAXPY)
    local raw = gpu:load_ptx(k.ptx, "vsaxpy_v4")
    local r = rng(3)
    for _, n in ipairs({ 9, 1000, 4097 }) do
      local xs, ys = array("f32", n, r), array("f32", n, r)
      local x, y = gpu:buffer("f32", xs), gpu:buffer("f32", ys)
      -- The view of elements 2..n: 4 bytes past a 256-byte aligned allocation.
      local m = n - 1
      local tail = function(a) return vyre.array("f32", a:bytes():sub(5)) end
      local want = ref:run(SAXPY, { x = tail(xs), y = tail(ys), a = 0.5 }).y
      local blocks = (m + 255) // 256
      local vn = blocks * 256
      raw:launch_raw({ (vn // 4 + 255) // 256 }, { 256 }, { x:pointer() + 4, y:pointer() + 4,
        { "u32", m }, { "u32", m }, { "f32", 0.5 }, { "u32", vn } })
      local got = y:download():bytes()
      assert.are.equal(ys:bytes():sub(1, 4), got:sub(1, 4)) -- before the view: untouched
      assert.is_nil(H.parity_diff(want, vyre.array("f32", got:sub(5))), "misaligned n=" .. n)
      x:free(); y:free()
    end
    raw:free()
  end)

  it("runs generated elementwise programs bit-identically, tails included", function()
    local sizes = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 63, 64, 65, 127, 129, 255, 257, 300, 1029 }
    local before = gpu:stats().vector_launches
    for seed = 1, RANDOM_PROGRAMS do
      local p = vyre.random_program(seed, { elementwise = true })
      local r = rng(seed)
      local n = sizes[seed % #sizes + 1]
      local args = {}
      for _, d in ipairs(p:decls()) do
        if d.kind == "param" then
          args[d.name] = value(d.type, r)
        elseif d.kind == "buffer" then
          -- buffers of different lengths around n (write buffers too, so that n = 0
          -- still sizes them): the fast path needs them all
          local len = (d.count and d.count > 0) and d.count or math.max(n + (r() % 7) - 3, 0)
          args[d.name] = array(d.type, len, r)
        end
      end
      H.parity_run(ref, gpu, p, args, { n = n }, ("random_program(%d, elementwise) n=%d")
        :format(seed, n))
      if seed % 200 == 0 then collectgarbage() end
    end
    local used = gpu:stats().vector_launches - before
    print(("\n  vector entry: %d generated programs bit-identical, %d launches used it")
      :format(RANDOM_PROGRAMS, used))
    assert.is_true(used >= RANDOM_PROGRAMS // 3)
  end)
end)
