-- vyre.planners.capability — can this kernel run on this device, and if not, what
-- exactly is missing: the original's kernel capability diagnostics, with its verdict
-- line so logs and CI can grep one stable format.
--   cap.check(profile, {kernel = "bfs", min_sm = "8.0", threads_per_block = 256
--                        (or block = {x, y, z}), kernel_max_threads = 0, shared_bytes = 0,
--                        cooperative = false, blocks_per_sm = nil, tensor_cores = false})
--     -> {kernel, status = "ok" | "blocked", failures = {{code, ..., reason, fix}, ...},
--         line, message}
-- The check is libvyre's vyre_capability_check (include/vyre_plan.h): `message` is word
-- for word what the CUDA runtime raises when it refuses that kernel on that device.
--   cap.requirements(program [, {cooperative =, tensor_cores =, min_sm =}]) -> requirements
-- Failures, in this order: sm_version, threads_per_block, shared_memory,
-- cooperative_launch, co_residency, tensor_cores. docs/PLANNERS.md §3.2.
local check = require("vyre.planners.check")
local profiles = require("vyre.profiles")
local core = require("vyre.core")

local M = {}

M.VERSION = "cuda-kernel-capability-v1"

-- "8.0", 8.0, 80 or {8, 0} -> major, minor.
local function parse_sm(v, fname)
  local major, minor
  if type(v) == "table" then
    major, minor = v[1], v[2] or 0
  elseif math.type(v) == "integer" and v >= 10 then
    major, minor = v // 10, v % 10
  elseif type(v) == "string" then
    local a, b = v:match("^(%d+)%.(%d+)$")
    major, minor = tonumber(a), tonumber(b)
  elseif type(v) == "number" then
    major = math.floor(v)
    minor = math.floor((v - major) * 10 + 0.5)
  end
  if math.type(major) ~= "integer" or math.type(minor) ~= "integer" or major < 0
    or minor < 0 or minor > 9 then
    check.fail(fname, ("requirements.min_sm must be a compute capability like \"8.0\", 80 or "
      .. "{8, 0} (got %s)"):format(tostring(v)), "min_sm = \"8.0\"", 2)
  end
  return major, minor
end

local function threads_of(req, fname)
  if req.block ~= nil then
    check.table(req.block, "requirements.block", fname, "block = {256, 1, 1}")
    local n = 1
    for i = 1, 3 do
      local d = req.block[i] or 1
      if math.type(d) ~= "integer" or d < 1 then
        check.fail(fname, ("requirements.block[%d] must be an integer >= 1 (got %s)"):format(i,
          tostring(d)), "block = {256, 1, 1}", 2)
      end
      n = n * d
    end
    return n
  end
  return check.int(req, "threads_per_block", 1, fname, 1, "requirements")
end

--- check(profile, requirements) -> verdict (see the file header). Every unmet
--- requirement is listed, in the fixed order, each with what was asked and what the
--- device has; `line` is the one-line verdict.
function M.check(profile, req)
  local fname = "vyre.planners.capability.check"
  profiles.check(profile, fname)
  check.table(req, "requirements", fname, "pass {kernel = \"name\", threads_per_block = 256}")
  local kernel = req.kernel
  if type(kernel) ~= "string" or kernel == "" or kernel:find("[|,()=%s]") then
    check.fail(fname, ("requirements.kernel must be a non-empty name without '|', ',', '(', "
      .. "')', '=' or spaces (got %s)"):format(tostring(kernel)), "kernel = \"bfs_expand\"")
  end
  local min_sm = 0
  if req.min_sm ~= nil then
    local major, minor = parse_sm(req.min_sm, fname)
    min_sm = major * 10 + minor
  end
  local threads = threads_of(req, fname)
  local shared = check.int(req, "shared_bytes", 0, fname, 0, "requirements")
  local coop = check.bool(req, "cooperative", fname, false, "requirements")
  local tensor = check.bool(req, "tensor_cores", fname, false, "requirements")
  local kmax = check.int(req, "kernel_max_threads", 0, fname, 0, "requirements")
  local per_sm = req.blocks_per_sm ~= nil
    and check.int(req, "blocks_per_sm", 0, fname, nil, "requirements") or nil
  -- libvyre's check (vyre_capability_check): the one whose message the CUDA runtime raises
  -- when it refuses a kernel, so both list the same failures with the same Fix.
  local v = core.capability_check(profile, { kernel = kernel, min_sm = min_sm,
    threads_per_block = threads, kernel_max_threads = kmax, shared_bytes = shared,
    cooperative = coop, tensor_cores = tensor, blocks_per_sm = per_sm })
  local failures = {}
  for i, f in ipairs(v.failures) do
    local out = { code = f.code, reason = f.reason, fix = f.fix }
    if f.code == "sm_version" then
      out.required = ("%d.%d"):format(f.asked // 10, f.asked % 10)
      out.actual = ("%d.%d"):format(f.have // 10, f.have % 10)
    elseif f.code == "threads_per_block" or f.code == "shared_memory" then
      out.requested, out.max = f.asked, f.have
    elseif f.code == "co_residency" then
      out.required, out.actual = f.asked, f.have
    else
      out.required, out.actual = f.asked ~= 0, f.have ~= 0
    end
    failures[i] = out
  end
  return { kernel = kernel, status = v.ok and "ok" or "blocked", failures = failures,
    device = profile.name, line = v.line, message = v.message }
end

-- The fields of each failure in the verdict line, in order.
local FIELDS = {
  sm_version = { "required", "actual" }, threads_per_block = { "requested", "max" },
  shared_memory = { "requested", "max" }, cooperative_launch = { "required", "actual" },
  co_residency = { "required", "actual" }, tensor_cores = { "required", "actual" },
}

--- line(verdict) -> "cuda-kernel-capability-v1|kernel=<k>|status=ok", or
--- "...|status=blocked|fix=sm_version(required=8.0,actual=7.5),threads_per_block(...)".
function M.line(v)
  local s = ("%s|kernel=%s|status=%s"):format(M.VERSION, v.kernel, v.status)
  if #v.failures == 0 then return s end
  local parts = {}
  for i, f in ipairs(v.failures) do
    local kv = {}
    for j, k in ipairs(FIELDS[f.code]) do kv[j] = ("%s=%s"):format(k, tostring(f[k])) end
    parts[i] = ("%s(%s)"):format(f.code, table.concat(kv, ","))
  end
  return s .. "|fix=" .. table.concat(parts, ",")
end

local WIDTH = { bool = 4, i32 = 4, u32 = 4, f32 = 4, i64 = 8, u64 = 8, f64 = 8 }

--- requirements(program [, extra]) -> the requirements of a vyre Program: its name, its
--- workgroup as the block, the bytes of its shared arrays, the lowest PTX target vyre
--- emits (7.0) unless extra.min_sm says more, and extra.cooperative / tensor_cores.
function M.requirements(p, extra)
  local fname = "vyre.planners.capability.requirements"
  if type(p) ~= "userdata" or type(p.decls) ~= "function" then
    check.fail(fname, ("program must be a vyre.Program (got %s)"):format(type(p)),
      "pass vyre.parse(text) or vyre.program(...)")
  end
  extra = extra or {}
  check.table(extra, "extra", fname, "pass {cooperative = true}")
  local shared = 0
  for _, d in ipairs(p:decls()) do
    if d.kind == "shared" then shared = shared + d.count * WIDTH[d.type] end
  end
  local wg = p.workgroup
  return { kernel = p.name, block = { wg.x, wg.y, wg.z }, shared_bytes = shared,
    min_sm = extra.min_sm or "7.0", cooperative = extra.cooperative or false,
    tensor_cores = extra.tensor_cores or false }
end

return M
