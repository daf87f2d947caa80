-- 111: vyre.lib's kernel cache is bounded (issue 26 §"Missing" of the last round): a
-- process that keeps making new kernels (here: compactions with new predicates, as an
-- e-graph with new analyses does) keeps at most lib.kernel_cache(be).limit of them per
-- backend, the least recently used dropped first, and freed once nothing holds them.
-- Results stay right after an eviction (the kernel is compiled again). On the reference
-- backend and, #fakecuda, on the fake driver (its live modules stay bounded too).
local vyre = require("vyre")
local lib = require("vyre.lib")
local H = require("spec.helpers")

-- 40 distinct predicate texts (the cache keys by text): x mod 17 == i mod 17, padded.
local function pred(i) return ("(eq (rem x 17u32) %du32)"):format(i % 17) .. (" "):rep(i // 17) end

-- how many of 0..199 the predicate of i keeps
local function kept(i)
  local n = 0
  for x = 0, 199 do if x % 17 == i % 17 then n = n + 1 end end
  return n
end

-- 40 compactions with distinct predicate texts under limit 8; returns what it saw.
local function churn(be)
  local old = lib.kernel_cache(be).limit
  local src = be:buffer("u32", vyre.array("u32", 200):iota(0))
  local dst = be:buffer("u32", 200)
  local ok, err = pcall(function()
    lib.kernel_cache(be, { limit = 8 })
    local first
    for i = 0, 39 do
      local n = lib.compact(be, src, pred(i), dst)
      assert.are.equal(kept(i), n)
      if i == 0 then first = dst:download():totable() end
    end
    local st = lib.kernel_cache(be)
    assert.is_true(st.entries <= 8, "entries " .. st.entries)
    assert.is_true(st.evictions >= 32 - 8, "evictions " .. st.evictions)
    assert.are.equal(8, st.limit)
    -- the first predicate again: evicted, compiled again (its kernels), the same result
    local misses = st.misses
    lib.compact(be, src, pred(0), dst)
    assert.are.same(first, dst:download():totable())
    local again = lib.kernel_cache(be).misses
    assert.is_true(again > misses, "compiled again")
    -- now cached: hits, no compile
    local hits = lib.kernel_cache(be).hits
    lib.compact(be, src, pred(0), dst)
    assert.are.equal(again, lib.kernel_cache(be).misses)
    assert.is_true(lib.kernel_cache(be).hits > hits)
  end)
  lib.kernel_cache(be, { limit = old })
  src:free()
  dst:free()
  assert(ok, err)
end

describe("vyre.lib's kernel cache", function()
  it("keeps at most its limit, least recently used first, results right after eviction",
    function()
      local be = vyre.reference.new()
      churn(be)
      collectgarbage()
      collectgarbage()
      -- the dropped kernels were freed by the collector (the cache's own and a few
      -- internal ones alive)
      assert.is_true(be:stats().live_kernels <= 8 + 4, "live " .. be:stats().live_kernels)
    end)

  it("refuses a bad limit with a Fix, in the call and in the environment", function()
    local be = vyre.reference.new()
    local ok, err = pcall(lib.kernel_cache, be, { limit = 0 })
    assert.is_false(ok)
    assert.matches("Fix:", tostring(err), 1, true)
    ok, err = pcall(lib.kernel_cache, be, 5)
    assert.is_false(ok)
    assert.matches("opts must be a table", tostring(err), 1, true)
    local out = H.lua_child("VYRE_LIB_KERNEL_CACHE=zero", 'require("vyre.lib")')
    assert.matches("VYRE_LIB_KERNEL_CACHE", out, 1, true)
    assert.matches("Fix:", out, 1, true)
  end)
end)

describe("vyre.lib's kernel cache on the fake driver #fakecuda", function()
  it("bounds the kernels a churn keeps alive", function()
    if not H.fake_loaded() then return pending("needs the fake driver") end
    local be = assert(require("vyre.cuda").device(0))
    churn(be)
    collectgarbage()
    collectgarbage()
    assert.is_true(be:stats().live_kernels <= 8 + 4, "live " .. be:stats().live_kernels)
  end)
end)
