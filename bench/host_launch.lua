-- bench/host_launch.lua — the Lua side of bench/host_launch.sh: the host cost of one
-- launch through the binding, for the two programs host_launch.c times from C (inc:
-- one buffer; saxpy: two buffers and an f32 param), on resident 1024-element buffers.
-- Usage: lua5.4 bench/host_launch.lua [N] [REPS]. Prints "name value ns" lines:
--   lua_name_<prog>   k:launch(args, opts), arguments matched by name on every call
--   lua_bound_<prog>  l:launch() of l = k:bind(args, opts)
--   lua_call_<prog>   l(), the same bound launch called
-- Each number is the best of REPS runs of N launches, per launch. Run it on the fake
-- driver with VYRE_FAKECUDA_NOEXEC=1 (host_launch.sh does) so the launches compute
-- nothing; on a GPU the queue's pace would hide the host cost.
local vyre = require("vyre")
local cuda = require("vyre.cuda")
-- CPU time of the process (os.clock), not wall time: on a shared machine a run that
-- loses the core for a while does not count the wait (host_launch.c does the same).
local function now_ns() return os.clock() * 1e9 end

local N = tonumber(arg[1] or "") or 100000
local REPS = tonumber(arg[2] or "") or 7

local be, why = cuda.device(0)
if not be then
  io.stderr:write("CUDA is not usable: " .. tostring(why) .. "\n")
  os.exit(2)
end

local INC = vyre.parse([[
(program inc (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]])
local SAXPY = vyre.parse([[
(program saxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y))
    (then (store y i (add (mul a (load x i)) (load y i))))))]])

-- Best of REPS runs of N calls of fn, ns per call.
local function best(fn)
  local b = math.huge
  for _ = 1, REPS do
    local t0 = now_ns()
    fn(N)
    local t = now_ns() - t0
    if t < b then b = t end
    be:synchronize()
  end
  return b / N
end

local function bench(name, prog, args, opts)
  local k = be:compile(prog)
  local l = k:bind(args, opts)
  local function by_name(n)
    for _ = 1, n do k:launch(args, opts) end
  end
  local function bound(n)
    for _ = 1, n do l:launch() end
  end
  local function called(n)
    for _ = 1, n do l() end
  end
  by_name(1000)
  bound(1000)
  print(("lua_name_%s %.1f ns"):format(name, best(by_name)))
  print(("lua_bound_%s %.1f ns"):format(name, best(bound)))
  print(("lua_call_%s %.1f ns"):format(name, best(called)))
end

bench("inc", INC, { v = be:buffer("u32", 1024) }, { n = 1024 })
bench("saxpy", SAXPY, { x = be:buffer("f32", 1024), y = be:buffer("f32", 1024), a = 0.5 },
      { n = 1024 })
