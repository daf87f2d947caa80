-- vyre.cuda_device — the CUDA device functions (ARCHITECTURE.md §6, §7): a vyre.Backend
-- over one device, the same interface as vyre.reference. Everything is C (src/lvyre);
-- this file only answers the module-level questions and keeps one backend per device
-- ordinal. Users reach these through require("vyre.cuda") (lua/vyre/cuda.lua), the whole
-- library with these added; this module stays separate so vyre.backend() can load it
-- without building that view.
--   available() -> true | false, reason     count() -> n | nil, reason
--   device(i [, {debug = b}]) -> backend | nil, reason    (i is 0-based; default 0)
--   nvtx([on])  -> enabled, built | false, reason (profiler ranges)
--   profile(name) -> a synthetic device profile ("h100", "h200", "a100", "rtx5090", ...)
local Err = require("vyre.errors")
local core = require("vyre.core")
local profiles = require("vyre.profiles")

local M = {}

--- true, or false + the reason CUDA is not usable here.
function M.available()
  return core.cuda_available()
end

--- Number of CUDA devices, or nil + reason.
function M.count()
  return core.cuda_count()
end

--- {dir =, bytes =, files =, cap =} of the disk cubin cache.
function M.cache()
  return core.cuda_cache()
end

M.driver_version = core.cuda_driver_version

--- nvtx([on]) -> enabled, built | false, reason: NVTX ranges around compile, launch,
--- sequence, run, graph replay and megakernel sections, named by program, for Nsight
--- Systems (docs/RUNTIME.md "Profiler ranges"). Process-wide; starts as $VYRE_NVTX=1
--- says. Without the toolkit's nvtx3 header at build time, nvtx(true) gives false and
--- the reason. No GPU needed to switch.
function M.nvtx(on)
  if on ~= nil and type(on) ~= "boolean" then
    Err.raise("type",
      string.format("vyre.cuda.nvtx: on must be a boolean (got %s). Fix: cuda.nvtx(true)",
      type(on)), 2)
  end
  return core.cuda_nvtx(on)
end

--- profile(name) -> a new table of a published device's capabilities for the planners
--- (lua/vyre/profiles.lua; be:profile() gives the real device's). No GPU needed.
M.profile = profiles.get

local cached = {}

local function check_ordinal(i, fname)
  if math.type(i) ~= "integer" or i < 0 then
    Err.raise("arg",
      string.format("%s: ordinal must be an integer >= 0 (got %s). Fix: cuda.device(0)",
      fname, tostring(i)), 3)
  end
end

-- opts of device/open: {debug = true | false} switches the backend's debug mode
-- (be:debug; the backend of an ordinal is shared, so it switches it for every user).
local function check_opts(opts, fname)
  if opts == nil then return end
  if type(opts) ~= "table" then
    Err.raise("type",
      string.format("%s: options must be a table (got %s). Fix: %s(0, {debug = true})",
      fname, type(opts), (fname:gsub("^vyre%.", ""))), 3)
  end
  for k, v in pairs(opts) do
    if k ~= "debug" then
      Err.raise("arg",
        string.format("%s: unknown option %s. Fix: the option is debug (max_steps is the "
        .. "reference backend's: vyre.reference.new)", fname, tostring(k)), 3)
    end
    if type(v) ~= "boolean" then
      Err.raise("type",
        string.format("%s: debug must be a boolean (got %s). Fix: {debug = true}", fname,
        type(v)), 3)
    end
  end
end

local function with_opts(be, opts)
  if be and opts and opts.debug ~= nil then be:debug(opts.debug) end
  return be
end

--- cuda.device(i [, opts]) -> backend | nil, reason. Returns the same backend for an
--- ordinal until it is lost or freed; then a new one is opened. opts.debug switches its
--- debug mode (out-of-bounds counts, be:debug).
function M.device(i, opts)
  i = i or 0
  check_ordinal(i, "vyre.cuda.device")
  check_opts(opts, "vyre.cuda.device")
  local be = cached[i]
  if be and not be.freed and not be:lost() then return with_opts(be, opts) end
  local why
  be, why = core.cuda_open(i)
  if not be then return nil, why end
  cached[i] = be
  return with_opts(be, opts)
end

--- A new backend for device i even if one is open (tests of loss and recovery); it
--- becomes the one cuda.device(i) returns. opts as for cuda.device.
function M.open(i, opts)
  i = i or 0
  check_ordinal(i, "vyre.cuda.open")
  check_opts(opts, "vyre.cuda.open")
  local be, why = core.cuda_open(i)
  if not be then return nil, why end
  cached[i] = be
  return with_opts(be, opts)
end

return M
