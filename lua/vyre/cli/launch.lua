-- vyre launch — starts N copies of a Lua script on this host, one per GPU, as ranks of
-- one NCCL group (as torchrun does): each gets VYRE_RANK, VYRE_SIZE, VYRE_LOCAL_RANK,
-- VYRE_LOCAL_SIZE and VYRE_NCCL_ID, and the script opens its rank with
--   vyre.cuda.group({rank = tonumber(os.getenv("VYRE_RANK")), size = ..., id = ...})
-- (or vyre.cuda.group_from_env()). Processes are started without a shell
-- (core.spawn: posix_spawnp), so paths and ids are passed as they are. If one rank
-- fails, the others are stopped (SIGTERM). Several hosts: the same command on each,
-- with --size, --first-rank and one id (docs/MULTIGPU.md, "Launching").
local core = require("vyre.core")
local C = require("vyre.cli.common")

local M = {
  name = "launch",
  summary = "start N ranks of a Lua script as one NCCL group (one per GPU)",
}

M.help = [==[
usage: vyre launch -n N [--size S] [--first-rank R] [--id ID] [--lua PROG] SCRIPT [ARGS...]
       vyre launch --make-id

Starts N processes of `PROG SCRIPT ARGS...` (PROG: --lua, else $VYRE_LUA, else lua5.4)
on this host, without a shell. Each gets in its environment:
  VYRE_RANK        its rank: first-rank + i (i = 0 .. N-1)
  VYRE_SIZE        ranks in the whole group (--size, default N)
  VYRE_LOCAL_RANK  i, which also picks its GPU (vyre.cuda.group uses it)
  VYRE_LOCAL_SIZE  N
  VYRE_NCCL_ID     the group's id (--id, else a new vyre.cuda.nccl_id())
  LUA_PATH, LUA_CPATH   this vyre's package paths
In the script: local g = vyre.cuda.group_from_env().
Several hosts: make one id (vyre launch --make-id), share it (a file, the job
scheduler's environment), and run on host h with N GPUs:
  vyre launch -n N --size TOTAL --first-rank h*N --id "$ID" script.lua
NCCL finds the other hosts through the id (it holds the first rank's address). If one
rank exits with an error the others are stopped. Exit status: 0 when every rank
succeeded, else the first failing rank's status (2: wrong command line).]==]

local function parse(args)
  local argv = {}
  for k, v in ipairs(args) do argv[k] = v end -- --name=value splits in this copy
  local o = { n = nil, size = nil, first = 0, id = nil, lua = nil, script = nil, args = {} }
  local i = 1
  local function value(name)
    i = i + 1
    local v = argv[i]
    if v == nil then error({ usage = name .. " needs a value" }) end
    return v
  end
  local function count(name, v, min)
    local n = math.tointeger(tonumber(v))
    if not n or n < min then
      error({ usage = ("%s must be an integer >= %d (got %s)"):format(name, min, v) })
    end
    return n
  end
  while i <= #argv do
    local a = argv[i]
    local name, inline = a:match("^(%-%-[%w-]+)=(.*)$")
    if name and not o.script then -- --name=value
      a = name
      table.insert(argv, i + 1, inline)
    end
    if o.script then
      o.args[#o.args + 1] = a
    elseif a == "-n" or a == "--nproc" then
      o.n = count(a, value(a), 1)
    elseif a == "--size" then
      o.size = count(a, value(a), 1)
    elseif a == "--first-rank" then
      o.first = count(a, value(a), 0)
    elseif a == "--id" then
      o.id = value(a)
    elseif a == "--lua" then
      o.lua = value(a)
    elseif a == "--make-id" then
      o.make_id = true
    elseif a == "-h" or a == "--help" then
      o.help = true
    elseif a == "--" then
      i = i + 1
      o.script = argv[i]
    elseif a:sub(1, 1) == "-" then
      error({ usage = ("unknown option %s"):format(a) })
    else
      o.script = a
    end
    i = i + 1
  end
  return o
end

--- Runs the command; returns the exit status.
function M.run(argv, ctx)
  local ok, o = pcall(parse, argv)
  if not ok then
    if type(o) == "table" then return C.usage_error(ctx, "launch", o.usage) end
    error(o, 0)
  end
  if o.help then
    ctx.out(M.help .. "\n")
    return C.OK
  end
  local cuda = require("vyre.cuda")
  if o.make_id then
    local idok, id = pcall(cuda.nccl_id)
    if not idok then
      ctx.err("vyre launch: " .. tostring(id) .. "\n")
      return C.FAIL
    end
    ctx.out(id .. "\n")
    return C.OK
  end
  if not o.n then return C.usage_error(ctx, "launch", "-n N is required") end
  if not o.script then return C.usage_error(ctx, "launch", "no script given") end
  local size = o.size or o.n
  if o.first + o.n > size then
    return C.usage_error(ctx, "launch", ("ranks %d .. %d do not fit a group of --size %d")
      :format(o.first, o.first + o.n - 1, size))
  end
  local id = o.id
  if not id then
    local idok, made = pcall(cuda.nccl_id)
    if not idok then
      ctx.err("vyre launch: cannot make a group id: " .. tostring(made) .. "\n")
      return C.FAIL
    end
    id = made
  end
  local prog = o.lua or os.getenv("VYRE_LUA") or "lua5.4"
  local pids, rank_of = {}, {}
  for i = 0, o.n - 1 do
    local cmd = { prog, o.script }
    for _, a in ipairs(o.args) do cmd[#cmd + 1] = a end
    local env = {
      VYRE_RANK = tostring(o.first + i), VYRE_SIZE = tostring(size),
      VYRE_LOCAL_RANK = tostring(i), VYRE_LOCAL_SIZE = tostring(o.n),
      VYRE_NCCL_ID = id, LUA_PATH = package.path, LUA_CPATH = package.cpath,
    }
    local pid, why = core.spawn(cmd, env)
    if not pid then
      for _, p in ipairs(pids) do core.kill(p) end
      while core.wait() do end
      ctx.err(("vyre launch: %s. Fix: check --lua (or $VYRE_LUA) names a Lua 5.4 "
        .. "interpreter on PATH\n"):format(why))
      return C.FAIL
    end
    pids[#pids + 1] = pid
    rank_of[pid] = o.first + i
  end
  local status, left = C.OK, #pids
  while left > 0 do
    local pid, st = core.wait()
    if not pid then break end
    local rank = rank_of[pid]
    if rank then
      rank_of[pid] = nil -- reaped: never signalled again
      left = left - 1
      if st ~= 0 and status == C.OK then
        status = st
        ctx.err(("vyre launch: rank %d exited with status %d; stopping the others\n")
          :format(rank, st))
        for p in pairs(rank_of) do core.kill(p) end
      end
    end
  end
  return status
end

return M
