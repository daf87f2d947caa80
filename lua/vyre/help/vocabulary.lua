-- vyre.help.vocabulary — the API's one vocabulary (docs/API.md "Vocabulary"): one name
-- per mode, one timing record, one way rounds come back, element ranges, one name per thing, one
-- device-property vocabulary. scripts/gen-api-doc.lua writes RULES as the opening
-- section of docs/API.md, and spec/65_api_doc_spec.lua checks that section and every
-- entry of RENAMED: the old spelling raises an error that names the new one (a name
-- that goes away is never silently mapped, so old code fails where it is wrong).
local M = {}

-- Each rule: a short title and the text under it (Markdown, one paragraph).
M.RULES = {
  { "Modes", "A program with grid statements runs in one of the grid sync modes `\"auto\"`, "
    .. "`\"cooperative\"`, `\"split\"` (one kernel per section, the grid-level control flow on "
    .. "the host) or `\"graph\"` (the split with each converge round replayed as a CUDA graph). "
    .. "The same names are used by `be:grid_sync`, `opts.grid_sync`, `$VYRE_GRID_SYNC`, "
    .. "`plan.mode`, the policy's `facts.force` and its answer `{mode = ...}`, "
    .. "`vyre.policy.costs` and `k:occupancy()`'s mode. The old name `\"host_loop\"` is refused "
    .. "with an error naming `\"split\"`. The mode belongs to one backend object and goes "
    .. "with each run (C: `vyre_backend_set_grid_sync`, `vyre_megakernel_options.grid_sync`, "
    .. "`vyre_cuda_args.grid_sync`), never through device state." },
  { "Timing", "Every timed call returns one record, `{wall_ns, device_ns, enqueue_ns, "
    .. "wait_ns}` (nanoseconds; C: `struct vyre_timing`), as its last result: "
    .. "`be:run_timed`, `k:launch_timed`, `be:sequence(steps, {timed = true})`, "
    .. "`g:launch(times, true)`, `be:megakernel(steps, {timed = true})` and vyre.lib's "
    .. "`*_timed`. The record holds times only (no rounds, no mode)." },
  { "Rounds", "A call that runs a whole program or plan returns its results, then the "
    .. "rounds its converge loops ran (0 without one), then the timing when timed: "
    .. "`be:run` → results, rounds; `be:run_timed` → results, rounds, timing; "
    .. "`be:megakernel` → rounds [, timing] (it has no results). Kernel launches are "
    .. "asynchronous and return nothing: `k:rounds()` reads the rounds of the last launch. "
    .. "C: `vyre_ref_run_options.rounds`, `vyre_cuda_run_options.rounds`, "
    .. "`vyre_megakernel_options.rounds`, `vyre_grid_run_options.rounds` (and "
    .. "`vyre_backend_kernel_rounds` after a launch)." },
  { "Ranges", "A range is in elements wherever one is taken, first 1-based in Lua and "
    .. "0-based in C, count defaulting to the rest: `buf:download{first =, count =}`, "
    .. "`buf:upload(data, {first =})`, "
    .. "`buf:view(first, count)`, a sequence readback `{buf, first, count}`, "
    .. "`vyre_backend_readback` and `vyre_cuda_readback` `{buf, first, count, dst}`. "
    .. "Bytes only where the name says so (`buf:download{byte_offset =, nbytes =}`, "
    .. "`buf:upload(data, {byte_offset =})`, `*_bytes`): a positional number where a range "
    .. "is taken raises naming both tables." },
  { "One name per thing", "`a:bytes()` gives an Array's raw bytes (`tostring(a)` gives "
    .. "text); `buf:pointer()` the address of a Buffer's data on either backend; "
    .. "`be:synchronize()` waits and raises a lost device or an error deferred from a "
    .. "free. The spellings issues named stay primary: `be:megakernel`, `be:plan`, "
    .. "`be:sequence`, `vyre.lib.*`, `eg:*`, `vyre.fuse`." },
  { "Device properties", "`be:info()`, `be:profile()`, `vyre.cuda.profile(name)` and the "
    .. "planners use one set of names (`vyre.profiles.FIELDS`): `sms`, `memory_bytes`, "
    .. "`max_threads_per_block`, `max_threads_per_sm`, `max_blocks_per_sm`, "
    .. "`shared_bytes_per_block`, `shared_bytes_per_block_optin`, `shared_bytes_per_sm`, "
    .. "`registers_per_sm`, `warp_size`, `l2_bytes`, `cooperative_launch`. `occupancy` is "
    .. "always the fraction in [0, 1] of an SM's thread slots that resident blocks fill "
    .. "(`plan.occupancy`, the policy's facts, `vyre.planners.occupancy`); blocks per SM is "
    .. "`blocks_per_sm` (`plan.grid.blocks_per_sm`, `facts.blocks_per_sm`)." },
  { "C API", "One function per action, options in a struct (zero-initialise it, set what "
    .. "you need): `vyre_ref_run(p, args, &vyre_ref_run_options, err)`, "
    .. "`vyre_ptx_emit(p, &vyre_ptx_options{sm, debug, passes}, ...)`, "
    .. "`vyre_cuda_run(d, p, &vyre_cuda_run_options, err)`, "
    .. "`vyre_cuda_sequence(d, steps, n, &vyre_cuda_sequence_options, err)`; results the "
    .. "caller asks for are out-pointers in the options (`timing`, `rounds`, `oob`)." },
}

-- The spellings that went away. `call(vyre)` makes the old call on the reference
-- backend; it must raise an error containing `says` (which names the new spelling).
M.RENAMED = {
  { old = "a:tostring()", new = "a:bytes()", says = "is now a:bytes()",
    call = function(vyre) local a = vyre.array("u32", 2); return a:tostring() end },
  { old = "buf:device_ptr()", new = "buf:pointer()", says = "is now buf:pointer()",
    call = function(vyre) local b = vyre.backend("reference"):buffer("u32", 2)
      return b:device_ptr() end },
  { old = "be:check()", new = "be:synchronize()", says = "is now be:synchronize()",
    call = function(vyre) return vyre.backend("reference"):check() end },
  { old = "be:info().multiprocessors", new = "be:info().sms", says = "is now sms",
    call = function(vyre) return vyre.backend("reference"):info().multiprocessors end },
  { old = "be:info().total_memory", new = "be:info().memory_bytes",
    says = "is now memory_bytes",
    call = function(vyre) return vyre.backend("reference"):info().total_memory end },
  { old = "be:info().shared_bytes", new = "be:info().shared_bytes_per_block",
    says = "is now shared_bytes_per_block",
    call = function(vyre) return vyre.backend("reference"):info().shared_bytes end },
  { old = "be:info().shared_bytes_optin", new = "be:info().shared_bytes_per_block_optin",
    says = "is now shared_bytes_per_block_optin",
    call = function(vyre) return vyre.backend("reference"):info().shared_bytes_optin end },
  { old = "be:info().max_workgroup", new = "be:info().max_threads_per_block",
    says = "is now max_threads_per_block",
    call = function(vyre) return vyre.backend("reference"):info().max_workgroup end },
  { old = "buf:download(byte_offset, nbytes)", new = "buf:download{first =, count =}",
    says = "Fix: write {first = 2, count = 2} (elements), or {byte_offset = 4, nbytes = 8}",
    call = function(vyre) local b = vyre.backend("reference"):buffer("u32", 4)
      return b:download(4, 8) end },
  { old = "buf:upload(data, byte_offset)", new = "buf:upload(data, {first =})",
    says = "Fix: write {first = 2} (elements), or {byte_offset = 4}",
    call = function(vyre) local b = vyre.backend("reference"):buffer("u32", 4)
      return b:upload({ 1 }, 4) end },
  { old = "be:grid_sync(\"host_loop\")", new = "be:grid_sync(\"split\")",
    says = "\"host_loop\" is now called \"split\"",
    call = function(vyre) return vyre.backend("reference"):grid_sync("host_loop") end },
  { old = "{mode = \"host_loop\"} from vyre.policy.megakernel",
    new = "{mode = \"split\"}", says = "'host_loop' is now called 'split'",
    call = function(vyre)
      local policy = vyre.policy
      local saved = policy.megakernel
      policy.megakernel = function() return { mode = "host_loop", reason = "old" } end
      local ok, err = pcall(policy.decide, { steps = 1, layers = 1, cooperative = false,
        fits = false })
      policy.megakernel = saved
      if not ok then error(err, 0) end
    end },
  { old = "facts.force = \"host_loop\"", new = "facts.force = \"split\"",
    says = "'host_loop' is now called 'split'",
    call = function(vyre)
      return vyre.policy.check_facts({ steps = 1, layers = 1, cooperative = false,
        fits = false, force = "host_loop" })
    end },
}

--- render() -> the Markdown of the vocabulary section (docs/API.md's opening).
function M.render()
  local out = { "## Vocabulary", "",
    "One name for each thing across the Lua and C APIs. A spelling that went "
    .. "away raises an error naming the new one:", "" }
  for _, r in ipairs(M.RENAMED) do
    out[#out + 1] = ("- `%s` → `%s`"):format(r.old, r.new)
  end
  for _, rule in ipairs(M.RULES) do
    out[#out + 1] = ""
    out[#out + 1] = "**" .. rule[1] .. ".** " .. rule[2]
  end
  out[#out + 1] = ""
  return table.concat(out, "\n")
end

return M
