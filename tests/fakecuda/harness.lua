-- tests/fakecuda/harness.lua — what specs 50-54 share to drive the fake CUDA driver
-- (tests/fakecuda, docs/RUNTIME.md "Fake driver"): loading its control module, reading
-- its counters, and the fault sweep — for one operation, record the driver calls it
-- makes, then fail each of them in turn with each CUresult that matters and check the
-- outcome: a clear error naming the call with a Fix (or an absorbed failure, or one
-- reported at the next call), nothing leaked, and the device usable afterwards (after a
-- sticky fault: lost, and a new device object works).
--
-- The specs run only with VYRE_LIBCUDA=<build>/fakecuda/libcuda.so.1 (scripts/test.sh
-- does this); elsewhere F.available() says why and the specs mark themselves pending.
local F = {}

local build = os.getenv("VYRE_BUILD_DIR") or "build"
local ctl

--- true, or false and why the fake driver cannot be used in this process.
function F.available()
  if F.why then return false, F.why end
  if ctl then return true end
  local lib = os.getenv("VYRE_LIBCUDA") or ""
  if not lib:find("fakecuda/libcuda.so.1", 1, true) then
    F.why = "needs the fake driver: run with VYRE_LIBCUDA=" .. build
      .. "/fakecuda/libcuda.so.1 (sh scripts/test.sh does)"
    return false, F.why
  end
  local open, err = package.loadlib(build .. "/fakecuda/fakecuda.so", "luaopen_fakecuda")
  if not open then
    F.why = "cannot load " .. build .. "/fakecuda/fakecuda.so: " .. tostring(err)
    return false, F.why
  end
  ctl = open().control
  local ok, why = require("vyre.cuda").available()
  if not ok then
    F.why = "the fake driver is set but CUDA is not usable: " .. tostring(why)
    return false, F.why
  end
  return true
end

--- Runs a control command (raises on a bad one) and returns the answer.
function F.control(cmd) return ctl(cmd) end

--- {mem =, mem_bytes =, host =, ..., ctx_refs =}: objects alive in the fake.
function F.live()
  local t = {}
  for k, v in ctl("live"):gmatch("([%w_]+)=(%d+)") do t[k] = tonumber(v) end
  return t
end

--- Number of misuses (calls a correct runtime never makes) and the last one.
function F.misuse()
  local n, msg = ctl("misuse"):match("^(%d+) ?(.*)$")
  return tonumber(n), msg
end

function F.fired()
  return tonumber(ctl("faults"):match("fired=(%d+)"))
end

--- Checks program text with the fake ("ok NAME" or the parse error). Launches need no
--- registration: every kernel vyre emits carries its program (tests/fakecuda/exec.c).
function F.register(text)
  return ctl("program " .. (type(text) == "string" and text or text:text()))
end

--- Foreign PTX (load_ptx of hand PTX) is refused at launch; on = true makes its
--- launches no-ops instead, for specs that test plumbing only.
function F.foreign(on)
  return ctl("set foreign " .. (on and 1 or 0))
end

--- Launch counts: computed (on the interpreter), skipped (foreign, opted in), refused.
function F.launches()
  local s = ctl("launches")
  return { computed = tonumber(s:match("computed=(%d+)")),
    skipped = tonumber(s:match("skipped=(%d+)")), refused = tonumber(s:match("refused=(%d+)")) }
end

--- The driver calls fn makes, in order (a list of base names), and fn's result.
function F.trace(fn, ...)
  ctl("trace start")
  local ok, res = pcall(fn, ...)
  local calls = {}
  for name in ctl("trace stop"):gmatch("%S+") do calls[#calls + 1] = name end
  if not ok then error(res, 0) end
  return calls, res
end

local INC = [[
(program inc (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]]
F.INC = INC

--- A new program each call (v[i] += K, K unique), so every cache level misses — the
--- disk cache too, across spec files (busted reloads this module for each, so the
--- counter lives in the Lua registry) and runs (it starts from the clock). It is
--- registered, so its launches compute.
function F.fresh_program()
  local reg = debug.getregistry()
  reg["vyre.fakecuda.fresh"] = (reg["vyre.fakecuda.fresh"] or os.time() % 100000 * 1000) + 1
  local k = reg["vyre.fakecuda.fresh"]
  local text = ("(program add%d (workgroup 64) (buffer v u32 read_write) (let i (gid x))"
    .. " (if (lt i (len v)) (then (store v i (add (load v i) %du32)))))"):format(k, k)
  F.register(text)
  return require("vyre").parse(text), k
end

--- The current device of ordinal 0 (a new object once the old one is lost).
function F.device()
  return assert(require("vyre.cuda").device(0))
end

--- true when the device computes: INC on {1, 2, 3} gives {2, 3, 4}.
function F.usable(be)
  local vyre = require("vyre")
  local b = be:buffer("u32", { 1, 2, 3 })
  local k = be:compile(vyre.parse(INC))
  k:launch({ v = b })
  local got = b:download():totable()
  b:free()
  k:free()
  return got[1] == 2 and got[2] == 3 and got[3] == 4
end

-- ---- the fault sweep -------------------------------------------------------------

-- Failures the runtime absorbs: the context check is redone by cuCtxSetCurrent, a
-- pinned staging block falls back to pageable memory, a missing timing reads 0, a
-- kernel attribute is optional at compile, a cubin the driver refuses from the disk
-- cache is a miss (JIT instead), destroying a link state is only cleanup, and one
-- out-of-memory is retried after a collection and a trim.
local TOLERATED = {
  cuCtxGetCurrent = true, cuMemHostAlloc = true, cuEventElapsedTime = true,
  cuFuncGetAttribute = true, cuModuleLoadDataEx = true, cuLinkDestroy = true,
}
-- A failed release leaves its object with the driver: one may stay alive.
local RELEASE = {
  cuMemFree = "mem", cuMemFreeHost = "host", cuModuleUnload = "modules",
  cuLinkDestroy = "links", cuGraphDestroy = "graphs", cuGraphExecDestroy = "execs",
  cuStreamDestroy = "streams", cuEventDestroy = "events",
}
local JIT = { cuLinkCreate = true, cuLinkAddData = true, cuLinkComplete = true,
  cuModuleLoadDataEx = true }
local LAUNCH = { cuLaunchKernel = true, cuGraphLaunch = true, cuStreamSynchronize = true }

--- The results a call is failed with: {name, sticky}.
function F.results_for(call)
  local r = {
    { "CUDA_ERROR_OUT_OF_MEMORY", false },
    { "CUDA_ERROR_INVALID_VALUE", false },
    { "CUDA_ERROR_ILLEGAL_ADDRESS", true },
  }
  if JIT[call] then
    r[#r + 1] = { "CUDA_ERROR_INVALID_PTX", false }
    r[#r + 1] = { "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", false }
    r[#r + 1] = { "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", false }
  end
  if call == "cuModuleGetFunction" then r[#r + 1] = { "CUDA_ERROR_NOT_FOUND", false } end
  if LAUNCH[call] then
    r[#r + 1] = { "CUDA_ERROR_LAUNCH_FAILED", true }
    r[#r + 1] = { "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", false }
  end
  if call == "cuStreamEndCapture" then
    r[#r + 1] = { "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", false }
  end
  return r
end

local STAT_KEYS = { "live_buffers", "live_buffer_bytes", "live_kernels", "live_graphs" }

-- Everything that must come back: the fake's objects outside the pools, and the
-- runtime's live counters.
local function snapshot(be)
  local l, s = F.live(), be:stats()
  local t = {
    mem = l.mem, dev_bytes = l.mem_bytes - s.pool_bytes,
    host_bytes = l.host_bytes - s.pinned_bytes,
    modules = l.modules, links = l.links, graphs = l.graphs, execs = l.execs,
    streams = l.streams, events = l.events, ctx_refs = l.ctx_refs,
  }
  for _, k in ipairs(STAT_KEYS) do t[k] = s[k] end
  return t
end

-- Lets garbage go, reports a deferred error once, gives pools and unused modules back.
-- be:trim() drops the backend's composed megakernels (and the plans) from their table;
-- each is freed when collected, with its 32-byte grid barrier scratch (grid_launch.c),
-- and its module becomes unused then, which only the next trim unloads: so a collection
-- and a second trim after the first, or the megakernel sweep sees the last composed
-- kernel as "32 bytes (and a module) leaked" (an artefact of the order, not a leak).
local function settle(be)
  collectgarbage()
  collectgarbage()
  pcall(be.synchronize, be)
  pcall(be.trim, be)
  collectgarbage()
  collectgarbage()
  pcall(be.trim, be)
end

local function fail(what, msg)
  error(what .. ": " .. msg, 0)
end

local function has(s, needle) return tostring(s):find(needle, 1, true) ~= nil end

-- One case: op with the nth call of `call` failing with `result`.
local function one(op, call, nth, result, sticky)
  local what = ("%s: call %d of %s -> %s%s"):format(op.name, nth, call, result,
    sticky and " (sticky)" or "")
  local be = F.device()
  local shared = op.shared and op.shared(be)
  settle(be)
  local base = snapshot(be)
  local misuse0 = F.misuse()
  local st = op.prep and op.prep(be, shared) or {}
  collectgarbage()
  collectgarbage("stop")
  local fired0 = F.fired()
  ctl(("fail %s:%d:%s%s"):format(call, nth, result, sticky and ":sticky" or ""))
  local ok, res = pcall(op.run, be, st)
  local fired = F.fired() - fired0
  ctl("clear")
  collectgarbage("restart")
  if fired ~= 1 then fail(what, "the fault did not fire (the operation took another path)") end
  local lost_now = be:lost()
  if not ok then
    res = tostring(res)
    if not has(res, "Fix:") then fail(what, "error without a Fix: " .. res) end
    -- "vyre.Backend:buffer: ..." (after the position of a Lua caller, if any)
    if not res:gsub("^[^:]+:%d+: ", ""):find("^vyre[%.%w_]*[:%.][%w_]+: ") then
      fail(what, "error without a function name: " .. res)
    end
    if sticky then
      if not has(res, result) then fail(what, "error does not name " .. result .. ": " .. res) end
    elseif not has(res, call) then
      fail(what, "error does not name " .. call .. ": " .. res)
    end
  elseif op.check and not sticky then
    op.check(be, st, res) -- a tolerated failure still gives right results
  end
  -- After a sticky fault every later call raises its cause.
  local cok, cerr = pcall(be.synchronize, be)
  if sticky then
    if cok then fail(what, "be:synchronize() passed after a sticky fault") end
    if not has(cerr, result) then
      fail(what, "be:synchronize() does not name " .. result .. ": " .. tostring(cerr))
    end
    if not be:lost() then fail(what, "the device is not marked lost after a sticky fault") end
  else
    if lost_now or be:lost() then fail(what, "a non-sticky fault marked the device lost") end
    local retried = call == "cuMemAlloc" and result == "CUDA_ERROR_OUT_OF_MEMORY"
    local expected = op.tolerate and op.tolerate[("%s:%d:%s"):format(call, nth, result)]
    if ok and not TOLERATED[call] and not retried and not expected then
      -- Neither raised nor absorbed: it must have been recorded and reported now.
      if cok then
        fail(what, "the failure of " .. call .. " was lost: nothing raised or reported it")
      end
      if not has(cerr, call) then
        fail(what, "the deferred error does not name " .. call .. ": " .. tostring(cerr))
      end
    end
  end
  -- Release everything the case made, then compare with the start.
  if op.release then op.release(st) end
  st, res = nil, nil -- luacheck: ignore 311
  if sticky then
    be = nil -- luacheck: ignore 311
    collectgarbage()
    collectgarbage()
    be = F.device() -- a new object: resets the context
  end
  settle(be)
  local after = snapshot(be)
  local leak_ok = not sticky and RELEASE[call]
  for k, v in pairs(base) do
    -- A reset (sticky) frees what the old context held, leftovers of earlier cases too.
    local allowed = leak_ok and (k == RELEASE[call] or k == "dev_bytes" or k == "host_bytes")
    if after[k] ~= v and not (allowed and after[k] >= v) and not (sticky and after[k] <= v) then
      fail(what, ("leaked: %s was %s before, %s after"):format(k, v, after[k]))
    end
  end
  local n, last = F.misuse()
  if n ~= misuse0 then fail(what, "the runtime misused the driver: " .. last) end
  if not F.usable(be) then fail(what, "the device does not compute afterwards") end
end

--- At most n of the calls (a list of names) as {call =, nth =} in call order: the first
--- call of each kind (while n lasts), then calls evenly spread over the rest.
function F.sample(calls, n)
  local seen, firsts, rest = {}, {}, {}
  for i, call in ipairs(calls) do
    seen[call] = (seen[call] or 0) + 1
    local pick = { i = i, call = call, nth = seen[call] }
    if seen[call] == 1 then firsts[#firsts + 1] = pick else rest[#rest + 1] = pick end
  end
  local out = {}
  for k = 1, math.min(n, #firsts) do out[#out + 1] = firsts[k] end
  local more = math.min(n - #out, #rest)
  for k = 1, more do out[#out + 1] = rest[(k * #rest) // more] end
  table.sort(out, function(a, b) return a.i < b.i end)
  return out
end

--- Sweeps op = {name =, prep = fn(be, shared) -> state, run = fn(be, state) -> result,
--- check = fn(be, state, result) (optional), release = fn(state) (optional),
--- shared = fn(be) -> value (optional: made before each case's leak baseline, for state
--- that lives as long as the device, e.g. warmed caches), tolerate = {["call:nth:RESULT"]
--- = why} (optional: failures the operation answers by design, such as ending an
--- invalidated capture)}: records the calls of one clean run, then fails each in turn
--- with F.results_for(call).
--- Returns the list of calls and the number of cases.
function F.sweep(op)
  local be = F.device()
  local shared = op.shared and op.shared(be)
  settle(be)
  local st = op.prep and op.prep(be, shared) or {}
  collectgarbage("stop")
  local calls, res = F.trace(op.run, be, st)
  collectgarbage("restart")
  if op.check then op.check(be, st, res) end
  if op.release then op.release(st) end
  st, res, be = nil, nil, nil -- luacheck: ignore 311
  local seen, cases = {}, 0
  -- VYRE_SWEEP_STRIDE=N (CI slices of the long sweeps): only every N-th call is failed
  -- (the first call of each kind always); unset or 1, every call.
  -- op.stride_scale multiplies it for operations of a thousand calls (the e-graph's run).
  local stride = (tonumber(os.getenv("VYRE_SWEEP_STRIDE") or "1") or 1) * (op.stride_scale or 1)
  if not os.getenv("VYRE_SWEEP_STRIDE") then stride = 1 end
  -- VYRE_SWEEP_CASES=N (a CI slice of long sweeps; overrides the stride): at most N
  -- cases, each a picked call failed with ONE of its results, rotating through them.
  local budget = tonumber(os.getenv("VYRE_SWEEP_CASES") or "")
  if budget then
    for _, pick in ipairs(F.sample(calls, budget)) do
      local rs = {}
      for _, r in ipairs(F.results_for(pick.call)) do
        if not (r[2] and op.no_sticky) then rs[#rs + 1] = r end
      end
      local r = rs[(cases % #rs) + 1]
      one(op, pick.call, pick.nth, r[1], r[2])
      cases = cases + 1
    end
  end
  -- VYRE_SWEEP_SHARD=k/n (a full sweep spread over n processes): this process fails
  -- only the calls i with i % n == k - 1, every result each; the n shards together are
  -- the whole sweep (bench/results counts them).
  local sk, sn = (os.getenv("VYRE_SWEEP_SHARD") or ""):match("^(%d+)/(%d+)$")
  sk, sn = tonumber(sk), tonumber(sn)
  for i, call in ipairs(budget and {} or calls) do
    seen[call] = (seen[call] or 0) + 1
    local skip = stride > 1 and seen[call] > 1 and i % stride ~= 0
    if sn and (i - 1) % sn ~= sk - 1 then skip = true end
    for _, r in ipairs(skip and {} or F.results_for(call)) do
      -- op.no_sticky: an operation over two devices (a peer copy) whose sticky fault may
      -- poison the other device, which this one-device check cannot follow.
      if not (r[2] and op.no_sticky) then
        one(op, call, seen[call], r[1], r[2])
        cases = cases + 1
      end
    end
  end
  if os.getenv("VYRE_FAKECUDA_VERBOSE") == "1" then
    io.stderr:write(("fault sweep %s: %d calls, %d cases\n"):format(op.name, #calls, cases))
  end
  return calls, cases
end

--- F.sweep(op), then checks it covered the calls `expect` lists (the calls the operation
--- is known to make) and ran at least three results per call; raises (failing the spec)
--- when not.
function F.sweep_covers(op, expect)
  local calls, cases = F.sweep(op)
  local got = " " .. table.concat(calls, " ") .. " "
  for _, c in ipairs(expect) do
    if not got:find(" " .. c .. " ", 1, true) then
      error(op.name .. " makes no " .. c .. ":" .. got, 2)
    end
  end
  if cases < #calls * (op.no_sticky and 2 or 3) and not os.getenv("VYRE_SWEEP_STRIDE")
    and not os.getenv("VYRE_SWEEP_CASES") and not os.getenv("VYRE_SWEEP_SHARD") then
    error(("%s: %d cases for %d calls, want at least 3 per call"):format(op.name, cases, #calls), 2)
  end
end

return F
