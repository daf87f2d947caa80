-- vyre.cuda — the CUDA backend (ARCHITECTURE.md §6, §7): the same interface as
-- vyre.reference, over the C runtime in vyre.core (core.cuda_*). Buffers, kernels and
-- graphs are C userdata; this file only matches argument names to declarations
-- (vyre.bind) for `run` and wires the backend object together.
--   local cuda = require("vyre.cuda")
--   cuda.available() -> true | false, reason     cuda.count() -> n | nil, reason
--   cuda.device(i)   -> backend | nil, reason    (i is 0-based; default 0)
local core = require("vyre.core")
local bind = require("vyre.bind")

local M = {}

local Backend = { __name = "vyre.CudaBackend" }
Backend.__index = Backend

local fail = bind.fail

local is_array = bind.is_array

local function is_buffer(v)
  local mt = type(v) == "userdata" and getmetatable(v)
  return mt and mt.__name == "vyre.cuda.Buffer" or false
end

local function check_backend(self, fname)
  if getmetatable(self) ~= Backend then
    fail(fname, "called without a backend (got %s). Fix: use be:%s(...) with a colon",
      type(self), fname:match("[:.](%w+)$") or "method")
  end
  return self._dev
end

local check_program, check_valid = bind.check_program, bind.check_valid

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

-- Running --------------------------------------------------------------------

-- Arrays by slot for dev:run: bound values become arrays of the declared type
-- (tables are converted, device buffers downloaded); unbound write buffers become
-- element counts, zero-filled on the device.
local function run_args(be, p, args, opts, fname)
  check_valid(p, fname)
  local c = bind.collect(p, args, opts, fname)
  local arrays, counts = {}, {}
  for slot, d in pairs(c.buffer_decls) do
    local v = c.buffers[slot]
    if v ~= nil then
      local arr = bind.host_array(v, d, fname, function(b)
        return is_buffer(b) and b:download() or nil
      end)
      arrays[slot] = arr
      counts[slot] = #arr
    end
  end
  for slot, d in pairs(c.buffer_decls) do
    if arrays[slot] == nil then
      arrays[slot] = bind.output_count(c, slot, counts, fname)
    end
  end
  return c, arrays
end

local function outputs(c, by_slot)
  local out = {}
  for slot, d in pairs(c.buffer_decls) do
    if d.access ~= "read" then out[d.name] = by_slot[slot] end
  end
  return out
end

--- be:run(p, args, opts) -> {name = vyre.Array} for every write/read_write buffer.
--- Host data in, host data out, one synchronisation; inputs are never modified.
function Backend:run(p, args, opts)
  local fname = "vyre.Backend:run"
  local dev = check_backend(self, fname)
  local c, arrays = run_args(self, p, args, opts, fname)
  local by_slot = dev:run(p, arrays, c.params, c.opts.n, c.opts.grid, false)
  return outputs(c, by_slot)
end

--- be:run_timed(p, args, opts) -> outputs, {wall_ns, device_ns, enqueue_ns, wait_ns}
function Backend:run_timed(p, args, opts)
  local fname = "vyre.Backend:run_timed"
  local dev = check_backend(self, fname)
  local c, arrays = run_args(self, p, args, opts, fname)
  local by_slot, timing = dev:run(p, arrays, c.params, c.opts.n, c.opts.grid, true)
  return outputs(c, by_slot), timing
end

--- be:buffer(type, n | vyre.Array | table) -> device Buffer
function Backend:buffer(t, init)
  return check_backend(self, "vyre.Backend:buffer"):buffer(t, init)
end

--- be:compile(p) -> Kernel (k:launch(args, opts), k:launch_timed, k:info(), k.ptx)
function Backend:compile(p)
  local fname = "vyre.Backend:compile"
  local dev = check_backend(self, fname)
  check_valid(p, fname)
  return dev:compile(p)
end

--- be:load_ptx(ptx_text, entry) -> raw Kernel (k:launch_raw(grid, block, args))
function Backend:load_ptx(ptx, entry)
  return check_backend(self, "vyre.Backend:load_ptx"):load_ptx(ptx, entry)
end

--- be:sequence(steps, opts): steps = {{kernel, args, opts}, ...}; opts = {prefix =,
--- times =, readback = {{buf, byte_offset, nbytes} | buf, ...}, timed =}
--- -> list of readback arrays [, timing]. One synchronisation at the end.
function Backend:sequence(steps, opts)
  return check_backend(self, "vyre.Backend:sequence"):sequence(steps, opts)
end

--- be:graph(steps) -> Graph (g:launch(times [, timed])), a captured CUDA graph.
function Backend:graph(steps)
  return check_backend(self, "vyre.Backend:graph"):graph(steps)
end

function Backend:synchronize()
  return check_backend(self, "vyre.Backend:synchronize"):synchronize()
end

function Backend:trim()
  return check_backend(self, "vyre.Backend:trim"):trim()
end

--- true once a sticky fault poisoned the device (open a new one with cuda.device(i)).
function Backend:lost()
  return check_backend(self, "vyre.Backend:lost"):lost()
end

--- Raises the lost-device cause or an error recorded by a finalizer, else true.
function Backend:_defer_error(msg)
  return check_backend(self, "vyre.Backend:_defer_error"):_defer_error(msg)
end

function Backend:check()
  return check_backend(self, "vyre.Backend:check"):check()
end

function Backend:info()
  local info = check_backend(self, "vyre.Backend:info"):info()
  info.device = info.name
  return info
end

function Backend:stats()
  return check_backend(self, "vyre.Backend:stats"):stats()
end

local cached = {}

--- Drops this backend's device reference (buffers and kernels keep it alive).
--- Idempotent; shared by be:close(), __close and __gc. A closed backend is no
--- longer returned by cuda.device(i), which opens a new one.
function Backend:close()
  local dev = rawget(self, "_dev")
  if dev then dev:close() end
  if cached[rawget(self, "ordinal")] == self then cached[self.ordinal] = nil end
end

Backend.__tostring = function(be)
  return "vyre.Backend(cuda, " .. tostring(be._dev) .. ")"
end
-- No __gc: the device userdata has its own, and it runs only once every buffer
-- and kernel made from it is unreachable too (they hold it as a user value).
Backend.__close = Backend.close

-- Devices ----------------------------------------------------------------------

--- cuda.device(i) -> backend | nil, reason. Returns the same backend for an ordinal
--- until it is lost; then a new device object is opened (which resets the device).
function M.device(i)
  i = i or 0
  if math.type(i) ~= "integer" or i < 0 then
    error(string.format("vyre.cuda.device: ordinal must be an integer >= 0 (got %s). Fix: "
      .. "cuda.device(0)", tostring(i)), 2)
  end
  local be = cached[i]
  if be and not be._dev:lost() then return be end
  local dev, why = core.cuda_open(i)
  if not dev then return nil, why end
  be = setmetatable({ name = "cuda", ordinal = i, _dev = dev }, Backend)
  cached[i] = be
  return be
end

--- A new device object even if one is cached (tests of loss and recovery).
function M.open(i)
  local dev, why = core.cuda_open(i or 0)
  if not dev then return nil, why end
  local be = setmetatable({ name = "cuda", ordinal = i or 0, _dev = dev }, Backend)
  cached[i or 0] = be
  return be
end

M.Backend = Backend
return M
