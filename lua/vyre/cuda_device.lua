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

--- nccl() -> {version =, version_string =, path =} | false, reason: NCCL, loaded at first
--- use ($VYRE_LIBNCCL, libnccl.so.2, or a Python environment's nvidia/nccl/lib;
--- docs/MULTIGPU.md). No GPU needed to ask.
function M.nccl()
  return core.nccl()
end

--- nccl_id() -> a new unique id (hex string) for vyre.cuda.group({rank =, size =, id =}).
M.nccl_id = core.nccl_id

local function check_group_opts(opts)
  if opts == nil then return nil end
  if type(opts) ~= "table" then
    Err.raise("type", string.format("vyre.cuda.group: options must be a table (got %s). Fix: "
      .. "vyre.cuda.group({0, 1}, {timeout = 60})", type(opts)), 3)
  end
  for k in pairs(opts) do
    if k ~= "timeout" and k ~= "device" and k ~= "blocking" then
      Err.raise("arg", string.format("vyre.cuda.group: unknown option %s. Fix: the options "
        .. "are timeout (seconds), blocking (true or false) and device (the ordinal of a "
        .. "one-process-per-GPU rank)", tostring(k)), 3)
    end
  end
  return opts
end

--- group(ordinals | {rank =, size =, id =} [, {timeout =, blocking =, device =}]) -> vyre.Group.
--- A list of ordinals: one process drives those GPUs (g.backends[i] is
--- vyre.cuda.device(ordinals[i])). {rank, size, id}: this process is one rank of a group
--- of processes (bin/vyre launch; id from vyre.cuda.nccl_id() on one rank), on device
--- opts.device (default $VYRE_LOCAL_RANK, else rank modulo the device count).
--- opts.blocking: NCCL's blocking communicators (the default for a list of ordinals,
--- whose ranks all live in this process) enqueue on the caller's thread; non-blocking
--- ones (the default for one rank per process) cannot hang on a peer that never comes but
--- cost ~0.2 ms per collective (docs/MULTIGPU.md).
function M.group(spec, opts)
  opts = check_group_opts(opts)
  local timeout = opts and opts.timeout
  local blocking = opts and opts.blocking
  if blocking ~= nil and type(blocking) ~= "boolean" then
    Err.raise("type", string.format("vyre.cuda.group: blocking must be true or false (got %s). "
      .. "Fix: vyre.cuda.group({0, 1}, {blocking = true})", type(blocking)), 2)
  end
  if type(spec) ~= "table" then
    Err.raise("type", string.format("vyre.cuda.group: expected a list of device ordinals or "
      .. "{rank =, size =, id =} (got %s). Fix: vyre.cuda.group({0, 1})", type(spec)), 2)
  end
  if spec.rank ~= nil or spec.size ~= nil or spec.id ~= nil then
    local rank, size, id = spec.rank, spec.size, spec.id
    if math.type(rank) ~= "integer" or math.type(size) ~= "integer" or type(id) ~= "string" then
      Err.raise("type", "vyre.cuda.group: {rank =, size =, id =} needs integers rank and size "
        .. "and the id string. Fix: vyre.cuda.group({rank = r, size = n, "
        .. "id = vyre.cuda.nccl_id()})", 2)
    end
    local dev = opts and opts.device
    if dev == nil then
      local lr = tonumber(os.getenv("VYRE_LOCAL_RANK") or "")
      local n = core.cuda_count() or 1
      dev = math.tointeger(lr) or rank % math.max(n, 1)
    end
    check_ordinal(dev, "vyre.cuda.group")
    local be, why = M.device(dev)
    if not be then Err.raise("no_cuda", "vyre.cuda.group: " .. tostring(why), 2) end
    local ok, g = pcall(core.cuda_group_rank, be, rank, size, id, timeout, blocking)
    if not ok then error(g, 2) end -- the caller's position, not this file's
    return g
  end
  local bes = {}
  for i, ord in ipairs(spec) do
    check_ordinal(ord, "vyre.cuda.group")
    local be, why = M.device(ord)
    if not be then Err.raise("no_cuda", "vyre.cuda.group: " .. tostring(why), 2) end
    bes[i] = be
  end
  if #bes == 0 then
    Err.raise("arg", "vyre.cuda.group: no devices. Fix: vyre.cuda.group({0, 1})", 2)
  end
  local ok, g = pcall(core.cuda_group, bes, timeout, blocking)
  if not ok then error(g, 2) end
  return g
end

--- group_from_env([opts]) -> vyre.Group of this process's rank, from the environment
--- `vyre launch` sets (VYRE_RANK, VYRE_SIZE, VYRE_NCCL_ID; VYRE_LOCAL_RANK picks the GPU).
function M.group_from_env(opts)
  local rank = math.tointeger(tonumber(os.getenv("VYRE_RANK") or ""))
  local size = math.tointeger(tonumber(os.getenv("VYRE_SIZE") or ""))
  local id = os.getenv("VYRE_NCCL_ID")
  if not rank or not size or not id or id == "" then
    Err.raise("arg", "vyre.cuda.group_from_env: VYRE_RANK, VYRE_SIZE and VYRE_NCCL_ID are not "
      .. "all set. "
      .. "Fix: start the script with `vyre launch -n N script.lua`, or use "
      .. "vyre.cuda.group({rank =, size =, id =})", 2)
  end
  local ok, g = pcall(M.group, { rank = rank, size = size, id = id }, opts)
  if not ok then
    if not Err.is(g) then error(g, 2) end -- not vyre's: as it came
    local text = g.message .. (g.fix and " Fix: " .. g.fix or "")
    Err.raise(g.code, (text:gsub("^vyre%.cuda%.group:", "vyre.cuda.group_from_env:")), 2)
  end
  return g
end

return M
