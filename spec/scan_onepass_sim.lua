-- spec/scan_onepass_sim.lua — a Lua model of the single-pass scan's association order
-- (lua/vyre/lib/scan_onepass.lua, docs/LIB.md "scan"), for bit-exact comparisons of
-- float scans (specs 17 and 86). Plain Lua over lists; the caller passes the type's op.
local onepass = require("vyre.lib.scan_onepass")

local S = {}

local WG = 256

--- The scan of xs (a 1-based list) under f (op on the Lua model of type t) with the
--- identity id, starting from init (the exclusive start or the identity), inclusive or
--- exclusive: the tiles of 256 * items(t) elements, the tile order (blocked fold,
--- subgroup Hillis-Steele scan, warp totals left to right) and the carries chained left
--- to right over the tile totals, as the one-pass kernels compute them.
function S.scan(t, f, id, init, xs, excl)
  local m = onepass.items(t)
  local tsize = WG * m
  local n, out = #xs, {}
  local carry = init
  for base = 0, n - 1, tsize do
    local v = {}
    for k = 0, tsize - 1 do
      local gi = base + k
      v[k] = gi < n and xs[gi + 1] or id
    end
    -- each invocation folds its m consecutive elements, left to right
    local s = {}
    for l = 0, WG - 1 do
      local a = v[l * m]
      for j = 1, m - 1 do a = f(a, v[l * m + j]) end
      s[l] = a
    end
    -- subgroup_scan: Hillis-Steele within each warp of 32 lanes
    local sc = {}
    for w = 0, WG // 32 - 1 do
      local cur = {}
      for j = 0, 31 do cur[j] = s[32 * w + j] end
      local d = 1
      while d < 32 do
        local nx = {}
        for j = 0, 31 do nx[j] = j >= d and f(cur[j - d], cur[j]) or cur[j] end
        cur, d = nx, d * 2
      end
      for j = 0, 31 do sc[32 * w + j] = cur[j] end
    end
    local wt = {}
    for w = 0, 7 do wt[w] = sc[32 * w + 31] end
    local agg = wt[0]
    for z = 1, 7 do agg = f(agg, wt[z]) end
    for l = 0, WG - 1 do
      local w, lane = l // 32, l % 32
      local wp = id
      for z = 0, w - 1 do wp = f(wp, wt[z]) end
      local pre = f(wp, lane > 0 and sc[l - 1] or id)
      local r = f(carry, pre)
      for j = 0, m - 1 do
        local k = l * m + j
        local o
        if excl then
          o = r
          r = f(r, v[k])
        else
          r = f(r, v[k])
          o = r
        end
        if base + k < n then out[base + k + 1] = o end
      end
    end
    carry = f(carry, agg)
  end
  return out
end

return S
