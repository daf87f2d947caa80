-- vyre.planners.convergence — the on-device convergence plan: iterate on the device
-- until a round leaves the changed flag zero (or the round cap), with one host sync and
-- one readback of the final flag, instead of a sync and a readback every round.
--   conv.plan({max_device_iterations = N, changed_flag_bytes = 4, host_polls = 0
--              [, rounds_expected = R]})
--     -> {mode = "device", max_device_iterations, host_sync_points = 1, readback = "final_flag",
--         readback_bytes = 4, host_polls = 0 [, rounds_expected, avoided_host_syncs,
--         avoided_readback_bytes]}
--   conv.of(opts_converge) -> the same plan from be:megakernel's {flag = buf, max = N}
-- docs/PLANNERS.md §3.3.
local check = require("vyre.planners.check")

local M = {}

local FLAG_BYTES = 4

local function build(max, rounds)
  local plan = { mode = "device", max_device_iterations = max, host_sync_points = 1,
    readback = "final_flag", readback_bytes = FLAG_BYTES, changed_flag_bytes = FLAG_BYTES,
    host_polls = 0 }
  if rounds then
    -- A host loop syncs and reads the flag back once per round.
    plan.rounds_expected = rounds
    plan.avoided_host_syncs = rounds - 1
    plan.avoided_readback_bytes = (rounds - 1) * FLAG_BYTES
  end
  return plan
end

--- plan(input) -> the convergence plan. Errors: max_device_iterations not a positive
--- integer; a changed flag other than one 4-byte word; host polls (a plan that polls
--- from the host is a host loop, which the megakernel policy chooses separately).
function M.plan(input)
  local fname = "vyre.planners.convergence.plan"
  check.table(input, "input", fname, "pass {max_device_iterations = 1000}")
  local max = check.int(input, "max_device_iterations", 1, fname)
  local bytes = check.int(input, "changed_flag_bytes", 0, fname, FLAG_BYTES)
  if bytes ~= FLAG_BYTES then
    check.fail(fname, ("changed_flag_bytes must be 4 (got %d): the flag is one u32 word, "
      .. "read after a grid barrier"):format(bytes), "use a u32 buffer of 1 element as the flag")
  end
  local polls = check.int(input, "host_polls", 0, fname, 0)
  if polls ~= 0 then
    check.fail(fname, ("host_polls must be 0 (got %d): the device decides when to stop")
      :format(polls), "leave host_polls out; for a host loop use be:sequence per round or "
      .. "force mode 'split' in the policy")
  end
  local rounds = input.rounds_expected ~= nil
    and check.int(input, "rounds_expected", 1, fname) or nil
  if rounds and rounds > max then
    check.fail(fname, ("rounds_expected (%d) exceeds max_device_iterations (%d)"):format(rounds,
      max), "raise max_device_iterations or lower the estimate")
  end
  return build(max, rounds)
end

--- of(converge) -> the plan of be:megakernel's opts.converge = {flag = buf, max = N}: the
--- flag is a u32 or i32 buffer of at least one element (its first word is the flag).
function M.of(conv)
  local fname = "vyre.planners.convergence.of"
  check.table(conv, "converge", fname, "pass {flag = buf, max = 1000}")
  local flag = conv.flag
  local ok, ty = pcall(function() return flag.type end)
  if not ok or (ty ~= "u32" and ty ~= "i32") then
    check.fail(fname, ("converge.flag must be a u32 or i32 Buffer (got %s)"):format(
      ok and tostring(ty) or type(flag)), "flag = be:buffer(\"u32\", 1)")
  end
  if flag.count < 1 then
    check.fail(fname, "converge.flag has no element", "flag = be:buffer(\"u32\", 1)")
  end
  local max = check.int(conv, "max", 1, fname, nil, "converge")
  return build(max, nil)
end

return M
