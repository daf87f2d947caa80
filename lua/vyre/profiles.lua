-- vyre.profiles — device profiles: the capabilities every planner reads (SMs, threads,
-- registers and shared memory per SM and per block, warp size, cooperative launch, L2,
-- memory size and bandwidth) plus the launch, readback and barrier costs the megakernel
-- policy weighs. Synthetic profiles of published parts let every planner run offline
-- (CI, no GPU); `be:profile()` builds the same table from a real backend's `be:info()`.
--   local profiles = require("vyre.profiles")
--   profiles.get("h100")   -> table (a fresh copy: callers may change it)
--   profiles.names()       -> {"a100", "h100", ...}
--   profiles.of(be)        -> the profile of a backend (what be:profile() returns)
-- Also reachable as vyre.cuda.profile(name). Field meanings: docs/PLANNERS.md §1.
local Err = require("vyre.errors")
local M = {}

local KiB, MiB = 1024, 1024 * 1024

-- Costs measured on the lent H100 (bench/results/2026-11-22-h100*.md): a launch's CPU
-- enqueue cost, one node of a replayed CUDA graph, the host round trip that reads a
-- flag back (upload + launch + download + sync of 4 KiB), and a cooperative-groups grid
-- barrier (256 threads a block) with one block per SM and at full occupancy
-- (bench/megakernel/cg_barrier.cu).
local H100_COSTS = {
  launch_ns = 3500,
  graph_node_ns = 1024,
  graph_launch_ns = 2500,
  readback_ns = 15000,
  barrier_ns = 1146,
  barrier_full_ns = 2289,
  source = "measured on an H100 SXM5 (bench/results, 2026-11-22); graph_launch_ns estimated",
}

local function costs(src, note)
  local c = {}
  for k, v in pairs(src) do c[k] = v end
  if note then c.source = note end
  return c
end

-- Per-compute-capability limits: CUDA C++ Programming Guide, "Technical Specifications
-- per Compute Capability". Part-specific numbers (SMs, L2, memory, bandwidth) come from
-- each part's datasheet; memory_bytes and l2_bytes are what the driver reports: measured
-- on the lent H100 (cuDeviceTotalMem) and H200 (L2), else the part's listed total.
local SPECS = {
  a100 = {
    name = "a100", description = "NVIDIA A100 SXM4 80GB (Ampere)",
    cc_major = 8, cc_minor = 0, sms = 108, warp_size = 32,
    max_threads_per_block = 1024, max_threads_per_sm = 2048, max_blocks_per_sm = 32,
    registers_per_sm = 65536, registers_per_block = 65536, max_registers_per_thread = 255,
    shared_bytes_per_block = 48 * KiB, shared_bytes_per_block_optin = 163 * KiB,
    shared_bytes_per_sm = 164 * KiB,
    l2_bytes = 40 * MiB, memory_bytes = 81920 * MiB, memory_bandwidth = 2039e9,
    cooperative_launch = true, concurrent_kernels = true, tensor_cores = true,
    costs = costs(H100_COSTS, "assumed: the H100 measurements (no A100 measured)"),
  },
  h100 = {
    name = "h100", description = "NVIDIA H100 SXM5 80GB (Hopper)",
    cc_major = 9, cc_minor = 0, sms = 132, warp_size = 32,
    max_threads_per_block = 1024, max_threads_per_sm = 2048, max_blocks_per_sm = 32,
    registers_per_sm = 65536, registers_per_block = 65536, max_registers_per_thread = 255,
    shared_bytes_per_block = 48 * KiB, shared_bytes_per_block_optin = 227 * KiB,
    shared_bytes_per_sm = 228 * KiB,
    l2_bytes = 50 * MiB, memory_bytes = 85017493504, memory_bandwidth = 3350e9,
    cooperative_launch = true, concurrent_kernels = true, tensor_cores = true,
    costs = costs(H100_COSTS),
  },
  h200 = {
    name = "h200", description = "NVIDIA H200 SXM 141GB (Hopper)",
    cc_major = 9, cc_minor = 0, sms = 132, warp_size = 32,
    max_threads_per_block = 1024, max_threads_per_sm = 2048, max_blocks_per_sm = 32,
    registers_per_sm = 65536, registers_per_block = 65536, max_registers_per_thread = 255,
    shared_bytes_per_block = 48 * KiB, shared_bytes_per_block_optin = 227 * KiB,
    shared_bytes_per_sm = 228 * KiB,
    l2_bytes = 60 * MiB, memory_bytes = 143771 * MiB, memory_bandwidth = 4800e9,
    cooperative_launch = true, concurrent_kernels = true, tensor_cores = true,
    costs = costs(H100_COSTS, "assumed: the H100 measurements (same SM and driver path)"),
  },
  -- The RTX 5090 as published (compute capability 12.0: 48 resident warps per SM, 128 KiB
  -- of shared memory per SM, 99 KiB per block).
  rtx5090 = {
    name = "rtx5090", description = "NVIDIA GeForce RTX 5090 (Blackwell, GB202)",
    cc_major = 12, cc_minor = 0, sms = 170, warp_size = 32,
    max_threads_per_block = 1024, max_threads_per_sm = 1536, max_blocks_per_sm = 32,
    registers_per_sm = 65536, registers_per_block = 65536, max_registers_per_thread = 255,
    shared_bytes_per_block = 48 * KiB, shared_bytes_per_block_optin = 99 * KiB,
    shared_bytes_per_sm = 128 * KiB,
    l2_bytes = 96 * MiB, memory_bytes = 32 * 1024 * MiB, memory_bandwidth = 1792e9,
    cooperative_launch = true, concurrent_kernels = true, tensor_cores = true,
    costs = costs(H100_COSTS, "assumed: the H100 measurements (no RTX 5090 measured)"),
  },
  -- The original system's synthetic Blackwell envelope, exactly as it states it
  -- (in its design text): 2048 threads and 256 KiB of shared memory per SM, 128 KiB per block.
  -- The published part (rtx5090 above) has less; this one reproduces the original's plans.
  ["blackwell-envelope"] = {
    name = "blackwell-envelope", description = "the original's synthetic RTX 5090 envelope",
    cc_major = 12, cc_minor = 0, sms = 170, warp_size = 32,
    max_threads_per_block = 1024, max_threads_per_sm = 2048, max_blocks_per_sm = 32,
    registers_per_sm = 65536, registers_per_block = 65536, max_registers_per_thread = 255,
    shared_bytes_per_block = 128 * KiB, shared_bytes_per_block_optin = 128 * KiB,
    shared_bytes_per_sm = 256 * KiB,
    l2_bytes = 96 * MiB, memory_bytes = 32 * 1024 * MiB, memory_bandwidth = 1792e9,
    cooperative_launch = true, concurrent_kernels = true, tensor_cores = true,
    costs = costs(H100_COSTS, "assumed: the H100 measurements"),
  },
}

-- The CPU reference interpreter as a device: one "SM" that runs one workgroup at a time
-- (so any grid is co-resident in the sense that matters: a grid barrier waits for the
-- whole grid, and the interpreter runs it exactly), 32-lane subgroups as on every
-- backend (docs/SUBGROUPS.md), the validator's 48 KiB shared-memory limit, and costs of
-- the order the interpreter shows (a launch is a C call; a readback is a memcpy).
local REFERENCE = {
  name = "reference", description = "CPU reference interpreter",
  cc_major = 0, cc_minor = 0, sms = 1, warp_size = 32,
  max_threads_per_block = 1024, max_threads_per_sm = 1024, max_blocks_per_sm = 1,
  registers_per_sm = 65536, registers_per_block = 65536, max_registers_per_thread = 255,
  shared_bytes_per_block = 48 * KiB, shared_bytes_per_block_optin = 48 * KiB,
  shared_bytes_per_sm = 48 * KiB,
  l2_bytes = 0, memory_bytes = 0, memory_bandwidth = 1e9,
  cooperative_launch = true, concurrent_kernels = false, tensor_cores = false,
  costs = {
    launch_ns = 1000, graph_node_ns = 1000, graph_launch_ns = 1000, readback_ns = 100,
    barrier_ns = 100, barrier_full_ns = 100,
    source = "nominal: the interpreter's overheads are negligible next to its work",
  },
}

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = type(v) == "table" and copy(v) or v end
  return c
end

local function finish(p)
  p.sm = p.cc_major * 10 + p.cc_minor
  p.max_warps_per_sm = p.max_threads_per_sm // p.warp_size
  return p
end

--- The profile names that get() knows, sorted.
function M.names()
  local n = {}
  for k in pairs(SPECS) do n[#n + 1] = k end
  n[#n + 1] = "reference"
  table.sort(n)
  return n
end

--- get(name) -> a new profile table (callers may change it). Names are case-insensitive.
function M.get(name)
  if type(name) ~= "string" then
    Err.raise("type",
      ("vyre.cuda.profile: name must be a string (got %s). Fix: vyre.cuda.profile(\"h100\")")
      :format(type(name)), 2)
  end
  local key = name:lower()
  if key == "reference" then return finish(copy(REFERENCE)) end
  local s = SPECS[key]
  if not s then
    Err.raise("arg",
      ("vyre.cuda.profile: unknown profile '%s'. Fix: use one of %s, or be:profile() "
      .. "for a real device"):format(name, table.concat(M.names(), ", ")), 2)
  end
  return finish(copy(s))
end

-- /proc/meminfo's MemTotal: the reference backend's memory is the host's.
local function host_memory()
  local f = io.open("/proc/meminfo", "r")
  if not f then return 0 end
  local s = f:read("a") or ""
  f:close()
  local kb = s:match("MemTotal:%s*(%d+)")
  return kb and tonumber(kb) * 1024 or 0
end

-- The profile of a CUDA backend from be:info(). Every limit is the driver's own
-- attribute; the bandwidth is the DDR peak (2 transfers per memory clock × bus width);
-- the costs are the H100 measurements until telemetry replaces them.
local function from_cuda_info(i)
  local p = {
    name = i.name, description = i.name, ordinal = i.ordinal,
    cc_major = i.cc_major, cc_minor = i.cc_minor, sms = i.sms,
    warp_size = i.warp_size,
    max_threads_per_block = i.max_threads_per_block,
    max_threads_per_sm = i.max_threads_per_sm, max_blocks_per_sm = i.max_blocks_per_sm,
    registers_per_sm = i.registers_per_sm, registers_per_block = i.registers_per_block,
    max_registers_per_thread = 255,
    shared_bytes_per_block = i.shared_bytes_per_block,
    shared_bytes_per_block_optin = i.shared_bytes_per_block_optin,
    shared_bytes_per_sm = i.shared_bytes_per_sm,
    l2_bytes = i.l2_bytes, memory_bytes = i.memory_bytes,
    memory_bandwidth = 2.0 * i.memory_clock_khz * 1000 * i.memory_bus_bits / 8,
    cooperative_launch = i.cooperative_launch, concurrent_kernels = i.concurrent_kernels,
    tensor_cores = i.cc_major >= 7,
    costs = costs(H100_COSTS, "assumed: the H100 measurements (no telemetry yet)"),
  }
  return finish(p)
end

--- of(be) -> the profile of a backend (be:profile() calls this).
function M.of(be)
  local info = be:info()
  if info.backend == "cuda" then return from_cuda_info(info) end
  local p = finish(copy(REFERENCE))
  p.memory_bytes = host_memory()
  return p
end

-- The fields every profile has, with their Lua types (the specs and the planners'
-- argument checks use this list).
M.FIELDS = {
  name = "string", cc_major = "number", cc_minor = "number", sm = "number", sms = "number",
  warp_size = "number", max_threads_per_block = "number", max_threads_per_sm = "number",
  max_blocks_per_sm = "number", max_warps_per_sm = "number", registers_per_sm = "number",
  registers_per_block = "number", max_registers_per_thread = "number",
  shared_bytes_per_block = "number", shared_bytes_per_block_optin = "number",
  shared_bytes_per_sm = "number", l2_bytes = "number", memory_bytes = "number",
  memory_bandwidth = "number", cooperative_launch = "boolean", concurrent_kernels = "boolean",
  tensor_cores = "boolean", costs = "table",
}

--- check(p, fname) -> p, or raises naming the first missing or mistyped field.
function M.check(p, fname)
  if type(p) ~= "table" then
    Err.raise("type",
      ("%s: profile must be a table (got %s). Fix: pass vyre.cuda.profile(\"h100\") or "
      .. "be:profile()"):format(fname, type(p)), 3)
  end
  local keys = {}
  for k in pairs(M.FIELDS) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    if type(p[k]) ~= M.FIELDS[k] then
      Err.raise("type",
        ("%s: profile.%s must be a %s (got %s). Fix: start from vyre.cuda.profile(\"h100\") "
        .. "and change fields"):format(fname, k, M.FIELDS[k], type(p[k])), 3)
    end
  end
  return p
end

return M
