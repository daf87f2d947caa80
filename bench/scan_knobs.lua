-- bench/scan_knobs.lua — the single-pass scan's knobs swept on one GPU (docs/LIB.md
-- "scan"): elements per invocation (items) and look-back window, for an exclusive scan of
-- 256 Mi u32 and f32 and for compaction. Prints "scan_KIND_iITEMS_wWINDOW ms" lines (best
-- of 5 after a warm-up, device time), to pick the defaults in lib/scan_onepass.lua.
-- Usage: lua5.4 bench/scan_knobs.lua [SCALE] [items list, e.g. 8,12,16,24,32]
local lib = require("vyre.lib")
local onepass = require("vyre.lib.scan_onepass")
local common = require("bench.common")
local be = common.cuda()

local SCALE = tonumber(arg and arg[1] or "") or 1
local ITEMS = {}
for s in ((arg and arg[2]) or "8,12,16,20,24,32"):gmatch("%d+") do
  ITEMS[#ITEMS + 1] = tonumber(s)
end
local WINDOWS = { 32, 64, 128, 256 }

local function best(fn)
  fn()
  local b = math.huge
  for _ = 1, 5 do
    local _, t = fn()
    local ns = (t.device_ns and t.device_ns > 0) and t.device_ns or t.wall_ns
    b = math.min(b, ns)
  end
  return b
end

local n = (256 << 20) // SCALE
local src, dst = be:buffer("u32", n), be:buffer("u32", n)
local fsrc, fdst = be:buffer("f32", n), be:buffer("f32", n)
lib.iota(be, src, 0, 7)
lib.iota(be, fsrc, 0.0, 1.0 / 1024)
for _, items in ipairs(ITEMS) do
  for _, w in ipairs(WINDOWS) do
    onepass.config.items, onepass.config.window = items, w
    local function one(kind, fn)
      local ok, ns = pcall(best, fn)
      if ok then
        common.out(("%s_i%d_w%d"):format(kind, items, w), ns / 1e6, "ms")
      else
        print(("fail_%s_i%d_w%d %s"):format(kind, items, w, tostring(ns):sub(1, 160)))
      end
    end
    local ex = { exclusive = true }
    one("scan_u32", function() return lib.scan_timed(be, src, dst, "add", ex) end)
    one("scan_f32", function() return lib.scan_timed(be, fsrc, fdst, "add", ex) end)
    one("compact_u32", function()
      return lib.compact_timed(be, src, "(eq (and x 1u32) 0u32)", dst)
    end)
  end
end
