-- vyre.cuda — the library as the project names it (ARCHITECTURE.md §7):
--   local vyre = require("vyre.cuda")
-- is everything require("vyre") gives (programs, the DSL, text, arrays, backends,
-- vyre.lib, vyre.egraph, planning, help) plus the CUDA device functions of
-- lua/vyre/cuda_device.lua: available, count, device, open, profile, cache, nvtx,
-- driver_version.
--
-- It is a view, not a copy: its own fields are the device functions and every other key
-- is looked up in require("vyre") itself, so both names give the same functions and the
-- same lazily loaded vyre.lib and vyre.egraph, and require("vyre").cuda is this table
-- (vyre.cuda.device(0) works from either). No device name is a name of require("vyre")
-- (spec/76_cuda_library_spec.lua checks), so nothing is shadowed: available/count/cache
-- are CUDA's, profile(name) is vyre.profiles.get. pairs() lists the device functions
-- only (the help and the API reference list them as "vyre.cuda.*").
local Err = require("vyre.errors")
local vyre = require("vyre")
local device = require("vyre.cuda_device")

local M = {}
for k, v in pairs(device) do M[k] = v end

return setmetatable(M, {
  __index = vyre,
  __name = "vyre.cuda",
  -- a write would land here only and hide the library's name from this view alone
  __newindex = function(_, k)
    Err.raise("arg", string.format("vyre.cuda: cannot set '%s': the module is read-only. Fix: keep "
      .. "your own values in a local table", tostring(k)), 2)
  end,
})
