-- vyre run FILE [name=value ...] — runs a program once on either backend (be:run: host
-- data in, host data out) and prints every buffer it writes. Values come from the
-- command line (inline lists, files, generators) and, for a Lua file, from the args
-- table it returns; the command line wins.
local vyre = require("vyre")
local C = require("vyre.cli.common")
local check = require("vyre.cli.check")

local M = {
  name = "run",
  summary = "run a program once on the reference or CUDA backend and print its outputs",
}

M.help = [==[
usage: vyre run FILE [name=value ...] [options]

Runs the program in FILE once (program text, or a Lua file returning programs: see
'vyre check --help') and prints each buffer it writes (write and read_write).

Arguments, one per declaration, as name=value (no spaces around '='):
  a=2.5            a param: a number (ints: decimal or 0x hex; floats also inf, -inf,
                   nan), or true/false (bool)
  x=1,2,3          a buffer from an inline list; also x=[1,2,3], x=[] (empty) and x=7
                   (one element)
  x=@values.txt    a buffer from a text file of numbers separated by spaces, commas or
                   newlines ('#' starts a comment)
  x=@data.bin      a buffer from a binary file (*.bin): raw little-endian elements of
                   the buffer's type
  x=zeros:N        N zeros            x=iota:N      0, 1, ..., N-1
  x=fill:N:V       N copies of V
A `write` buffer left out is allocated zeroed with the declared count, else --n, else
the largest bound buffer's count. A Lua file may return {program = p, args = {...},
opts = {...}}: those are the defaults, and name=value on the command line overrides them.

Options:
  --backend B     reference or cuda (default: cuda when usable, else reference)
  --n N           elements: the grid covers N invocations (opts.n)
  --n W,H[,D]     a 2-D or 3-D size (also WxH): the grid covers W x H (x D) invocations
                  (opts.n = {W, H [, D]}); a program that reads gid.y needs this or --grid
  --grid X[,Y[,Z]] workgroups per axis (opts.grid; wins over --n)
  --program NAME  the program to run when the file returns several
  --full          print every element (default: the first 8 and the last 4)
  --time          also print the dispatch timing (be:run_timed)
  --debug         count out-of-bounds loads and stores (be:debug) and print them per
                  buffer after the results ("out of bounds: none" when there were none)
  -h, --help      this text

The backend line goes to stderr, the results to stdout, one per line:
  y = vyre.Array(f32, 3) [2.0, 4.0, 6.0]
Exit status: 0 ran, 1 invalid program or the run raised, 2 wrong command line or
arguments.]==]

local function read_numbers(path, t)
  local src, err = C.read_file(path)
  if not src then return nil, ("cannot read %s: %s"):format(path, err) end
  if path:match("%.bin$") then
    local ok, a = pcall(vyre.array, t, src)
    if not ok then return nil, tostring(a) end
    return a
  end
  local list = {}
  src = src:gsub("#[^\n]*", "")
  for tok in src:gmatch("[^%s,%[%]]+") do
    local v, why = C.parse_value(tok, t)
    if v == nil then return nil, ("%s, element %d: %s"):format(path, #list + 1, why) end
    list[#list + 1] = v
  end
  return list
end

local function count_of(s, what)
  local n = math.tointeger(tonumber(s))
  if not n or n < 0 then return nil, ("%s wants a count >= 0, got '%s'"):format(what, s) end
  return n
end

--- The Lua value for a buffer argument text of type t: a table or a vyre.Array.
function M.buffer_value(text, t)
  if text:sub(1, 1) == "@" then return read_numbers(text:sub(2), t) end
  local gen, rest = text:match("^(%a+):(.*)$")
  if gen == "zeros" or gen == "iota" then
    local n, why = count_of(rest, gen .. ":N")
    if not n then return nil, why end
    local ok, a = pcall(vyre.array, t, n) -- a count past the limits raises with a Fix
    if not ok then return nil, ("%s:N: %s"):format(gen, tostring(a)) end
    if gen == "iota" then
      for i = 1, n do a[i] = t == "bool" and (i > 1) or (C.INT[t] and i - 1 or (i - 1) + 0.0) end
    end
    return a
  elseif gen == "fill" then
    local ns, vs = rest:match("^([^:]*):(.*)$")
    local n, why = count_of(ns or rest, "fill:N:V")
    if not n then return nil, why end
    local v, verr = C.parse_value(vs or "", t)
    if v == nil then return nil, "fill:N:V: " .. verr end
    local ok, a = pcall(vyre.array, t, n)
    if not ok then return nil, "fill:N:V: " .. tostring(a) end
    for i = 1, n do a[i] = v end
    return a
  elseif gen then
    return nil, ("unknown generator '%s:' (zeros:N, iota:N, fill:N:V)"):format(gen)
  end
  local body = text:match("^%[(.*)%]$") or text
  local list = {}
  for tok in body:gmatch("[^,]+") do
    if tok:match("%S") then
      local v, why = C.parse_value(tok, t)
      if v == nil then return nil, ("element %d: %s"):format(#list + 1, why) end
      list[#list + 1] = v
    end
  end
  return list
end

--- args table for program p from "name=value" strings over defaults; nil, message.
function M.build_args(p, assignments, defaults)
  local decls, order = {}, {}
  for _, d in ipairs(p:decls()) do
    decls[d.name] = d
    if d.kind ~= "shared" then order[#order + 1] = d.name end
  end
  local args = {}
  for k, v in pairs(defaults or {}) do args[k] = v end
  for _, a in ipairs(assignments) do
    local name, value = a:match("^([%a_][%w_]*)=(.*)$")
    if not name then
      return nil, ("'%s' is not name=value (e.g. x=1,2,3 or a=2.5)"):format(a)
    end
    local d = decls[name]
    if not d or d.kind == "shared" then
      return nil, ("program '%s' has no buffer or param '%s' (it declares: %s)"):format(p.name,
        name, table.concat(order, ", "))
    end
    local v, why
    if d.kind == "param" then
      v, why = C.parse_value(value, d.type)
    else
      v, why = M.buffer_value(value, d.type)
    end
    if v == nil then return nil, ("%s: %s"):format(name, why) end
    args[name] = v
  end
  local missing = {}
  for _, name in ipairs(order) do
    local d = decls[name]
    if args[name] == nil and not (d.kind == "buffer" and d.access == "write") then
      missing[#missing + 1] = ("%s=… (%s %s%s)"):format(name, d.kind, d.type,
        d.kind == "buffer" and " " .. d.access or "")
    end
  end
  if #missing > 0 then
    return nil, ("program '%s' needs %s"):format(p.name, table.concat(missing, ", "))
  end
  return args
end

-- --n: "N" -> N, "W,H[,D]" or "WxH[xD]" -> {W, H [, D]}; nil when malformed.
local function parse_size(s)
  local t = {}
  for part in s:gmatch("[^,x]+") do
    local n = math.tointeger(tonumber(part))
    if not n or n < 0 then return nil end
    t[#t + 1] = n
  end
  local _, seps = s:gsub("[,x]", "")
  if #t < 1 or #t > 3 or seps ~= #t - 1 then return nil end
  return #t == 1 and t[1] or t
end

local function parse_grid(s)
  local g = {}
  for part in s:gmatch("[^,x]+") do
    local n = math.tointeger(tonumber(part))
    if not n or n < 1 then return nil end
    g[#g + 1] = n
  end
  if #g < 1 or #g > 3 then return nil end
  return g
end

--- Prints the written buffers of program p from the result table res.
function M.print_results(ctx, p, res, full)
  for _, d in ipairs(p:decls()) do
    local a = res[d.name]
    if d.kind == "buffer" and d.access ~= "read" and a then
      local items = C.array_items(a, not full and 8 or nil, 4)
      ctx.out(("%s = vyre.Array(%s, %d) [%s]\n"):format(d.name, a.type, #a,
        table.concat(items, ", ")))
    end
  end
end

--- "out of bounds: NAME: L loads, S stores" per declaration (sorted), or "none".
function M.print_oob(ctx, report)
  local names = {}
  for name in pairs(report) do names[#names + 1] = name end
  table.sort(names)
  if #names == 0 then ctx.out("out of bounds: none\n") end
  for _, name in ipairs(names) do
    ctx.out(("out of bounds: %s: %d loads, %d stores\n"):format(name, report[name].loads,
      report[name].stores))
  end
end

function M.run(argv, ctx)
  ctx = C.context(ctx)
  local opts, pos = C.parse_options(argv, { backend = "string", n = "string", grid = "string",
    program = "string", full = "flag", time = "flag", debug = "flag" })
  if not opts then return C.usage_error(ctx, "run", pos) end
  if opts.help then
    ctx.out(M.help .. "\n")
    return C.OK
  end
  if #pos < 1 then return C.usage_error(ctx, "run", "no FILE given") end
  local path = table.remove(pos, 1)
  local entries, problems = C.load_programs(path)
  if entries then problems = check.problems_of(entries, path) end
  if #problems > 0 then
    check.report(ctx, problems, entries and entries[1].text)
    return C.problems_status(problems)
  end
  local e, why = C.pick(entries, opts.program)
  if not e then return C.usage_error(ctx, "run", why) end
  local args, aerr = M.build_args(e.program, pos, e.args)
  if not args then return C.usage_error(ctx, "run", aerr) end
  local ropts = {}
  for k, v in pairs(e.opts or {}) do ropts[k] = v end
  if opts.n then
    ropts.n = parse_size(opts.n)
    if not ropts.n then
      return C.usage_error(ctx, "run", ("--n wants N or W,H[,D] of integers >= 0, got '%s'")
        :format(opts.n))
    end
  end
  if opts.grid then
    ropts.grid = parse_grid(opts.grid)
    if not ropts.grid then
      return C.usage_error(ctx, "run", ("--grid wants X[,Y[,Z]] of integers >= 1, got '%s'")
        :format(opts.grid))
    end
  end
  local be, line = C.backend(opts.backend)
  if not be then
    ctx.err(("vyre run: %s\n"):format(line))
    return opts.backend == "cuda" and C.FAIL or C.USAGE
  end
  ctx.err(line .. "\n")
  local ok, res, timing, _
  local was_debug = be:debug()
  if opts.debug then be:debug(true) end
  if opts.time then
    ok, res, _, timing = pcall(be.run_timed, be, e.program, args, ropts) -- _: the rounds
  else
    ok, res = pcall(be.run, be, e.program, args, ropts)
  end
  local report = opts.debug and be:oob_report()
  if opts.debug then be:debug(was_debug) end -- the backend may be shared (vyre.cuda.device)
  if not ok then
    ctx.err(("vyre run: %s\n"):format(tostring(res)))
    return C.FAIL
  end
  M.print_results(ctx, e.program, res, opts.full)
  if report then M.print_oob(ctx, report) end
  if timing then
    ctx.out(("time: wall %s, device %s, enqueue %s, wait %s\n"):format(
      C.duration(timing.wall_ns), C.duration(timing.device_ns), C.duration(timing.enqueue_ns),
      C.duration(timing.wait_ns)))
  end
  return C.OK
end

return M
