-- vyre.bind — matches the names in a run/launch args table to a program's
-- declarations, for every backend, so that both raise the same errors for the
-- same mistakes ("fname: what went wrong. Fix: how").
local core = require("vyre.core")

local bind = {}

local function fail(fname, fmt, ...)
  error(fname .. ": " .. string.format(fmt, ...), 0)
end

-- Shared by both backends: one wording for the same mistake everywhere.
bind.fail = fail

local array_mt = getmetatable(core.array("u32", 0))
function bind.is_array(v)
  return type(v) == "userdata" and getmetatable(v) == array_mt
end

local program_mt = getmetatable(core.parse("(program probe (workgroup 1))"))

--- A live vyre.Program, or raises naming fname (core.validate would name itself).
function bind.check_program(p, fname)
  if getmetatable(p) ~= program_mt then
    local mt = getmetatable(p)
    fail(fname, "expected a vyre.Program (got %s). Fix: pass a program made by vyre.parse(text) "
      .. "or vyre.program(name, spec, fn)", type(mt) == "table" and mt.__name or type(p))
  end
  if not pcall(program_mt.__index, p, "name") then -- raises only once p was freed
    fail(fname, "this vyre.Program was freed. Fix: keep the program alive (do not call :free() "
      .. "or leave its <close> scope) while using it")
  end
end

--- The host array that run() binds to buffer declaration d: a vyre.Array as is, a
--- backend buffer through to_array(v) (which returns nil for anything else), or a plain
--- table converted; raises naming fname when v is none of them or has the wrong type.
function bind.host_array(v, d, fname, to_array)
  local arr = bind.is_array(v) and v or (to_array and to_array(v))
  if not arr then
    if type(v) ~= "table" or getmetatable(v) ~= nil then
      fail(fname, "buffer '%s' needs a vyre.Array, a table or a buffer of this backend (got %s). "
        .. "Fix: {%s = vyre.array('%s', {...})}", d.name, tostring(v), d.name, d.type)
    end
    local ok, res = pcall(core.array, d.type, v)
    if not ok then fail(fname, "buffer '%s': %s", d.name, res) end
    arr = res
  end
  if arr.type ~= d.type then
    fail(fname, "buffer '%s' is declared %s but the array holds %s. Fix: pass "
      .. "vyre.array('%s', ...)", d.name, d.type, arr.type, d.type)
  end
  return arr
end

--- A live and valid vyre.Program, or raises naming fname with every problem.
function bind.check_valid(p, fname)
  bind.check_program(p, fname)
  local ok, _, msg = core.validate(p)
  if not ok then
    fail(fname, "%s. Fix: correct the program (vyre.validate(p) lists every problem)",
      tostring(msg))
  end
end

local function names_of(decls)
  local out = {}
  for _, d in ipairs(decls) do
    if d.kind ~= "shared" then out[#out + 1] = d.name end
  end
  return #out > 0 and table.concat(out, ", ") or "(nothing)"
end

local function example_value(t)
  if t == "bool" then return "true" end
  if t == "f32" or t == "f64" then return "1.5" end
  return "1"
end

--- Checks opts ({n = elements} or {grid = {x, y, z}}) and returns it (never nil).
function bind.check_opts(opts, fname)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    fail(fname, "opts must be a table (got %s). Fix: pass {n = count} or {grid = {x, y, z}}",
      type(opts))
  end
  if opts.n ~= nil and (math.type(opts.n) ~= "integer" or opts.n < 0) then
    fail(fname, "opts.n must be a non-negative integer (got %s). Fix: {n = 1024}",
      tostring(opts.n))
  end
  if opts.grid ~= nil and type(opts.grid) ~= "table" then
    fail(fname, "opts.grid must be a table {x, y, z} (got %s). Fix: {grid = {4, 1, 1}}",
      type(opts.grid))
  end
  return opts
end

--- bind.collect(p, args, opts, fname) -> {buffers = {[slot] = value}, params =
--- {[slot] = value}, decls = p:decls(), buffer_decls = {[slot] = decl},
--- param_decls = {[slot] = decl}, opts = opts}.
--- Raises for unknown names, shared arrays given values, wrong kinds of values,
--- missing params and missing read/read_write buffers. Unbound `write` buffers
--- are left nil: the backend allocates them (see bind.output_count).
function bind.collect(p, args, opts, fname)
  fname = fname or "vyre.run"
  if args == nil then args = {} end
  if type(args) ~= "table" then
    fail(fname, "args must be a table of name = value (got %s). Fix: pass {x = array, a = 2.0}",
      type(args))
  end
  opts = bind.check_opts(opts, fname)
  local decls = p:decls()
  local by_name = {}
  local c = { buffers = {}, params = {}, decls = decls, buffer_decls = {}, param_decls = {},
    opts = opts, program = p }
  for _, d in ipairs(decls) do
    by_name[d.name] = d
    if d.kind == "buffer" then c.buffer_decls[d.slot] = d end
    if d.kind == "param" then c.param_decls[d.slot] = d end
  end
  for name, value in pairs(args) do
    local d = type(name) == "string" and by_name[name] or nil
    if d == nil then
      fail(fname, "unknown argument '%s': program '%s' declares %s. Fix: use one of those names",
        tostring(name), p.name, names_of(decls))
    elseif d.kind == "shared" then
      fail(fname, "'%s' is a shared (workgroup) array and cannot be bound. Fix: remove it "
        .. "from the args table", name)
    elseif d.kind == "param" then
      local tv = type(value)
      local want = d.type == "bool" and "boolean" or "number"
      if tv ~= want then
        fail(fname, "param '%s' (%s) needs a %s, got %s. Fix: pass {%s = %s}", name, d.type,
          want, tv, name, example_value(d.type))
      end
      c.params[d.slot] = value
    else
      local tv = type(value)
      if tv ~= "table" and tv ~= "userdata" then
        fail(fname, "buffer '%s' (%s, %s) needs a buffer, vyre.Array or table, got %s. Fix: "
          .. "pass {%s = vyre.array('%s', {...})}", name, d.type, d.access, tv, name, d.type)
      end
      c.buffers[d.slot] = value
    end
  end
  for slot, d in pairs(c.param_decls) do
    if c.params[slot] == nil then
      fail(fname, "missing param '%s' (%s). Fix: pass it in the args table: {%s = %s}", d.name,
        d.type, d.name, example_value(d.type))
    end
  end
  for slot, d in pairs(c.buffer_decls) do
    if c.buffers[slot] == nil and d.access ~= "write" then
      fail(fname, "missing buffer '%s' (%s, %s). Fix: pass it in the args table: {%s = "
        .. "vyre.array('%s', {...})}", d.name, d.type, d.access, d.name, d.type)
    end
  end
  return c
end

--- Element count for an unbound write buffer: its declared count if nonzero,
--- else opts.n, else the largest bound buffer's count (counts[slot]).
function bind.output_count(c, slot, counts, fname)
  local d = c.buffer_decls[slot]
  if d.count and d.count > 0 then return d.count end
  if c.opts.n and c.opts.n > 0 then return c.opts.n end
  local best = 0
  for _, n in pairs(counts) do
    if n > best then best = n end
  end
  if best == 0 then
    fail(fname or "vyre.run", "cannot size write buffer '%s': it has no declared count, no "
      .. "opts.n was given and no other buffer is bound. Fix: pass {n = count} in opts or "
      .. "bind '%s'", d.name, d.name)
  end
  return best
end

--- Launch grid ({x, y, z}) for bound buffer counts (by slot) and opts.
function bind.grid(c, counts, fname)
  local list = {}
  for slot = 1, #c.buffer_decls do list[slot] = counts[slot] or 0 end
  local x, y, z = core.grid(c.program, list, c.opts.n, c.opts.grid, fname)
  return { x, y, z }
end

return bind
