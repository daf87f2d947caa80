-- scan.lua — inclusive prefix sum over many workgroups, written by hand (no vyre.lib):
-- reduce-then-scan in three kernels launched as one be:sequence (one synchronisation).
--   1. each workgroup of 256 sums its tile (tree in shared memory) -> sums[group]
--   2. one workgroup of 1024 turns sums into exclusive tile offsets (Hillis-Steele)
--   3. each workgroup scans its tile again and adds its offset -> out
-- The in-workgroup scan is a Lua function that emits DSL statements, used by kernels 2
-- and 3. Checked against a running sum in plain Lua (i32, wrapping like the GPU).
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local common = require("common")

local TILE, MAX_TILES = 256, 1024

-- Inclusive scan of the shared array s (one element per invocation, `size` of them) in
-- log2(size) steps: read, barrier, write, barrier. Returns nothing; s holds the scan.
local function workgroup_scan(k, s, size)
  local l = k.lid.x
  k:for_("step", 0, math.floor(math.log(size, 2) + 0.5), function(step)
    local d = k:let("d", vyre.lit("u32", 1) << step)
    local sum = k:let("sum", s[l] + vyre.select(l:ge(d), s[l - d], 0))
    k:barrier()
    s[l] = sum
    k:barrier()
  end)
end

local tile_sums = vyre.program("tile_sums", {workgroup = TILE,
    vyre.buffer("data", "i32", "read"), vyre.buffer("sums", "i32", "write"),
    vyre.shared("t", "i32", TILE)},
  function(k)
    local l = k:let("l", k.lid.x)
    k.t[l] = k.data[k.gid.x]                 -- past the end reads 0
    k:barrier()
    k:for_("s", 0, 8, function(s)            -- 8 = log2(TILE) tree levels
      local half = k:let("half", vyre.lit("u32", TILE // 2) >> s)
      k:when(l:lt(half), function() k.t[l] = k.t[l] + k.t[l + half] end)
      k:barrier()
    end)
    k:when(l:eq(0), function() k.sums[k.wgid.x] = k.t[0] end)
  end)

local tile_offsets = vyre.program("tile_offsets", {workgroup = MAX_TILES,
    vyre.buffer("sums", "i32", "read"), vyre.buffer("offsets", "i32", "write"),
    vyre.shared("s", "i32", MAX_TILES)},
  function(k)
    local l = k:let("l", k.lid.x)
    local own = k:let("own", k.sums[l])
    k.s[l] = own
    k:barrier()
    workgroup_scan(k, k.s, MAX_TILES)
    k.offsets[l] = k.s[l] - own              -- inclusive -> exclusive
  end)

local scan_tiles = vyre.program("scan_tiles", {workgroup = TILE,
    vyre.buffer("data", "i32", "read"), vyre.buffer("offsets", "i32", "read"),
    vyre.buffer("out", "i32", "write"), vyre.shared("s", "i32", TILE)},
  function(k)
    local l, i = k:let("l", k.lid.x), k:let("i", k.gid.x)
    k.s[l] = k.data[i]
    k:barrier()
    workgroup_scan(k, k.s, TILE)
    k:when(i:lt(k.out:len()), function()
      k.out[i] = k.s[l] + k.offsets[k.wgid.x]
    end)
  end)

local be = common.backend()
local n = 100003                              -- 391 tiles, the last one partial
local ntiles = (n + TILE - 1) // TILE
assert(ntiles <= MAX_TILES)
local data = vyre.array("i32", n):random(7, -1000, 1000)
local bdata, out = be:buffer("i32", data), be:buffer("i32", n)
local sums, offsets = be:buffer("i32", ntiles), be:buffer("i32", ntiles)
local k1, k2, k3 = be:compile(tile_sums), be:compile(tile_offsets), be:compile(scan_tiles)
local res = be:sequence({
  {k1, {data = bdata, sums = sums}, {n = n}},
  {k2, {sums = sums, offsets = offsets}, {grid = {1, 1, 1}}},
  {k3, {data = bdata, offsets = offsets, out = out}, {n = n}},
}, {readback = {out}})
local got = res[1]

local acc = 0
for i = 1, n do
  acc = ((acc + data[i] + 0x80000000) & 0xffffffff) - 0x80000000  -- i32 wrap-around
  common.check(got[i] == acc, "out[%d] = %d, want %d", i, got[i], acc)
end
print(("scan: %d values in %d workgroups (3 kernels, one sequence) on %s, last = %d — matches")
  :format(n, ntiles, be.name, got[n]))
