-- vyre bench — a small built-in benchmark of the chosen backend: the cost of a launch
-- and of a one-shot run, host<->device copy bandwidth, and the memory bandwidth of a
-- copy kernel, saxpy and vyre.lib's reduce. Every measurement also checks its result,
-- so a number is never printed for work that went wrong. For comparisons against a
-- plain-C driver baseline see bench/ (bench/run.sh); this command is the quick look.
local vyre = require("vyre")
local C = require("vyre.cli.common")

local M = {
  name = "bench",
  summary = "measure launches, copies and kernel bandwidth on a backend",
}

M.help = [==[
usage: vyre bench [--backend B] [--n N] [--launches K] [--reps R]

Runs a small built-in benchmark on one backend and prints a table:
  launch        time per bound launch (k:bind, then l()) of a 1-invocation kernel,
                K launches then one synchronize
  from table    ns per element of vyre.array("f32", t) for a Lua table of N numbers
  run           time per one-shot be:run of the same kernel (host data in and out)
  upload        buf:upload of N f32, GB/s
  download      buf:download of N f32, GB/s
  copy kernel   dst[i] = src[i] over N f32 (8 bytes per element), GB/s of device time
  saxpy kernel  y[i] = a * x[i] + y[i] over N f32 (12 bytes per element), GB/s
  lib.reduce    vyre.lib.reduce(be, buf) of N f32 (4 bytes per element), GB/s
Bandwidths use the best of R repetitions. Each measurement checks its result.

Options:
  --backend B    reference or cuda (default: cuda when usable, else reference)
  --n N          elements (default 16777216 on cuda, 65536 on reference)
  --launches K   launches for the launch row (default 2000 on cuda, 200 on reference)
  --reps R       repetitions of each bandwidth row (default 10 on cuda, 2 on reference)
  -h, --help     this text

The numbers are for a quick look; bench/run.sh compares against a plain-C baseline.
Exit status: 0 done, 1 a measurement failed its check, 2 wrong command line.]==]

local INC = [[
(program bench_inc (workgroup 1)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]]

local COPY = [[
(program bench_copy (workgroup 256)
  (buffer src f32 read)
  (buffer dst f32 write)
  (let i (gid x))
  (if (lt i (len dst)) (then (store dst i (load src i)))))]]

local SAXPY = [[
(program bench_saxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y)) (then (store y i (add (mul a (load x i)) (load y i))))))]]

local function check(cond, what)
  if not cond then error("vyre bench: " .. what .. " gave a wrong result", 0) end
end

local function gbps(bytes, ns)
  return ns > 0 and bytes / ns or 0 -- bytes per ns = GB/s
end

local function best_of(reps, fn)
  local best = math.huge
  for _ = 1, reps do
    local ns = fn()
    if ns < best then best = ns end
  end
  return best
end

--- Measures be with cfg = {n, launches, reps}; returns rows {name, value, unit, detail}.
function M.measure(be, cfg)
  local now = vyre.core.now_ns
  local n, reps, launches = cfg.n, cfg.reps, cfg.launches
  local rows = {}
  local function row(name, value, unit, detail)
    rows[#rows + 1] = { name = name, value = value, unit = unit, detail = detail }
  end

  local inc = vyre.parse(INC)
  local k = be:compile(inc)
  local v = be:buffer("u32", 1)
  local l = k:bind({ v = v })
  l() -- first launch outside the timing (lazy setup)
  be:synchronize()
  local t0 = now()
  for _ = 1, launches do l() end
  be:synchronize()
  local t1 = now()
  check(v:download()[1] == launches + 1, "launch")
  row("launch", (t1 - t0) / launches / 1e3, "µs", ("per launch, %d bound launches, one "
    .. "synchronize"):format(launches))

  -- Host side: a Lua table of n numbers into a typed array (the bulk conversion).
  local tn, tbl = math.min(n, 1 << 22), {} -- at most 4 Mi: the table itself costs memory
  for i = 1, tn do tbl[i] = i * 0.5 end
  row("from table", best_of(reps, function()
    local s = now()
    local a = vyre.array("f32", tbl)
    local ns = now() - s
    check(#a == tn and a[tn] == tn * 0.5, "table to array")
    return ns
  end) / tn, "ns", ("per element, vyre.array('f32', t) of %d numbers, best of %d")
    :format(tn, reps))

  local runs = math.max(1, launches // 10)
  local input = vyre.array("u32", { 41 })
  t0 = now()
  for _ = 1, runs do check(be:run(inc, { v = input }).v[1] == 42, "run") end
  row("run", (now() - t0) / runs / 1e3, "µs", ("per be:run, %d runs (upload, launch, "
    .. "download, sync)"):format(runs))

  local host = vyre.array("f32", n)
  for i = 1, n, math.max(1, n // 64) do host[i] = i + 0.5 end
  local src, dst = be:buffer("f32", n), be:buffer("f32", n)
  local bytes = n * 4
  row("upload", gbps(bytes, best_of(reps, function()
    local s = now()
    src:upload(host)
    be:synchronize()
    return now() - s
  end)), "GB/s", ("%d f32 (%.1f MiB), best of %d"):format(n, bytes / 2 ^ 20, reps))
  local back
  row("download", gbps(bytes, best_of(reps, function()
    local s = now()
    back = src:download()
    return now() - s
  end)), "GB/s", ("%d f32, best of %d"):format(n, reps))
  check(back == host, "download")

  local copy = be:compile(vyre.parse(COPY))
  local cargs = { src = src, dst = dst }
  row("copy kernel", gbps(2 * bytes, best_of(reps, function()
    return copy:launch_timed(cargs).device_ns
  end)), "GB/s", ("%d f32 read + written, device time, best of %d"):format(n, reps))
  check(dst:download() == host, "copy kernel")

  local saxpy = be:compile(vyre.parse(SAXPY))
  dst:zero()
  local sargs = { x = src, y = dst, a = 1.0 }
  row("saxpy kernel", gbps(3 * bytes, best_of(reps, function()
    return saxpy:launch_timed(sargs).device_ns
  end)), "GB/s", ("%d f32, 12 bytes per element, device time, best of %d"):format(n, reps))
  local y = dst:download()
  for _, i in ipairs({ 1, n }) do
    local want = 0.0
    for _ = 1, reps do want = string.unpack("<f", string.pack("<f", want + host[i])) end
    check(y[i] == want, "saxpy kernel")
  end

  local lib = require("vyre.lib")
  local sum
  row("lib.reduce", gbps(bytes, best_of(reps, function()
    local s, timing = lib.reduce_timed(be, src)
    sum = s
    return timing.device_ns
  end)), "GB/s", ("add over %d f32, device time of its sequence, best of %d"):format(n, reps))
  check(type(sum) == "number" and sum > 0, "lib.reduce")
  lib.release(be)
  return rows
end

--- The default configuration for a backend name.
function M.defaults(name)
  if name == "cuda" then return { n = 1 << 24, launches = 2000, reps = 10 } end
  return { n = 1 << 16, launches = 200, reps = 2 }
end

function M.run(argv, ctx)
  ctx = C.context(ctx)
  local opts, pos = C.parse_options(argv, { backend = "string", n = "int", launches = "int",
    reps = "int" })
  if not opts then return C.usage_error(ctx, "bench", pos) end
  if opts.help then
    ctx.out(M.help .. "\n")
    return C.OK
  end
  if #pos > 0 then return C.usage_error(ctx, "bench", "unexpected argument '" .. pos[1] .. "'") end
  for _, key in ipairs({ "n", "launches", "reps" }) do
    if opts[key] and opts[key] < 1 then
      return C.usage_error(ctx, "bench", ("--%s must be >= 1"):format(key))
    end
  end
  local be, line = C.backend(opts.backend)
  if not be then
    ctx.err(("vyre bench: %s\n"):format(line))
    return opts.backend == "cuda" and C.FAIL or C.USAGE
  end
  local cfg = M.defaults(be.name)
  for _, key in ipairs({ "n", "launches", "reps" }) do cfg[key] = opts[key] or cfg[key] end
  ctx.out(("vyre bench, %s\n"):format(line))
  local ok, rows = pcall(M.measure, be, cfg)
  if not ok then
    ctx.err(tostring(rows) .. "\n")
    return C.FAIL
  end
  ctx.out(("%-14s %12s  %-5s %s\n"):format("measurement", "value", "unit", "detail"))
  for _, r in ipairs(rows) do
    local pad = (" "):rep(5 - utf8.len(r.unit)) -- "µs" is two bytes, one column
    ctx.out(("%-14s %12.3f  %s%s %s\n"):format(r.name, r.value, r.unit, pad, r.detail))
  end
  return C.OK
end

return M
