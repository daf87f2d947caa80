-- 58: vyre.fuse — a chain of programs over one index space becomes one program whose
-- results are bit-identical to running the chain (issue 15, launch fusion); programs
-- that cannot fuse are refused with the reason and a fix.
local vyre = require("vyre")
local H = require("spec.helpers")

-- One elementwise stage: dst[i] = OP(src[i], other[i] or a constant), with the bounds
-- guard either as an if or as an early return.
local OPS = {
  f32 = { "add", "sub", "mul", "min", "max" },
  u32 = { "add", "sub", "mul", "xor", "min", "max", "shr" },
}
local function stage(name, t, src, dst, other, op, c, use_return)
  local rhs = other and ("(load %s i)"):format(other) or c
  local body = ("(store %s i (%s (load %s i) %s))"):format(dst, op, src, rhs)
  local other_decl = other and ("(buffer %s %s read)"):format(other, t) or ""
  if use_return then
    return H.parse(("(program %s (workgroup 64) (buffer %s %s read) %s (buffer %s %s write) "
      .. "(let i (gid x)) (if (ge i (len %s)) (then (return))) %s)"):format(name, src, t,
      other_decl, dst, t, dst, body), "fuse " .. name)
  end
  return H.parse(("(program %s (workgroup 64) (buffer %s %s read) %s (buffer %s %s write) "
    .. "(let i (gid x)) (if (lt i (len %s)) (then %s)))"):format(name, src, t, other_decl, dst,
    t, dst, body), "fuse " .. name)
end

-- A random chain x -> t1 -> t2 -> ... -> out, each stage maybe reading y too.
local function random_chain(seed, t)
  local rng = seed
  local function rand(n)
    rng = (rng * 1103515245 + 12345) % 2147483648
    return rng % n + 1
  end
  local nstages = 2 + rand(3)
  local progs, internal = {}, {}
  local src = "x"
  for s = 1, nstages do
    local dst = s == nstages and "out" or ("t" .. s)
    if dst ~= "out" then internal[#internal + 1] = dst end
    local op = OPS[t][rand(#OPS[t])]
    local other = rand(2) == 1 and "y" or nil
    local c = t == "f32" and ("%d.5f32"):format(rand(7) - 4) or ("%du32"):format(rand(5))
    progs[s] = stage(("s%d_%d"):format(seed, s), t, src, dst, other, op, c, rand(3) == 1)
    src = dst
  end
  return progs, internal
end

local function inputs(t, n, seed)
  local x, y = {}, {}
  for i = 1, n do
    if t == "f32" then
      x[i] = ((i * 7 + seed) % 23 - 11) * 0.37
      y[i] = ((i * 5 + seed) % 13 - 6) * 1.25
    else
      x[i] = (i * 2654435761 + seed) % 4294967296
      y[i] = (i * 40503 + seed) % 65536
    end
  end
  return x, y
end

-- Runs the chain stage by stage; intermediate buffers are zero-filled arrays of n.
local function run_chain(be, progs, t, n, x, y)
  local bufs = { x = x, y = y }
  for _, p in ipairs(progs) do
    local args = {}
    for _, d in ipairs(p:decls()) do
      if d.kind == "buffer" then args[d.name] = bufs[d.name] or vyre.array(t, n) end
    end
    local r = be:run(p, args)
    for k, v in pairs(r) do bufs[k] = v end
  end
  return bufs.out
end

local function run_fused(be, fused, internal, t, n, x, y)
  local args = { x = x, out = vyre.array(t, n) }
  for _, d in ipairs(fused:decls()) do
    if d.name == "y" then args.y = y end
  end
  for _, name in ipairs(internal) do args[name .. "_len"] = n end
  return be:run(fused, args).out
end

describe("vyre.fuse", function()
  it("gives the chain's results bit for bit on random elementwise chains (reference)", function()
    local be = H.ref()
    for seed = 1, 40 do
      local t = seed % 2 == 0 and "f32" or "u32"
      local progs, internal = random_chain(seed, t)
      local fused = vyre.fuse(progs, { internal = internal })
      assert.truthy(vyre.validate(fused))
      local n = 37 + seed * 5
      local x, y = inputs(t, n, seed)
      local want = run_chain(be, progs, t, n, x, y)
      local got = run_fused(be, fused, internal, t, n, x, y)
      local diff = H.parity_diff(want, got)
      if diff then error(("seed %d: %s\n%s"):format(seed, diff, fused:text())) end
    end
  end)

  it("keeps buffers that are not internal as buffers of the fused program", function()
    local a = stage("a1", "f32", "x", "t", nil, "add", "1.0f32")
    local b = stage("b1", "f32", "t", "out", nil, "mul", "2.0f32")
    local fused = vyre.fuse({ a, b })
    local names = {}
    for _, d in ipairs(fused:decls()) do
      names[#names + 1] = d.name .. ":" .. (d.access or d.type)
    end
    assert.are.same({ "x:read", "t:read_write", "out:write" }, names)
    local r = H.ref():run(fused,
      { x = { 1, 2 }, t = vyre.array("f32", 2), out = vyre.array("f32", 2) })
    assert.are.same({ 2, 3 }, { r.t[1], r.t[2] })
    assert.are.same({ 4, 6 }, { r.out[1], r.out[2] })
  end)

  it("refuses what cannot fuse, naming the program and the reason", function()
    local a = stage("a2", "f32", "x", "t", nil, "add", "1.0f32")
    local far = H.parse([[(program far (workgroup 64) (buffer t f32 read) (buffer out f32 write)
      (let i (gid x)) (if (lt i (len out)) (then (store out i (load t (add i 1u32))))))]])
    assert.matches("vyre.fuse: program 2 ('far') loads 't' at (add i 1u32), not at its own "
      .. "index (gid x)", H.error_of(vyre.fuse, { a, far }), 1, true)
    local wide = H.parse("(program wide (workgroup 32) (buffer t f32 read))")
    assert.matches("program 2 ('wide') has workgroup (32 1 1); the chain needs one 1-D "
      .. "workgroup, (64)", H.error_of(vyre.fuse, { a, wide }), 1, true)
    local bar = H.parse([[(program bar (workgroup 64) (buffer t f32 read_write) (barrier))]])
    assert.matches("program 2 ('bar') has a barrier", H.error_of(vyre.fuse, { a, bar }), 1, true)
    local sh = H.parse([[(program sh (workgroup 64) (shared s f32 64) (buffer t f32 read))]])
    assert.matches("program 2 ('sh') declares shared memory", H.error_of(vyre.fuse, { a, sh }),
      1, true)
    local loopret = H.parse([[(program lr (workgroup 64) (buffer t f32 read)
      (for k 0u32 4u32 1u32 (return)))]])
    assert.matches("program 1 ('lr') returns from inside a loop",
      H.error_of(vyre.fuse, { loopret, a }), 1, true)
    local typed = H.parse("(program ty (workgroup 64) (buffer t u32 read))")
    assert.matches("program 2 ('ty') declares 't' with another kind or type",
      H.error_of(vyre.fuse, { a, typed }), 1, true)
    assert.matches("internal buffer 'nope' is not a buffer of any program",
      H.error_of(vyre.fuse, { a }, { internal = { "nope" } }), 1, true)
    assert.matches("vyre.fuse: unknown option 'foo'", H.error_of(vyre.fuse, { a }, { foo = 1 }), 1,
      true)
    assert.matches("vyre.fuse: expected a list of programs", H.error_of(vyre.fuse, a), 1, true)
  end)

  it("#gpu runs fused chains on the GPU with the reference's bits", function()
    local gpu = assert(require("vyre.cuda").device(0))
    local ref = H.ref()
    for seed = 41, 60 do
      local t = seed % 2 == 0 and "f32" or "u32"
      local progs, internal = random_chain(seed, t)
      local fused = vyre.fuse(progs, { internal = internal })
      local n = 100003
      local x, y = inputs(t, n, seed)
      local want = run_chain(ref, progs, t, n, x, y)
      local got = run_fused(gpu, fused, internal, t, n, x, y)
      local diff = H.parity_diff(want, got)
      assert(not diff, ("seed %d: %s"):format(seed, diff))
    end
  end)
end)
