-- 83: groups, collectives, collective steps and peer copies on the fake NCCL over the
-- fake driver (#fakecuda; docs/MULTIGPU.md "Fake NCCL"). Run with
--   VYRE_LIBCUDA=build/fakecuda/libcuda.so.1 VYRE_FAKECUDA_DEVICES=4
--   VYRE_LIBNCCL=build/fakenccl/libnccl.so.2
-- (scripts/test.sh does): every collective, element type and op is checked by value
-- on groups of 2 and 4 devices, in place and into a second list; then the step forms,
-- the errors (raised before anything is enqueued), NCCL faults, a rank that never
-- comes, one process per rank (children through the fake's /dev/shm clique and
-- bin/vyre launch), and nothing left alive in the fake driver.
local vyre = require("vyre")
local F = require("tests.fakecuda.harness")
local H = require("spec.helpers")

local available, why = F.available()
local nccl_lib = os.getenv("VYRE_LIBNCCL") or ""
if available and not nccl_lib:find("fakenccl/libnccl.so.2", 1, true) then
  available, why = false, "needs VYRE_LIBNCCL=build/fakenccl/libnccl.so.2 (scripts/test.sh sets it)"
end

local TYPES = { "bool", "i32", "u32", "i64", "u64", "f32", "f64" }
local OPS = { "add", "prod", "min", "max" }

-- Rank r's element i (1-based) of type t: small, so sums and products are exact.
local function value(t, r, i)
  local v = (r * 3 + i) % 5 + 1
  if t == "bool" then return (r + i) % 2 == 0 end
  if t == "i32" or t == "i64" then return v - 3 end
  if t == "f32" or t == "f64" then return v + 0.5 end
  return v
end

local function values(t, r, n, first)
  local out = {}
  for i = 1, n do out[i] = value(t, r, (first or 0) + i) end
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

-- The reduction over ranks 0 .. size-1 of element i.
local function reduced(t, op, size, i)
  local acc = value(t, 0, i)
  for r = 1, size - 1 do acc = combine(t, op, acc, value(t, r, i)) end
  return acc
end

local function ops_for(t)
  if t == "bool" then return { "min", "max" } end
  return OPS
end

local function get(buf) return buf:download():totable() end

-- Runs Lua code in a child process with the same paths and extra environment.
local function child(env, code)
  local cmd = string.format("%s LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q 2>&1", env,
    package.path, package.cpath, code)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

describe("NCCL groups on the fake NCCL #fakecuda", function()
  if not available then
    it("needs the fake driver and the fake NCCL", function() pending(why) end)
    return
  end
  local cuda = require("vyre.cuda")

  setup(function()
    F.register(H.INC)
  end)

  it("vyre.cuda.nccl() says the version and where NCCL was found", function()
    local info = cuda.nccl()
    assert.is_table(info)
    assert.equal(22703, info.version)
    assert.equal("2.27.3", info.version_string)
    assert.equal(nccl_lib, info.path)
    local id = cuda.nccl_id()
    assert.equal(256, #id)
    assert.truthy(id:match("^[0-9a-f]+$"))
    assert.are_not.equal(id, cuda.nccl_id())
  end)

  it("a missing NCCL is false + why with a Fix, and everything else still works", function()
    local out = child("VYRE_LIBNCCL=/nonexistent/libnccl.so.2",
      "local c = require('vyre.cuda'); local ok, why = c.nccl(); print(ok, why); "
      .. "print(pcall(c.group, {0})); print(c.device(0) ~= nil)")
    assert.truthy(out:find("false\tno NCCL: dlopen%(\"/nonexistent/libnccl.so.2\"%)"))
    assert.truthy(out:find("Fix: point VYRE_LIBNCCL", 1, true))
    assert.truthy(out:find("false\tvyre.cuda.group: no NCCL", 1, true))
    assert.truthy(out:find("\ntrue\n", 1, true))
  end)

  it("NCCL_NVLS_ENABLE is 0 once NCCL loaded, unless the user set it", function()
    local code = "local c = require('vyre.cuda'); c.nccl(); print(os.getenv('NCCL_NVLS_ENABLE'))"
    assert.equal("0\n", child("", code))
    -- the user's own value is kept; "00" is still 0 to NCCL, so even this check never
    -- asks for NVLink multicast (the GPU machines are shared)
    assert.equal("00\n", child("NCCL_NVLS_ENABLE=00", code))
  end)

  for _, size in ipairs({ 2, 4 }) do
    describe(size .. " devices in one process", function()
      local g, ords
      setup(function()
        ords = {}
        for i = 1, size do ords[i] = i - 1 end
        g = cuda.group(ords)
      end)
      teardown(function() g:free() end)

      local function bufs(t, n, first, empty)
        local out = {}
        for r = 0, size - 1 do
          local be = g.backends[r + 1]
          out[r + 1] = empty and be:buffer(t, n) or be:buffer(t, values(t, r, n, first))
        end
        return out
      end

      it("g.size, g.rank and g.backends are the devices' backends", function()
        assert.equal(size, g.size)
        assert.equal(0, g.rank)
        for i = 1, size do assert.equal(cuda.device(i - 1), g.backends[i]) end
        assert.truthy(tostring(g):find("vyre.Group(size " .. size, 1, true))
      end)

      it("all_reduce: every type and op, in place and into a second list", function()
        local n = 5
        for _, t in ipairs(TYPES) do
          for _, op in ipairs(ops_for(t)) do
            local b = bufs(t, n)
            g:all_reduce(b, op)
            local src, dst = bufs(t, n), bufs(t, n, 0, true)
            g:all_reduce(src, dst, op)
            for r = 1, size do
              local got, got2, orig = get(b[r]), get(dst[r]), get(src[r])
              for i = 1, n do
                local want = reduced(t, op, size, i)
                assert.equal(want, got[i], t .. " " .. op .. " rank " .. r)
                assert.equal(want, got2[i], t .. " " .. op .. " (second list)")
                assert.equal(value(t, r - 1, i), orig[i], "the source is unchanged")
              end
            end
          end
        end
      end)

      it("reduce: only the root receives, every type and op", function()
        for _, t in ipairs(TYPES) do
          for _, op in ipairs(ops_for(t)) do
            local root = size - 1
            local src, dst = bufs(t, 3), bufs(t, 3, 0, true)
            g:reduce(src, dst, root, op)
            local got = get(dst[root + 1])
            for i = 1, 3 do assert.equal(reduced(t, op, size, i), got[i], t .. " " .. op) end
            local b = bufs(t, 3)
            g:reduce(b, 0, op)
            got = get(b[1])
            for i = 1, 3 do assert.equal(reduced(t, op, size, i), got[i], t .. " in place") end
          end
        end
      end)

      it("broadcast: the root's values everywhere, every type", function()
        for _, t in ipairs(TYPES) do
          local b = bufs(t, 4)
          g:broadcast(b, 1)
          local src, dst = bufs(t, 4), bufs(t, 4, 0, true)
          g:broadcast(src, dst, 0)
          for r = 1, size do
            assert.same(values(t, 1, 4), get(b[r]), t)
            assert.same(values(t, 0, 4), get(dst[r]), t .. " (second list)")
          end
        end
      end)

      it("all_gather: rank blocks in rank order, every type", function()
        for _, t in ipairs(TYPES) do
          local src, dst = bufs(t, 3), bufs(t, 3 * size, 0, true)
          g:all_gather(src, dst)
          local want = {}
          for r = 0, size - 1 do
            for _, v in ipairs(values(t, r, 3)) do want[#want + 1] = v end
          end
          for r = 1, size do assert.same(want, get(dst[r]), t) end
        end
      end)

      it("reduce_scatter: rank r gets block r of the reduction, every type and op", function()
        for _, t in ipairs(TYPES) do
          for _, op in ipairs(ops_for(t)) do
            local src, dst = bufs(t, 2 * size), bufs(t, 2, 0, true)
            g:reduce_scatter(src, dst, op)
            for r = 0, size - 1 do
              local got = get(dst[r + 1])
              for i = 1, 2 do
                assert.equal(reduced(t, op, size, r * 2 + i), got[i], t .. " " .. op)
              end
            end
          end
        end
      end)

      it("all_to_all: block j of rank r lands as block r on rank j, every type", function()
        for _, t in ipairs(TYPES) do
          local blk = 2
          local src, dst = bufs(t, blk * size), bufs(t, blk * size, 0, true)
          g:all_to_all(src, dst)
          for j = 0, size - 1 do
            local got = get(dst[j + 1])
            for r = 0, size - 1 do
              local sv = values(t, r, blk * size)
              for k = 1, blk do
                assert.equal(sv[j * blk + k], got[r * blk + k], t)
              end
            end
          end
        end
      end)

      it("send and recv are refused in one process with a Fix", function()
        local b = bufs("u32", 2)
        local ok, err = pcall(g.send, g, b, 1)
        assert.is_false(ok)
        assert.truthy(err:find("vyre.Group:send: send and recv are for groups of one process "
          .. "per GPU", 1, true))
        assert.truthy(err:find("Fix:", 1, true))
      end)

      it("g:collective steps run in lockstep with kernels in g:sequence", function()
        local inc = {}
        for r = 1, size do inc[r] = g.backends[r]:compile(vyre.parse(H.INC)) end
        local b = bufs("u32", 4)
        local st = g:collective("all_reduce", b, "add")
        assert.equal(size, #st)
        local lists = {}
        for r = 1, size do
          lists[r] = { { inc[r], { v = b[r] } }, st[r], { inc[r], { v = b[r] } } }
        end
        g:sequence(lists, { times = 2 })
        -- round: +1 on every rank, sum over ranks, +1; twice
        for r = 1, size do
          local got = get(b[r])
          for i = 1, 4 do
            local x = 0
            for q = 0, size - 1 do x = x + value("u32", q, i) + 1 end
            x = x + 1
            x = (x + 1) * size + 1
            assert.equal(x, got[i])
          end
        end
      end)

      it("steps whose buffers or group were freed raise instead of running", function()
        local b = bufs("u32", 2)
        local st = g:collective("all_reduce", b)
        b[1]:free()
        local lists = {}
        for r = 1, size do lists[r] = { st[r] } end
        local ok, err = pcall(g.sequence, g, lists)
        assert.is_false(ok)
        assert.truthy(err:find("a buffer of a collective step was freed", 1, true), err)
        local g2 = cuda.group({ 0, 1 })
        local b2 = { g2.backends[1]:buffer("u32", 1), g2.backends[2]:buffer("u32", 1) }
        local st2 = g2:collective("all_reduce", b2)
        g2:free()
        ok, err = pcall(g2.sequence, g2, { { st2[1] }, { st2[2] } })
        assert.is_false(ok)
        assert.truthy(err:find("the group was freed", 1, true), err)
        local mixed = { { st2[1] }, { st2[2] } }
        for r = 3, size do mixed[r] = {} end
        ok, err = pcall(g.sequence, g, mixed)
        assert.is_false(ok)
        assert.truthy(err:find("the group of a collective step was freed", 1, true), err)
      end)

      it("a collective step in one device's be:sequence says to use g:sequence", function()
        local b = bufs("f32", 2)
        local st = g:collective("all_reduce", b)
        local ok, err = pcall(g.backends[1].sequence, g.backends[1], { st[1] })
        assert.is_false(ok)
        assert.truthy(err:find("g:sequence", 1, true))
        assert.truthy(err:find("Fix:", 1, true))
        ok, err = pcall(g.backends[2].sequence, g.backends[2], { st[1] })
        assert.is_false(ok)
        assert.truthy(err:find("collective of another device", 1, true))
      end)

      it("mismatched lists raise with a Fix before anything is enqueued", function()
        local b = bufs("f32", 4)
        local function fails(pattern, f, ...)
          local ok, err = pcall(f, g, ...)
          assert.is_false(ok)
          assert.truthy(err:find(pattern, 1, true), err)
          assert.truthy(err:find("Fix:", 1, true), err)
          for r = 1, size do assert.same(values("f32", r - 1, 4), get(b[r])) end
        end
        local short = { table.unpack(b, 1, size - 1) }
        fails("has " .. (size - 1) .. " Buffers but the group drives " .. size, g.all_reduce, short)
        local swapped = { b[2], b[1], table.unpack(b, 3) }
        fails("belongs to another backend", g.all_reduce, swapped)
        local mixed = { table.unpack(b) }
        mixed[size] = g.backends[size]:buffer("u32", 4)
        fails("every device's buffer must have the same type and count", g.all_reduce, mixed)
        local counts = { table.unpack(b) }
        counts[1] = g.backends[1]:buffer("f32", 3)
        fails("buffer 2 is f32[4] but buffer 1 is f32[3]", g.all_reduce, counts)
        fails("unknown op 'mean'", g.all_reduce, b, "mean")
        fails("root 9 is not a rank", g.broadcast, b, 9)
        fails("the destination must hold size x source", g.all_gather, b, b)
        local bools = bufs("bool", 2)
        local ok, err = pcall(g.all_reduce, g, bools, "add")
        assert.is_false(ok)
        assert.truthy(err:find("bool buffers reduce with \"min\" (and) or \"max\" (or) only",
          1, true))
      end)

      it("buf:copy_to copies across devices on the peer path; be:info().peers says so", function()
        local b = bufs("i64", 6)
        local d = g.backends[size]:buffer("i64", 6)
        b[1]:copy_to(d)
        assert.same(values("i64", 0, 6), get(d))
        assert.equal("peer", g.backends[1]:info().peers[size - 1])
        local ok, err = pcall(b[1].copy_to, b[1], g.backends[2]:buffer("i64", 5))
        assert.is_false(ok)
        assert.truthy(err:find("cannot copy i64[6] into i64[5]", 1, true))
        local v = b[2]:view(2, 3)
        v:copy_to(d)
        assert.same({ value("i64", 1, 2), value("i64", 1, 3), value("i64", 1, 4),
          value("i64", 0, 4), value("i64", 0, 5), value("i64", 0, 6) }, get(d))
      end)
    end)
  end

  describe("vyre.lib over a group", function()
    local U = require("vyre.lib.util")
    local lib = vyre.lib
    local plain_kernel
    setup(function()
      -- the fake computes only registered programs: register vyre.lib's as they are made
      plain_kernel = U.kernel
      U.kernel = function(be, key, gen)
        return plain_kernel(be, key, function()
          local text = gen()
          F.register(text)
          return text
        end)
      end
    end)
    teardown(function() U.kernel = plain_kernel end)

    for _, size in ipairs({ 2, 4 }) do
      it(("sort on %d devices equals one device's stable sort of the concatenation"):format(size),
        function()
          local ords = {}
          for i = 1, size do ords[i] = i - 1 end
          local g = cuda.group(ords)
          local one = cuda.device(0)
          local seed = 12345
          local function rnd(m)
            seed = (seed * 1103515245 + 12345) % 2147483648
            return seed % m
          end
          -- every key type on 2 devices, two on 4 (the interpreter runs the radix passes)
          local types = size == 2 and { "i32", "u32", "f32", "i64", "u64", "f64" }
            or { "i32", "f64" }
          for ti, t in ipairs(types) do
            for _, with_values in ipairs(ti == 1 and { false, true } or { true }) do
              local keys, vals, allk, allv = {}, {}, {}, {}
              for r = 1, size do
                local k, v = {}, {}
                for i = 1, 20 + 9 * r do -- uneven parts, many equal keys
                  local x = rnd(31) - 15
                  if t == "u32" or t == "u64" then x = x + 15 end
                  if t == "f32" or t == "f64" then x = x + 0.5 end
                  k[i], v[i] = x, #allv + 1
                  allk[#allk + 1], allv[#allv + 1] = x, #allv + 1
                end
                keys[r] = g.backends[r]:buffer(t, k)
                vals[r] = g.backends[r]:buffer("u32", v)
              end
              local wk, wv = one:buffer(t, allk), one:buffer("u32", allv)
              if with_values then
                lib.sort(g, keys, vals)
                lib.sort(one, wk, wv)
              else
                lib.sort(g, keys)
                lib.sort(one, wk)
              end
              local gk, gv = {}, {}
              for r = 1, size do
                assert.equal(20 + 9 * r, keys[r].count) -- every rank keeps its count
                for _, x in ipairs(get(keys[r])) do gk[#gk + 1] = x end
                for _, x in ipairs(get(vals[r])) do gv[#gv + 1] = x end
              end
              assert.same(get(wk), gk, t)
              if with_values then assert.same(get(wv), gv, t .. " values (stable)") end
            end
          end
          g:free()
        end)

      it(("sort on %d devices: all-equal keys, an empty rank and -0/NaN stay stable"):format(size),
        function()
          local ords = {}
          for i = 1, size do ords[i] = i - 1 end
          local g = cuda.group(ords)
          local one = cuda.device(0)
          local cases = {
            { t = "u32", gen = function() return 7 end },
            { t = "f32", gen = function(i)
              return ({ 0.0, -0.0, 0 / 0, -1.5, 2.5 })[i % 5 + 1] end },
          }
          for _, case in ipairs(cases) do
            local keys, vals, allk, allv = {}, {}, {}, {}
            for r = 1, size do
              local k, v = {}, {}
              local len = r == 2 and 0 or 5 + 3 * r -- rank 2 holds nothing
              for i = 1, len do
                k[i], v[i] = case.gen(#allv), #allv + 1
                allk[#allk + 1], allv[#allv + 1] = k[i], #allv + 1
              end
              keys[r] = g.backends[r]:buffer(case.t, k)
              vals[r] = g.backends[r]:buffer("u32", v)
            end
            local wk, wv = one:buffer(case.t, allk), one:buffer("u32", allv)
            lib.sort(g, keys, vals)
            lib.sort(one, wk, wv)
            local gk, gv = {}, {}
            for r = 1, size do
              assert.equal(r == 2 and 0 or 5 + 3 * r, keys[r].count)
              for _, x in ipairs(get(vals[r])) do gv[#gv + 1] = x end
              gk[#gk + 1] = keys[r]:download():bytes()
            end
            assert.equal(wk:download():bytes(), table.concat(gk), case.t .. " key bits")
            assert.same(get(wv), gv, case.t .. " values (stable)")
          end
          g:free()
        end)

      it(("reduce and scan on %d devices equal one device's over the concatenation"):format(size),
        function()
          local ords = {}
          for i = 1, size do ords[i] = i - 1 end
          local g = cuda.group(ords)
          local one = cuda.device(0)
          for _, t in ipairs({ "i32", "u32", "i64", "u64", "f32", "f64" }) do
            local parts, dsts, all = {}, {}, {}
            for r = 0, size - 1 do
              local v = values(t, r, 3 + r) -- uneven parts
              for _, x in ipairs(v) do all[#all + 1] = x end
              parts[r + 1] = g.backends[r + 1]:buffer(t, v)
              dsts[r + 1] = g.backends[r + 1]:buffer(t, #v)
            end
            local whole, wdst = one:buffer(t, all), one:buffer(t, #all)
            for _, op in ipairs({ "add", "min", "max" }) do
              assert.equal(lib.reduce(one, whole, op), lib.reduce(g, parts, op), t .. " " .. op)
              for _, excl in ipairs({ false, true }) do
                lib.scan(one, whole, wdst, op, { exclusive = excl })
                lib.scan(g, parts, dsts, op, { exclusive = excl })
                local want, got = get(wdst), {}
                for r = 1, size do
                  for _, x in ipairs(get(dsts[r])) do got[#got + 1] = x end
                end
                -- NaN (an exclusive float min/max scan's first element) equals itself here
                for k = 1, #want do
                  if want[k] ~= want[k] and got[k] ~= got[k] then want[k], got[k] = "NaN", "NaN" end
                end
                assert.same(want, got, t .. " " .. op .. (excl and " exclusive" or ""))
              end
            end
          end
          local v, timing = lib.reduce_timed(g, {
            g.backends[1]:buffer("u32", { 1 }), table.unpack((function()
              local rest = {}
              for r = 2, size do rest[#rest + 1] = g.backends[r]:buffer("u32", { r }) end
              return rest
            end)()) })
          assert.equal(size * (size + 1) // 2, v)
          assert.is_true(timing.wall_ns > 0)
          local empties = {}
          for r = 1, size do empties[r] = g.backends[r]:buffer("u32", r == 1 and 0 or 1) end
          local ok, err = pcall(lib.reduce, g, empties, "min")
          assert.is_false(ok)
          assert.truthy(err:find("vyre.lib.reduce:", 1, true), err)
          g:free()
        end)
    end
  end)

  it("examples/jacobi_multi.lua and bfs_multi.lua match one GPU on 2 and 4 devices", function()
    -- the fake computes registered programs only: register the example's and vyre.lib's
    local wrapper = [[
      local F = require('tests.fakecuda.harness'); assert(F.available())
      local U = require('vyre.lib.util'); local plain = U.kernel
      U.kernel = function(be, key, gen)
        return plain(be, key, function() local t = gen(); F.register(t); return t end)
      end
      local vyre = require('vyre'); local program = vyre.program
      vyre.program = function(...) local p = program(...); F.register(p); return p end
      local ex = os.getenv('EXAMPLE')
      arg = { [0] = ex }
      dofile(ex)]]
    for _, n in ipairs({ 2, 4 }) do
      local env = "VYRE_FAKECUDA_DEVICES=" .. n
      local out = child(env .. " EXAMPLE=examples/jacobi_multi.lua", wrapper)
      assert.truthy(out:find(("in %d strips on %d GPUs converged"):format(n, n), 1, true), out)
      assert.truthy(out:find("matches one GPU bit for bit", 1, true), out)
      out = child(env .. " EXAMPLE=examples/bfs_multi.lua", wrapper)
      assert.truthy(out:find(("edges on %d GPUs"):format(n), 1, true), out)
      assert.truthy(out:find("matches plain Lua and one GPU", 1, true), out)
    end
  end)

  it("polling NCCL's progress asks again before it sleeps", function()
    -- Each group of collectives stays in progress for the next 2 queries of
    -- ncclCommGetAsyncError (the fake's VYRE_FAKENCCL_BUSY_POLLS): both ranks' first
    -- answer, so each call's wait pauses once, then finds both done. The poll used to sleep
    -- 0.2 ms whenever it found one in progress, a floor of 200 us under every call; now
    -- its first pauses yield the CPU and only a wait that has gone on for a while sleeps.
    -- Nothing here is timed: the fake counts its in-progress answers, the queries that
    -- follow one (re-polls), and the re-polls whose thread blocked in between (a voluntary
    -- context switch: nanosleep counts, sched_yield and being preempted do not).
    local out = child("VYRE_FAKECUDA_DEVICES=2 VYRE_FAKENCCL_BUSY_POLLS=2", [[
      local c = require('vyre.cuda')
      local nccl = package.loadlib((os.getenv('VYRE_BUILD_DIR') or 'build')
        .. '/fakecuda/fakecuda.so', 'luaopen_fakecuda')().nccl
      local g = c.group({0, 1}, {blocking = false})
      assert(g.blocking == false)
      local bufs = { g.backends[1]:buffer('f32', { 1 }), g.backends[2]:buffer('f32', { 2 }) }
      g:all_reduce(bufs); g:synchronize()
      local busy0, again0, slept0 = nccl('polls')
      for _ = 1, 300 do g:all_reduce(bufs) end
      g:synchronize()
      local busy, again, slept = nccl('polls')
      print(('busy %d again %d slept %d'):format(busy - busy0, again - again0,
        slept - slept0))]])
    local busy, again, slept = out:match("busy (%d+) again (%d+) slept (%d+)")
    assert.is_not_nil(busy, out)
    busy, again, slept = tonumber(busy), tonumber(again), tonumber(slept)
    -- every call's in-progress answers were waited for: each was asked again
    assert.are.equal(300 * 2, busy, out)
    assert.are.equal(busy, again, out)
    -- and asked again after a yield, not a sleep: the old poll blocked before every
    -- re-poll; a few may block here when the process was preempted past the yield phase
    -- (a 2-core machine with other work on it)
    assert.is_true(slept * 10 < again, out)
  end)

  it("g.blocking: one process blocks by default, one rank per process does not", function()
    local out = child("VYRE_FAKECUDA_DEVICES=2", [[
      local c = require('vyre.cuda')
      local function sum(g)
        local bufs = { g.backends[1]:buffer("i32", { 1, 2 }),
          g.backends[2]:buffer("i32", { 10, 20 }) }
        g:all_reduce(bufs); g:synchronize()
        return table.concat(bufs[2]:download():totable(), ',')
      end
      local a = c.group({0, 1})
      print('default', a.blocking, sum(a)); a:free()
      local b = c.group({0, 1}, {blocking = false})
      print('nonblocking', b.blocking, sum(b)); b:free()
      local r = c.group({rank = 0, size = 1, id = c.nccl_id()})
      print('rank', r.blocking); r:free()
      local r2 = c.group({rank = 0, size = 1, id = c.nccl_id()}, {blocking = true})
      print('rank blocking', r2.blocking); r2:free()
      print(pcall(c.group, {0, 1}, {blocking = 'yes'}))]])
    assert.truthy(out:find("default\ttrue\t11,22", 1, true), out)
    assert.truthy(out:find("nonblocking\tfalse\t11,22", 1, true), out)
    assert.truthy(out:find("rank\tfalse", 1, true), out)
    assert.truthy(out:find("rank blocking\ttrue", 1, true), out)
    assert.truthy(out:find("blocking must be true or false", 1, true), out)
    assert.truthy(out:find("Fix:", 1, true), out)
  end)

  it("without peer access, copies are staged through host memory", function()
    local out = child("VYRE_FAKECUDA_PEER=0", [[
      local c = require('vyre.cuda')
      local a, b = c.device(0), c.device(1)
      local x = a:buffer('u32', {5, 6, 7}); local y = b:buffer('u32', 3)
      x:copy_to(y)
      print(a:info().peers[1], table.concat(y:download():totable(), ','))]])
    assert.equal("staged\t5,6,7\n", out)
  end)

  it("an NCCL failure names the call and gives ncclGetErrorString's text", function()
    -- counted calls: GetUniqueId, GroupStart, 2 x InitRankConfig, GroupEnd (init), then
    -- GroupStart (6), AllReduce (7), AllReduce (8), GroupEnd (9)
    local code = [[
      local c = require('vyre.cuda')
      local g = c.group({0, 1})
      local b = {g.backends[1]:buffer('f32', {1}), g.backends[2]:buffer('f32', {2})}
      print(pcall(g.all_reduce, g, b))]]
    local out = child("VYRE_FAKENCCL_FAIL=7:5", code)
    assert.truthy(out:find("vyre.Group:all_reduce: ncclAllReduce failed: ncclInvalidUsage "
      .. "(invalid usage (fake NCCL)). Fix:", 1, true), out)
    out = child("VYRE_FAKENCCL_FAIL=3:2", "print(pcall(require('vyre.cuda').group, {0, 1}))")
    assert.truthy(out:find("ncclCommInitRankConfig failed: ncclSystemError", 1, true), out)
    out = child("VYRE_FAKENCCL_ASYNC=8:6", code .. "; print(pcall(g.synchronize, g))")
    assert.truthy(out:find("ncclRemoteError", 1, true), out)
    assert.truthy(out:find("Fix:", 1, true), out)
  end)

  it("a rank that never joins makes the group time out instead of hanging", function()
    -- Not timed: the deadline is what ended the wait (its message), and it aborted the
    -- communicator (a hang would never return).
    local id = cuda.nccl_id()
    local ok, err = pcall(cuda.group, { rank = 0, size = 2, id = id }, { timeout = 1 })
    assert.is_false(ok)
    assert.truthy(err:find("NCCL did not finish within 1.0 s", 1, true), err)
    assert.truthy(err:find("the communicator was aborted", 1, true), err)
    assert.truthy(err:find("Fix:", 1, true))
    local out = child("VYRE_NCCL_TIMEOUT=1", string.format(
      "print(pcall(require('vyre.cuda').group, {rank = 1, size = 3, id = %q}))", cuda.nccl_id()))
    assert.truthy(out:find("within 1.0 s", 1, true), out)
  end)

  it("a rank that leaves during the run makes the others' collective fail, not hang", function()
    local id = cuda.nccl_id()
    local code = [[
      local c = require('vyre.cuda')
      local r = tonumber(os.getenv('R'))
      local g = c.group({rank = r, size = 2, id = os.getenv('ID')}, {timeout = 20})
      if r == 1 then os.exit(0) end
      local b = g.backends[1]:buffer('u32', {1})
      local ok, err = pcall(function() g:all_reduce(b); g:synchronize() end)
      print(ok, err)]]
    local outs = {}
    for r = 0, 1 do outs[r] = os.tmpname() end
    for r = 0, 1 do
      os.execute(string.format("R=%d ID=%s VYRE_FAKENCCL_WAIT=1 VYRE_FAKECUDA_DEVICES=2 "
        .. "LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q > %q 2>&1 %s", r, id, package.path,
        package.cpath, code, outs[r], r == 0 and "&" or ""))
    end
    local out
    local deadline = os.time() + 30
    repeat
      local f = io.open(outs[0]); out = f and f:read("a") or ""; if f then f:close() end
      if out == "" then os.execute("sleep 0.1") end
    until out ~= "" or os.time() > deadline
    for r = 0, 1 do os.remove(outs[r]) end
    os.execute("rm -f /dev/shm/vyre-fakenccl-" .. id:sub(1, 32) .. "-*")
    assert.truthy(out:find("vyre.Group:all_reduce: ncclAllReduce failed: ncclRemoteError", 1, true),
      out)
    assert.truthy(out:find("Fix: another rank failed or went away", 1, true), out)
  end)

  it("one process per rank: lib.reduce, lib.scan and lib.sort over the group", function()
    -- sort: rank r holds 3 + r keys, global index gi has key (11 - gi) // 2 and value gi.
    -- (No comments inside the child's code: the shell joins its lines.)
    local id = cuda.nccl_id()
    local code = [[
      local F = require('tests.fakecuda.harness'); assert(F.available())
      local U = require('vyre.lib.util'); local plain = U.kernel
      U.kernel = function(be, key, gen)
        return plain(be, key, function() local t = gen(); F.register(t); return t end)
      end
      local vyre = require('vyre')
      local r = tonumber(os.getenv('R'))
      local g = vyre.cuda.group({rank = r, size = 3, id = os.getenv('ID')}, {timeout = 20})
      local be = g.backends[1]
      local src = be:buffer('i64', {r + 1, 10 * (r + 1)})
      local dst = be:buffer('i64', 2)
      local s = vyre.lib.reduce(g, {src})
      vyre.lib.scan(g, {src}, {dst})
      local keys, vals = {}, {}
      for i = 1, 3 + r do
        local gi = ({0, 3, 7})[r + 1] + i - 1
        keys[i], vals[i] = (11 - gi) // 2, gi
      end
      local kb, vb = be:buffer('u32', keys), be:buffer('u32', vals)
      vyre.lib.sort(g, kb, vb)
      print('rank', r, s, table.concat(dst:download():totable(), ','),
        table.concat(kb:download():totable(), ','), table.concat(vb:download():totable(), ','))
      g:free()]]
    local outs = {}
    for r = 0, 2 do
      outs[r] = os.tmpname()
      os.execute(string.format("R=%d ID=%s VYRE_FAKECUDA_DEVICES=3 LUA_PATH=%q LUA_CPATH=%q "
        .. "lua5.4 -e %q > %q 2>&1 &", r, id, package.path, package.cpath, code, outs[r]))
    end
    local got = {}
    local deadline = os.time() + 60
    for r = 0, 2 do
      repeat
        local f = io.open(outs[r]); got[r] = f and f:read("a") or ""; if f then f:close() end
        if not got[r]:find("\n", 1, true) then os.execute("sleep 0.1") end
      until got[r]:find("\n", 1, true) or os.time() > deadline
      os.remove(outs[r])
    end
    -- keys 5,5,4,4,3,3,2,2,1,1,0,0 sorted stably, the counts 3/4/5 kept
    assert.equal("rank\t0\t66\t1,11\t0,0,1\t10,11,8\n", got[0])
    assert.equal("rank\t1\t66\t13,33\t1,2,2,3\t9,6,7,4\n", got[1])
    assert.equal("rank\t2\t66\t36,66\t3,4,4,5,5\t5,2,3,0,1\n", got[2])
  end)

  it("one process per rank: collectives, send/recv and steps through the fake's files", function()
    local id = cuda.nccl_id()
    local code = [[
      local vyre = require('vyre'); local c = vyre.cuda
      local r = tonumber(os.getenv('R'))
      local g = c.group({rank = r, size = 3, id = os.getenv('ID')}, {timeout = 20})
      local be = g.backends[1]
      local b = be:buffer('i32', {r + 1, 10 * (r + 1)})
      g:all_reduce(b, 'add'); g:synchronize()
      local s = be:buffer('u32', {r, r, r})
      local d = be:buffer('u32', 9)
      g:all_gather(s, d); g:synchronize()
      local x = be:buffer('f64', {r + 0.5})
      if r == 0 then g:send(x, 1) elseif r == 1 then g:recv(x, 0) end
      g:synchronize()
      local st = g:collective('all_reduce', {b}, 'max')
      be:sequence({st[1]})
      local gr = be:graph({st[1]}); gr:launch(1)
      print('rank', r, table.concat(b:download():totable(), ','),
        table.concat(d:download():totable(), ','), x:download():totable()[1])
      g:free()]]
    local outs = {}
    local procs = {}
    for r = 0, 2 do
      local tmp = os.tmpname()
      procs[r] = tmp
      local cmd = string.format("R=%d ID=%s VYRE_FAKECUDA_DEVICES=3 LUA_PATH=%q LUA_CPATH=%q "
        .. "lua5.4 -e %q > %q 2>&1 &", r, id, package.path, package.cpath, code, tmp)
      os.execute(cmd)
    end
    local deadline = os.time() + 30
    for r = 0, 2 do
      repeat
        local f = io.open(procs[r]); local s = f and f:read("a") or ""; if f then f:close() end
        outs[r] = s
        if not s:find("\n", 1, true) then os.execute("sleep 0.1") end
      until s:find("\n", 1, true) or os.time() > deadline
      os.remove(procs[r])
    end
    assert.equal("rank\t0\t6,60\t0,0,0,1,1,1,2,2,2\t0.5\n", outs[0])
    assert.equal("rank\t1\t6,60\t0,0,0,1,1,1,2,2,2\t0.5\n", outs[1])
    assert.equal("rank\t2\t6,60\t0,0,0,1,1,1,2,2,2\t2.5\n", outs[2])
  end)

  describe("bin/vyre launch", function()
    local script
    setup(function()
      script = os.tmpname()
      local f = assert(io.open(script, "w"))
      f:write([[
        local vyre = require("vyre")
        local g = vyre.cuda.group_from_env({timeout = 20})
        if arg[1] == "fail" and g.rank == 1 then os.exit(3) end
        local b = g.backends[1]:buffer("u32", {g.rank + 1})
        g:all_reduce(b); g:synchronize()
        print(("rank %d/%d local %s sum %d"):format(g.rank, g.size, os.getenv("VYRE_LOCAL_RANK"),
          b:download():totable()[1]))
        g:free()]])
      f:close()
    end)
    teardown(function() os.remove(script) end)

    local function launch(args)
      local p = assert(io.popen(string.format(
        "VYRE_FAKECUDA_DEVICES=3 bin/vyre launch %s 2>&1; echo \"rc=$?\"", args)))
      local out = p:read("a")
      p:close()
      return out
    end

    it("starts N ranks with VYRE_RANK, VYRE_SIZE, VYRE_LOCAL_RANK and the id", function()
      local out = launch("-n 3 " .. script)
      for r = 0, 2 do
        assert.truthy(out:find(("rank %d/3 local %d sum 6"):format(r, r), 1, true), out)
      end
      assert.truthy(out:find("rc=0", 1, true), out)
    end)

    it("a failing rank stops the others and its status is the exit status", function()
      local id = cuda.nccl_id()
      local out = launch("-n 3 --id " .. id .. " " .. script .. " fail")
      assert.truthy(out:find("vyre launch: rank 1 exited with status 3; stopping the others",
        1, true), out)
      assert.truthy(out:find("rc=3", 1, true), out)
      -- the stopped ranks could not remove their files from the fake's clique
      os.execute("rm -f /dev/shm/vyre-fakenccl-" .. id:sub(1, 32) .. "-*")
    end)

    it("--make-id prints an id; wrong command lines exit 2 with the reason", function()
      assert.truthy(launch("--make-id"):match("^%x+\nrc=0\n$"))
      assert.truthy(launch(script):find("-n N is required", 1, true))
      assert.truthy(launch("-n 2 --first-rank 2 --size 3 " .. script)
        :find("ranks 2 .. 3 do not fit a group of --size 3", 1, true))
      assert.truthy(launch("-n 0 x.lua"):find("rc=2", 1, true))
      local out = launch("-n 1 --lua /nonexistent/lua " .. script)
      assert.truthy(out:find("cannot start /nonexistent/lua", 1, true), out)
      assert.truthy(out:find("rc=1", 1, true), out)
    end)
  end)

  it("nothing is left alive in the fake driver once groups and buffers are freed", function()
    collectgarbage()
    collectgarbage()
    for i = 0, 3 do cuda.device(i):synchronize() end
    local n, msg = F.misuse()
    assert.equal(0, n, msg)
  end)
end)
