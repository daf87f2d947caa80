-- 84: groups, collectives, collective steps and peer copies on real GPUs with the real
-- NCCL (#gpu; docs/MULTIGPU.md). Needs 2 or more GPUs and NCCL (found as
-- vyre.cuda.nccl() says); with fewer GPUs or without NCCL every test is marked pending
-- with the reason, never passed. The values are those spec 89 checks on the fake NCCL;
-- here they come from NCCL's kernels on the devices' streams.
local vyre = require("vyre")
local H = require("spec.helpers")

local TYPES = { "bool", "i32", "u32", "i64", "u64", "f32", "f64" }

local function value(t, r, i)
  local v = (r * 3 + i) % 5 + 1
  if t == "bool" then return (r + i) % 2 == 0 end
  if t == "i32" or t == "i64" then return v - 3 end
  if t == "f32" or t == "f64" then return v + 0.5 end
  return v
end

local function values(t, r, n)
  local out = {}
  for i = 1, n do out[i] = value(t, r, i) end
  return out
end

local function combine(t, op, a, b)
  if t == "bool" then
    if op == "min" then return a and b end
    return a or b
  end
  if op == "add" then return a + b end
  if op == "prod" then return a * b end
  if op == "min" then return math.min(a, b) end
  return math.max(a, b)
end

local function get(buf) return buf:download():totable() end

describe("NCCL on GPUs #gpu", function()
  local cuda = require("vyre.cuda")
  local count = cuda.count() or 0
  local info, why = cuda.nccl()
  if count < 2 or not info then
    it("needs 2 GPUs and NCCL", function()
      pending(count < 2 and ("this machine has " .. count .. " GPU(s)") or why)
    end)
    return
  end
  local size = math.min(count, 4)
  local g

  setup(function()
    local ords = {}
    for i = 1, size do ords[i] = i - 1 end
    g = cuda.group(ords, { timeout = 120 })
  end)
  teardown(function() if g then g:free() end end)

  local function bufs(t, n, empty)
    local out = {}
    for r = 0, size - 1 do
      local be = g.backends[r + 1]
      out[r + 1] = empty and be:buffer(t, n) or be:buffer(t, values(t, r, n))
    end
    return out
  end

  it("finds NCCL and keeps NVLink multicast off", function()
    assert.is_true(info.version >= 21200)
    assert.is_true(#info.path > 0)
    assert.equal("0", os.getenv("NCCL_NVLS_ENABLE") or "0")
    print(("\n  NCCL %s from %s, %d GPUs"):format(info.version_string, info.path, count))
  end)

  it("all_reduce of every type and op matches the host", function()
    for _, t in ipairs(TYPES) do
      local ops = t == "bool" and { "min", "max" } or { "add", "prod", "min", "max" }
      for _, op in ipairs(ops) do
        local b = bufs(t, 7)
        g:all_reduce(b, op)
        g:synchronize()
        for r = 1, size do
          local got = get(b[r])
          for i = 1, 7 do
            local acc = value(t, 0, i)
            for q = 1, size - 1 do acc = combine(t, op, acc, value(t, q, i)) end
            assert.equal(acc, got[i], t .. " " .. op)
          end
        end
      end
    end
  end)

  it("broadcast, all_gather, reduce_scatter and all_to_all move the right blocks", function()
    local b = bufs("f64", 4)
    g:broadcast(b, size - 1)
    local src, dst = bufs("u32", 3), bufs("u32", 3 * size, true)
    g:all_gather(src, dst)
    local rs_src, rs_dst = bufs("i64", 2 * size), bufs("i64", 2, true)
    g:reduce_scatter(rs_src, rs_dst, "add")
    local a_src, a_dst = bufs("i32", 2 * size), bufs("i32", 2 * size, true)
    g:all_to_all(a_src, a_dst)
    g:synchronize()
    for r = 0, size - 1 do
      assert.same(values("f64", size - 1, 4), get(b[r + 1]))
      local want = {}
      for q = 0, size - 1 do for _, v in ipairs(values("u32", q, 3)) do want[#want + 1] = v end end
      assert.same(want, get(dst[r + 1]))
      local got = get(rs_dst[r + 1])
      for i = 1, 2 do
        local acc = 0
        for q = 0, size - 1 do acc = acc + value("i64", q, r * 2 + i) end
        assert.equal(acc, got[i])
      end
      local a = get(a_dst[r + 1])
      for q = 0, size - 1 do
        local sv = values("i32", q, 2 * size)
        assert.equal(sv[r * 2 + 1], a[q * 2 + 1])
        assert.equal(sv[r * 2 + 2], a[q * 2 + 2])
      end
    end
  end)

  it("collective steps are ordered with kernels in g:sequence", function()
    local inc, b = {}, bufs("u32", 1000)
    for r = 1, size do inc[r] = g.backends[r]:compile(vyre.parse(H.INC)) end
    local st = g:collective("all_reduce", b)
    local lists = {}
    for r = 1, size do lists[r] = { { inc[r], { v = b[r] } }, st[r] } end
    g:sequence(lists, { times = 3 })
    for r = 1, size do
      local got = get(b[r])
      for i = 1, 1000, 97 do
        -- each round: +1 everywhere, then the sum over ranks
        local y = 0
        for q = 0, size - 1 do y = y + value("u32", q, i) + 1 end
        for _ = 2, 3 do y = (y + 1) * size end
        assert.equal(y, got[i])
      end
    end
  end)

  it("lib.reduce and lib.scan over the group equal one device's over the concatenation", function()
    local lib = vyre.lib
    local parts, dsts, all = {}, {}, {}
    for r = 0, size - 1 do
      local v = {}
      for i = 1, 100000 + r do v[i] = (i * 7 + r) % 1000 - 500 end
      for _, x in ipairs(v) do all[#all + 1] = x end
      parts[r + 1] = g.backends[r + 1]:buffer("i64", v)
      dsts[r + 1] = g.backends[r + 1]:buffer("i64", #v)
    end
    local one = g.backends[1]
    local whole, wdst = one:buffer("i64", all), one:buffer("i64", #all)
    assert.equal(lib.reduce(one, whole), lib.reduce(g, parts))
    lib.scan(one, whole, wdst)
    lib.scan(g, parts, dsts)
    local want, got = get(wdst), {}
    for r = 1, size do for _, x in ipairs(get(dsts[r])) do got[#got + 1] = x end end
    assert.same(want, got)
  end)

  it("lib.sort over the group equals one device's stable sort of the concatenation", function()
    local lib = vyre.lib
    local keys, vals, allk, allv = {}, {}, {}, {}
    for r = 1, size do
      local k, v = {}, {}
      for i = 1, 200000 + 17 * r do
        local x = (i * 2654435761 + r * 40503) % 100003
        k[i], v[i] = x, #allv + 1
        allk[#allk + 1], allv[#allv + 1] = x, #allv + 1
      end
      keys[r] = g.backends[r]:buffer("u32", k)
      vals[r] = g.backends[r]:buffer("u32", v)
    end
    local one = g.backends[1]
    local wk, wv = one:buffer("u32", allk), one:buffer("u32", allv)
    lib.sort(g, keys, vals)
    lib.sort(one, wk, wv)
    local gk, gv = {}, {}
    for r = 1, size do
      for _, x in ipairs(get(keys[r])) do gk[#gk + 1] = x end
      for _, x in ipairs(get(vals[r])) do gv[#gv + 1] = x end
    end
    assert.same(get(wk), gk)
    assert.same(get(wv), gv)
  end)

  it("peer copies: be:info().peers names the path and the bytes arrive", function()
    local a = g.backends[1]:buffer("f32", 1 << 20)
    a:iota()
    local b = g.backends[2]:buffer("f32", 1 << 20)
    a:copy_to(b)
    local path = g.backends[1]:info().peers[1]
    assert.truthy(path == "peer" or path == "staged")
    print("\n  device 0 -> 1: " .. path)
    local got = get(b)
    assert.equal(0, got[1])
    assert.equal((1 << 20) - 1, got[1 << 20])
  end)

  it("one process per GPU through vyre launch: collectives, send/recv and a graph", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      local vyre = require("vyre")
      local g = vyre.cuda.group_from_env({timeout = 120})
      local be = g.backends[1]
      local b = be:buffer("i32", {g.rank + 1})
      local gr = be:graph(g:collective("all_reduce", {b}))
      gr:launch(1)
      local x = be:buffer("f64", {g.rank + 0.25})
      if g.rank == 0 then g:send(x, 1) elseif g.rank == 1 then g:recv(x, 0) end
      g:synchronize()
      print(("rank %d sum %d x %s"):format(g.rank, b:download():totable()[1],
        x:download():totable()[1]))
      gr:free(); g:free()]])
    f:close()
    local p = assert(io.popen("bin/vyre launch -n 2 " .. script .. " 2>&1; echo rc=$?"))
    local out = p:read("a")
    p:close()
    os.remove(script)
    assert.truthy(out:find("rank 0 sum 3 x 0.25", 1, true), out)
    assert.truthy(out:find("rank 1 sum 3 x 0.25", 1, true), out)
    assert.truthy(out:find("rc=0", 1, true), out)
  end)

  it("examples/jacobi_multi.lua and bfs_multi.lua match one GPU", function()
    local p = assert(io.popen("lua5.4 examples/jacobi_multi.lua 2>&1"))
    local out = p:read("a")
    p:close()
    assert.truthy(out:find("matches one GPU bit for bit", 1, true), out)
    p = assert(io.popen("lua5.4 examples/bfs_multi.lua 2>&1"))
    out = p:read("a")
    p:close()
    assert.truthy(out:find("matches plain Lua and one GPU", 1, true), out)
  end)

  it("a rank that leaves mid-run makes the other's collective fail or time out, not hang",
    function()
      -- Rank 1 joins, then exits before the collective; rank 0's all_reduce waits for a
      -- peer that is gone: NCCL reports it, or vyre's 10 s deadline aborts the group.
      local script = os.tmpname()
      local f = assert(io.open(script, "w"))
      f:write([[
        local vyre = require("vyre")
        local g = vyre.cuda.group_from_env({timeout = 10})
        if g.rank == 1 then os.exit(0) end
        local b = g.backends[1]:buffer("u32", {1})
        local t0 = os.time()
        local ok, err = pcall(function() g:all_reduce(b); g:synchronize() end)
        print(("rank 0 ok %s after %d s: %s"):format(tostring(ok), os.time() - t0,
          tostring(err)))]])
      f:close()
      local p = assert(io.popen("timeout 120 bin/vyre launch -n 2 " .. script
        .. " 2>&1; echo rc=$?"))
      local out = p:read("a")
      p:close()
      os.remove(script)
      assert.truthy(out:find("rank 0 ok false after", 1, true), out)
      assert.truthy(out:find("Fix:", 1, true), out)
      assert.falsy(out:find("rc=124", 1, true), out) -- the 120 s guard never fired
    end)

  it("a rank that never joins times out with a Fix instead of hanging", function()
    local ok, err = pcall(cuda.group, { rank = 0, size = 2, id = cuda.nccl_id() },
      { timeout = 5, device = 0 })
    assert.is_false(ok)
    assert.truthy(err:find("did not finish within 5.0 s", 1, true), err)
  end)
end)
