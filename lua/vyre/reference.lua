-- vyre.reference — the CPU reference backend: the same interface as the CUDA
-- backend (§7), running programs synchronously on the C interpreter, which is
-- the specification of every op. Buffers are host memory (a vyre.Array each).
local core = require("vyre.core")
local bind = require("vyre.bind")

local M = {}

local Backend = { __name = "vyre.ReferenceBackend" }
Backend.__index = Backend
local Buffer = { __name = "vyre.Buffer" }
local Kernel = { __name = "vyre.Kernel" }
Kernel.__index = Kernel

local fail = bind.fail

local is_array = bind.is_array

local function check_backend(self, fname)
  if getmetatable(self) ~= Backend then
    fail(fname, "called without a backend (got %s). Fix: use be:%s(...) with a colon",
      type(self), fname:match("[:.](%w+)$") or "method")
  end
end

local check_program, check_valid = bind.check_program, bind.check_valid

local function prod3(t)
  return t[1] * t[2] * t[3]
end

-- Buffers ------------------------------------------------------------------

local buffer_methods = {}

local function live_array(buf, fname)
  if getmetatable(buf) ~= Buffer then
    fail(fname, "expected a vyre.Buffer (got %s). Fix: call it as buf:%s(...)", type(buf),
      fname:match(":(%w+)$") or "method")
  end
  local arr = rawget(buf, "_arr")
  if not arr then
    fail(fname, "the buffer was freed. Fix: do not use a buffer after buf:free() or after "
      .. "its <close> scope ended")
  end
  return arr
end

local function release(buf)
  local arr = rawget(buf, "_arr")
  if arr then
    local st = buf._backend._stats
    st.buffers_live = st.buffers_live - 1
    st.buffer_bytes = st.buffer_bytes - #arr * core.type_size(arr.type)
    rawset(buf, "_arr", nil)
    arr:free()
  end
end

local function check_bytes(v, fname, what)
  if v ~= nil and (math.type(v) ~= "integer" or v < 0) then
    fail(fname, "%s must be a non-negative integer number of bytes (got %s). Fix: pass a "
      .. "multiple of the element size, e.g. 0", what, tostring(v))
  end
end

--- buf:upload(array_or_table [, byte_offset])
function buffer_methods.upload(buf, data, byte_offset)
  local fname = "vyre.Buffer:upload"
  local arr = live_array(buf, fname)
  check_bytes(byte_offset, fname, "byte offset")
  if type(data) == "table" then
    local ok, res = pcall(core.array, arr.type, data)
    if not ok then fail(fname, "%s", res) end
    data = res
  elseif not is_array(data) then
    fail(fname, "expected a vyre.Array or a table (got %s). Fix: buf:upload(vyre.array('%s', "
      .. "{...}))", type(data), arr.type)
  end
  core.array_blit(arr, byte_offset or 0, data, fname)
  local st = buf._backend._stats
  st.uploads = st.uploads + 1
  st.bytes_up = st.bytes_up + #data * core.type_size(data.type)
  return buf
end

--- buf:download([byte_offset, nbytes]) -> vyre.Array (a copy)
function buffer_methods.download(buf, byte_offset, nbytes)
  local fname = "vyre.Buffer:download"
  local arr = live_array(buf, fname)
  check_bytes(byte_offset, fname, "byte offset")
  check_bytes(nbytes, fname, "byte count")
  local out = core.array_sub(arr, byte_offset or 0, nbytes, fname)
  local st = buf._backend._stats
  st.downloads = st.downloads + 1
  st.bytes_down = st.bytes_down + #out * core.type_size(out.type)
  return out
end

function buffer_methods.free(buf)
  if getmetatable(buf) ~= Buffer then
    fail("vyre.Buffer:free", "expected a vyre.Buffer (got %s). Fix: call it as buf:free()",
      type(buf))
  end
  release(buf)
end

Buffer.__index = function(buf, key)
  return buffer_methods[key]
end
Buffer.__len = function(buf) return buf.count end
Buffer.__gc = release
Buffer.__close = release
Buffer.__tostring = function(buf)
  return string.format("vyre.Buffer(reference, %s, %d%s)", buf.type, buf.count,
    rawget(buf, "_arr") and "" or ", freed")
end

local function new_buffer(be, arr)
  local st = be._stats
  st.buffers_live = st.buffers_live + 1
  st.buffers_created = st.buffers_created + 1
  st.buffer_bytes = st.buffer_bytes + #arr * core.type_size(arr.type)
  return setmetatable({ _arr = arr, _backend = be, type = arr.type, count = #arr }, Buffer)
end

--- be:buffer(type, n | vyre.Array | table) -> Buffer
function Backend:buffer(t, init)
  local fname = "vyre.Backend:buffer"
  check_backend(self, fname)
  local ok, arr
  if is_array(init) then
    if init.type ~= t then
      fail(fname, "the array holds %s but the buffer type is %s. Fix: pass a %s array",
        init.type, tostring(t), tostring(t))
    end
    arr = init:copy()
  else
    ok, arr = pcall(core.array, t, init)
    if not ok then fail(fname, "%s", arr) end
  end
  return new_buffer(self, arr)
end

-- Running --------------------------------------------------------------------

--- be:run(p, args, opts) -> {name = vyre.Array} for every write/read_write buffer.
--- Inputs are copied, so the caller's arrays are never modified.
function Backend:run(p, args, opts)
  local fname = "vyre.Backend:run"
  check_backend(self, fname)
  check_valid(p, fname)
  local c = bind.collect(p, args, opts, fname)
  local arrays, counts = {}, {}
  for slot, d in pairs(c.buffer_decls) do
    local v = c.buffers[slot]
    if v ~= nil then
      local arr = bind.host_array(v, d, fname, function(b)
        return getmetatable(b) == Buffer and live_array(b, fname) or nil
      end)
      if d.access ~= "read" and arr == v then arr = arr:copy() end
      arrays[slot] = arr
      counts[slot] = #arr
    end
  end
  for slot, d in pairs(c.buffer_decls) do
    if arrays[slot] == nil then
      arrays[slot] = core.array(d.type, bind.output_count(c, slot, counts, fname))
    end
  end
  for slot, arr in pairs(arrays) do counts[slot] = #arr end
  local grid = bind.grid(c, counts, fname)
  core.ref_run(p, arrays, c.params, grid, fname)
  local st = self._stats
  st.runs = st.runs + 1
  st.invocations = st.invocations + prod3(grid) * prod3(p.workgroup)
  local out = {}
  for slot, d in pairs(c.buffer_decls) do
    if d.access ~= "read" then out[d.name] = arrays[slot] end
  end
  return out
end

--- be:compile(p) -> Kernel (validated now, so launch never fails on the program).
function Backend:compile(p)
  local fname = "vyre.Backend:compile"
  check_backend(self, fname)
  check_valid(p, fname)
  self._stats.compiles = self._stats.compiles + 1
  -- The kernel keeps its program and backend alive; free/__close/__gc drop them.
  return setmetatable({ program = p, backend = self, _name = p.name }, Kernel)
end

-- The kernel's program, or raises naming fname (not a kernel, freed, program freed).
local function kernel_program(k, fname)
  if getmetatable(k) ~= Kernel then
    fail(fname, "called without a kernel (got %s). Fix: use k:%s(...) with a colon", type(k),
      fname:match(":(%w+)$") or "method")
  end
  if rawget(k, "_freed") then
    fail(fname, "the kernel was freed. Fix: compile it again with be:compile(p)")
  end
  check_program(k.program, fname)
  return k.program
end

--- k:launch(args, opts): args bind Buffers of this backend and param values.
function Kernel:launch(args, opts)
  local fname = "vyre.Kernel:launch"
  local p, be = kernel_program(self, fname), self.backend
  local c = bind.collect(p, args, opts, fname)
  local arrays, counts = {}, {}
  for slot, d in pairs(c.buffer_decls) do
    local v = c.buffers[slot]
    if v == nil then
      fail(fname, "missing buffer '%s' (%s, %s). Fix: pass a buffer from be:buffer('%s', n) "
        .. "in the args table", d.name, d.type, d.access, d.type)
    end
    if getmetatable(v) ~= Buffer or v._backend ~= be then
      fail(fname, "buffer '%s' must be a vyre.Buffer of this reference backend (got %s). Fix: "
        .. "create it with be:buffer('%s', n)", d.name, tostring(v), d.type)
    end
    local arr = live_array(v, fname)
    if arr.type ~= d.type then
      fail(fname, "buffer '%s' is declared %s but the buffer holds %s. Fix: pass a %s buffer",
        d.name, d.type, arr.type, d.type)
    end
    arrays[slot], counts[slot] = arr, #arr
  end
  local grid = bind.grid(c, counts, fname)
  core.ref_run(p, arrays, c.params, grid, fname)
  local st = be._stats
  st.launches = st.launches + 1
  st.invocations = st.invocations + prod3(grid) * prod3(p.workgroup)
  return self
end

--- k:bind(args, opts) -> Launch: the arguments checked once; l:launch() or l()
--- relaunches with them (the same API as the CUDA backend's bound launches).
local Launch = { __name = "vyre.Launch" }
Launch.__index = Launch

function Kernel:bind(args, opts)
  local fname = "vyre.Kernel:bind"
  if getmetatable(self) ~= Kernel then
    fail(fname, "called without a kernel (got %s). Fix: use k:bind(args, opts) with a colon",
      type(self))
  end
  args = args or {}
  -- Check now by launching nothing: the same validation as k:launch, without running.
  bind.collect(self.program, args, opts, fname)
  return setmetatable({ _kernel = self, _args = args, _opts = opts }, Launch)
end

function Launch:launch()
  if not self._kernel then
    fail("vyre.Launch:launch", "the bound launch was freed. Fix: bind again with k:bind(args, opts)")
  end
  self._kernel:launch(self._args, self._opts)
  return self
end

function Launch:free() self._kernel = nil end
Launch.__call = Launch.launch
Launch.__close = Launch.free
Launch.__gc = Launch.free
Launch.__tostring = function(l)
  return "vyre.Launch(reference, " .. (l._kernel and l._kernel.program.name or "freed") .. ")"
end

function Kernel:info()
  local p = kernel_program(self, "vyre.Kernel:info")
  return { name = p.name, hash = p:hash(), workgroup = p.workgroup, backend = "reference" }
end

-- k:free(), __close and __gc: one idempotent release (drops the program and backend).
local function release_kernel(k)
  rawset(k, "_freed", true)
  rawset(k, "program", nil)
  rawset(k, "backend", nil)
end

function Kernel:free()
  if getmetatable(self) ~= Kernel then
    fail("vyre.Kernel:free", "called without a kernel (got %s). Fix: use k:free() with a colon",
      type(self))
  end
  release_kernel(self)
end

Kernel.__tostring = function(k)
  return string.format("vyre.Kernel(reference, %s%s)", k._name,
    rawget(k, "_freed") and ", freed" or "")
end
Kernel.__close = release_kernel
Kernel.__gc = release_kernel

-- Backend queries --------------------------------------------------------------

function Backend:synchronize()
  check_backend(self, "vyre.Backend:synchronize")
  return true
end

function Backend:info()
  check_backend(self, "vyre.Backend:info")
  return { name = "reference", device = "CPU reference interpreter", version = core.version,
    max_workgroup = 1024, shared_bytes = 49152, warp_size = 1 }
end

function Backend:stats()
  check_backend(self, "vyre.Backend:stats")
  local out = {}
  for k, v in pairs(self._stats) do out[k] = v end
  return out
end

Backend.__tostring = function() return "vyre.Backend(reference)" end
Backend.__close = function() end
Backend.__gc = function() end

--- A new reference backend (each has its own stats).
function M.new()
  return setmetatable({ name = "reference", _stats = { runs = 0, launches = 0, invocations = 0,
    compiles = 0, buffers_live = 0, buffers_created = 0, buffer_bytes = 0, uploads = 0,
    downloads = 0, bytes_up = 0, bytes_down = 0 } }, Backend)
end

M.Backend, M.Buffer, M.Kernel = Backend, Buffer, Kernel
return M
