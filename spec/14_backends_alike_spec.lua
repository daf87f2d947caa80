-- 14: both backends alike. One suite runs on the reference backend (always) and on
-- CUDA (tag `gpu`): the same methods on backends, buffers and kernels, sequences with
-- a prefix, repeats and ranged readback, graphs, timed variants, buf:zero, bound
-- launches, a resident buffer used in place by run, and the same errors for the same
-- mistakes. GPU code can be tested on the CPU because nothing here differs.
local H = require("spec.helpers")

local INC, IOTA = H.INC, H.IOTA

local function vyre_zeros(n)
  local t = {}
  for i = 1, n do t[i] = 0 end
  return t
end

local SCALE = [[
(program scale (workgroup 32)
  (buffer x f32 read)
  (buffer y f32 write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y)) (then (store y i (mul a (load x i))))))]]

-- The methods every backend, buffer and kernel has, whichever backend made it.
local METHODS = {
  backend = { "run", "run_timed", "buffer", "compile", "load_ptx", "sequence", "graph",
    "synchronize", "trim", "lost", "check", "info", "stats", "free" },
  buffer = { "upload", "download", "zero", "pointer", "free" },
  kernel = { "launch", "launch_timed", "bind", "info", "free", "launch_raw" },
}

local function backends()
  local list = { { name = "reference", tag = "", open = function() return H.ref() end } }
  list[2] = { name = "cuda", tag = " #gpu", open = function()
    return assert(require("vyre.cuda").device(0))
  end }
  return list
end

for _, kind in ipairs(backends()) do
  describe(kind.name .. " backend" .. kind.tag, function()
    local be, inc, iota

    before_each(function()
      be = kind.open()
      inc = be:compile(H.parse(INC))
      iota = be:compile(H.parse(IOTA))
    end)

    it("has every method of the common interface", function()
      local b, k = be:buffer("u32", 1), inc
      for what, obj in pairs({ backend = be, buffer = b, kernel = k }) do
        for _, m in ipairs(METHODS[what]) do
          assert.is_function(obj[m], kind.name .. " " .. what .. " lacks :" .. m .. "()")
        end
      end
      assert.are.equal(kind.name, be.name)
      assert.are.equal("vyre.Backend", getmetatable(be).__name)
      assert.are.equal("vyre.Buffer", getmetatable(b).__name)
      assert.are.equal("vyre.Kernel", getmetatable(k).__name)
    end)

    it("runs sequences: a prefix once, the rest N times, ranged readback", function()
      local v = be:buffer("u32", 100)
      local res = be:sequence({ { iota, { v = v } }, { inc, { v = v } } },
        { prefix = 1, times = 5, readback = { { v, 11, 3 }, v } })
      assert.are.same({ 15, 16, 17 }, res[1]:totable())
      assert.are.equal(100, #res[2])
      assert.are.equal(99 + 5, res[2][100])
      local again, t = be:sequence({ { inc, { v = v } } }, { times = 3, timed = true })
      assert.are.same({}, again)
      assert.is_true(t.wall_ns >= t.wait_ns and t.wall_ns > 0)
      assert.are.equal(99 + 8, v:download()[100])
    end)

    it("captures steps into a graph and replays them", function()
      local v = be:buffer("u32", { 0, 0, 0, 0 })
      local steps = { { inc, { v = v } }, { inc, { v = v } } }
      local g = be:graph(steps)
      steps[1] = nil -- the graph keeps what it captured, not the caller's table
      collectgarbage()
      g:launch(10)
      assert.are.same({ 20, 20, 20, 20 }, v:download():totable())
      local t = g:launch(5, true)
      assert.is_true(t.wall_ns > 0)
      assert.are.same({ 30, 30, 30, 30 }, v:download():totable())
      assert.matches("^vyre%.Graph%(" .. kind.name .. ", 2 steps%)$", tostring(g))
      v:free()
      assert.matches("vyre.Graph:launch: step 1's buffer 1 was freed. Fix:",
        H.error_of(g.launch, g), 1, true)
      g:free()
      g:free()
      assert.matches("vyre.Graph:launch: the graph was freed", H.error_of(g.launch, g), 1, true)
    end)

    it("times runs and launches", function()
      local out, rounds, t = be:run_timed(H.parse(SCALE), { x = { 1, 2, 3 }, a = 2.0 })
      assert.are.equal(0, rounds) -- results, rounds, timing: rounds 0 without converge
      assert.are.same({ 2, 4, 6 }, out.y:totable())
      assert.is_true(t.wall_ns > 0 and t.device_ns >= 0)
      local v = be:buffer("u32", 3)
      local lt = inc:launch_timed({ v = v })
      assert.is_true(lt.wall_ns > 0)
      assert.are.same({ 1, 1, 1 }, v:download():totable())
    end)

    it("zeroes buffers and binds launches", function()
      local v = be:buffer("u32", { 5, 6, 7 })
      assert.are.equal(v, v:zero())
      assert.are.same({ 0, 0, 0 }, v:download():totable())
      local l = inc:bind({ v = v })
      l:launch()
      l()
      assert.are.same({ 2, 2, 2 }, v:download():totable())
      assert.matches("^vyre%.Launch%(" .. kind.name .. ", inc%)$", tostring(l))
    end)

    it("uses a resident buffer passed to run in place, and returns it", function()
      local y = be:buffer("f32", 3)
      local out = be:run(H.parse(SCALE), { x = { 1, 2, 3 }, y = y, a = 3.0 })
      assert.are.equal(y, out.y)
      assert.are.same({ 3, 6, 9 }, y:download():totable())
      local x = be:buffer("f32", { 4, 5, 6 })
      local out2 = be:run(H.parse(SCALE), { x = x, a = 1.0 })
      assert.are.same({ 4, 5, 6 }, out2.y:totable())
    end)

    it("launches nothing for n = 0, and covers n = {w, h} in two dimensions", function()
      local v = be:buffer("u32", { 1, 2, 3 })
      inc:launch({ v = v }, { n = 0 })
      inc:bind({ v = v }, { n = 0 })()
      be:sequence({ { inc, { v = v }, { n = 0 } } })
      be:graph({ { inc, { v = v }, { n = 0 } } }):launch(2)
      assert.are.same({ 1, 2, 3 }, v:download():totable())
      local out = be:run(H.parse(INC), { v = { 4, 5 } }, { n = 0 })
      assert.are.same({ 4, 5 }, out.v:totable())
      -- a 4x3 image with an 8x8 workgroup: n = {4, 3} covers every cell once
      local grid2 = H.parse([[
(program cells (workgroup 8 8)
  (buffer o u32 read_write)
  (param w u32)
  (param h u32)
  (let x (gid x))
  (let y (gid y))
  (let c (add x (mul y w)))
  (if (land (lt x w) (lt y h)) (then (store o c (add (load o c) 1u32)))))]])
      local img = be:run(grid2, { o = vyre_zeros(12), w = 4, h = 3 }, { n = { 4, 3 } })
      assert.are.same({ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 }, img.o:totable())
      assert.matches("opts.n axis 2 must be an integer >= 0",
        H.error_of(be.run, be, grid2, { o = vyre_zeros(1), w = 1, h = 1 }, { n = { 1, -1 } }),
        1, true)
    end)

    it("rejects the same mistakes with the same words", function()
      local v = be:buffer("u32", 2)
      assert.matches("vyre.Kernel:launch: unknown option 'N'. Fix:",
        H.error_of(inc.launch, inc, { v = v }, { N = 3 }), 1, true)
      assert.matches("vyre.Backend:sequence: unknown option 'repeat'. Fix:",
        H.error_of(be.sequence, be, { { inc, { v = v } } }, { ["repeat"] = 2 }), 1, true)
      assert.matches("vyre.Backend:sequence: prefix 3 is longer than the 1 steps",
        H.error_of(be.sequence, be, { { inc, { v = v } } }, { prefix = 3 }), 1, true)
      assert.matches("vyre.Backend:graph: step 1 must be {kernel, args, opts}",
        H.error_of(be.graph, be, { 5 }), 1, true)
      local fixed = be:compile(H.parse("(program fixed (workgroup 1) (buffer o u32 write 3) "
        .. "(store o 0u32 1u32))"))
      assert.matches("vyre.Kernel:launch: buffer 'o' is declared with 3 elements but 2 were "
        .. "bound. Fix:", H.error_of(fixed.launch, fixed, { o = v }), 1, true)
      local foreign = H.ref():buffer("u32", 2) -- another backend object either way
      assert.matches("vyre.Kernel:launch: buffer 'v' must be a vyre.Buffer of this "
        .. kind.name .. " backend", H.error_of(inc.launch, inc, { v = foreign }), 1, true)
    end)
  end)
end

describe("launch geometry", function()
  local TWO = "(program two (workgroup 8 8) (buffer o u32 write 64) "
    .. "(store o (add (gid x) (mul (gid y) 8u32)) 1u32))"

  it("refuses a program that reads gid.y launched with one workgroup on y", function()
    local p = H.parse(TWO)
    local be = H.ref()
    -- sized from a scalar n, and from the buffers: one row of 8 would be computed
    local e = H.error_of(be.run, be, p, {}, { n = 64 })
    assert.matches("vyre.Backend:run: program 'two' reads gid.y or wgid.y, but the launch "
      .. "is sized from a scalar n, which gives one workgroup on y: y would only span 0..7",
      e, 1, true)
    assert.matches("Fix: launch with n = {W, H} or grid = {x, y, z}", e, 1, true)
    assert.matches("sized from the buffers", H.error_of(be.run, be, p, {}), 1, true)
    local k = be:compile(p)
    local o = be:buffer("u32", 64)
    assert.matches("vyre.Kernel:launch: program 'two' reads gid.y",
      H.error_of(k.launch, k, { o = o }, { n = 64 }), 1, true)
    assert.matches("vyre.Kernel:bind: program 'two' reads gid.y",
      H.error_of(k.bind, k, { o = o }, { n = 64 }), 1, true)
    assert.matches("reads gid.y",
      H.error_of(be.sequence, be, { { k, { o = o }, { n = 64 } } }), 1, true)
    -- z: the fix names three sizes
    local z = H.parse("(program zz (workgroup 4 1 4) (buffer o u32 write 16) "
      .. "(store o (add (gid x) (mul (wgid z) 4u32)) 1u32))")
    assert.matches("reads gid.z or wgid.z.*n = {W, H, D}",
      H.error_of(be.run, be, z, {}, { n = 16 }))
  end)

  it("runs it with an explicit shape, covering the whole space", function()
    local p = H.parse(TWO)
    local be = H.ref()
    for _, opts in ipairs({ { n = { 8, 8 } }, { grid = { 1, 1 } }, { n = { 64 } } }) do
      local out = be:run(p, {}, opts).o:totable()
      local ones = 0
      for _, v in ipairs(out) do ones = ones + v end
      -- n = {64} is an explicit 1-D shape (8 workgroups on x, one on y), launched as asked;
      -- its x alone reaches every element here
      assert.are.equal(64, ones)
    end
    -- n = 0 launches nothing and is no error
    assert.are.same(0, be:run(p, {}, { n = 0 }).o[1])
  end)

  it("runs a program that reads ngroups (flattened over every axis) from a scalar n", function()
    local p = H.parse("(program flat (workgroup 8 8) (buffer o u32 write 64) "
      .. "(let f (add (gid x) (mul (gid y) (mul (wgsize x) (ngroups x))))) "
      .. "(if (lt f 64u32) (then (store o f 1u32))))")
    local out = H.ref():run(p, {}, { n = 64 }).o:totable()
    local ones = 0
    for _, v in ipairs(out) do ones = ones + v end
    assert.are.equal(64, ones)
    -- vyre.random_program's programs flatten that way: every seed launches with a scalar n
    for seed = 1, 40 do
      local rp = require("vyre").random_program(seed)
      if rp:text():find("(gid y)", 1, true) or rp:text():find("(wgid y)", 1, true) then
        assert.truthy(rp:text():find("(ngroups", 1, true), "random_program(" .. seed .. ")")
      end
    end
  end)
end)

describe("reference backend only", function()
  it("says which methods need CUDA and how to get it", function()
    local be = H.ref()
    assert.matches("vyre.Backend:load_ptx: only the CUDA backend has this. Fix:",
      H.error_of(be.load_ptx, be, ".version 7.0", "k"), 1, true)
    -- buf:pointer() answers on both (the host address here; issue 21 §5)
    local b = be:buffer("u32", 1)
    assert.is_true(math.type(b:pointer()) == "integer" and b:pointer() ~= 0)
  end)

  it("counts sequences, graph replays and live objects in stats", function()
    local be = H.ref()
    local k = be:compile(H.parse(INC))
    local v = be:buffer("u32", 4)
    be:sequence({ { k, { v = v } } }, { times = 2 })
    local g = be:graph({ { k, { v = v } } })
    g:launch(3)
    local s = be:stats()
    assert.are.equal(1, s.sequences)
    assert.are.equal(3, s.graph_launches)
    assert.are.equal(5, s.launches)
    assert.are.equal(1, s.live_graphs)
    assert.are.equal(1, s.live_kernels)
    assert.are.equal(1, s.live_buffers)
    g:free()
    k:free()
    v:free()
    s = be:stats()
    assert.are.equal(0, s.live_graphs + s.live_kernels + s.live_buffers)
  end)
end)
