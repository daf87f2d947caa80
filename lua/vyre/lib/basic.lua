-- vyre.lib.basic — fill, iota and copy (docs/LIB.md): one invocation per element.
local U = require("vyre.lib.util")
local T = require("vyre.lib.template")
local core = require("vyre.core")

local M = {}

local FILL = T.new("fill", [[
(program lib_fill_$T (workgroup $WG)
  (buffer buf $T write)
  (param value $T)
$NDECL
$NLETS
  (let i (gid x))
  (if (lt i n) (then (store buf i value))))
]])

local IOTA = T.new("iota", [[
(program lib_iota_$T (workgroup $WG)
  (buffer buf $T write)
  (param start $T)
  (param step $T)
$NDECL
$NLETS
  (let i (gid x))
  (if (lt i n) (then (store buf i (add start (mul (cast $T i) step))))))
]])

local COPY = T.new("copy", [[
(program lib_copy_$T (workgroup $WG)
  (buffer src $T read)
  (buffer dst $T write)
$NDECL
$NLETS
  (let i (gid x))
  (if (lt i n) (then (store dst i (load src i)))))
]])

--- The text of lib.copy's kernel for type t (the fake CUDA driver computes only programs
--- a test registered).
function M.copy_text(t) return COPY:render(U.with_count({ T = t })) end

-- Device-count lets of the one-invocation-per-element kernels.
local DEV_N = { "(let n n1)" }

local function kernel(be, what, template, t, count)
  return U.kernel_n(be, what .. ":" .. t, function(dev)
    return template:render(U.with_count({ T = t }, dev))
  end, count, DEV_N)
end

--- Checks that v can be passed as a param of type t; returns it as that type wants.
function M.check_value(name, what, t, v)
  if t == "bool" then
    if type(v) ~= "boolean" then
      U.raise(name, ("%s must be a boolean for a bool buffer, got %s"):format(what, type(v)),
        "pass true or false")
    end
    return v
  end
  if type(v) ~= "number" then
    U.raise(name, ("%s must be a number, got %s"):format(what, type(v)),
      "pass a Lua number that fits the buffer's type " .. t)
  end
  if U.is_float(t) then return v + 0.0 end
  local iv = math.tointeger(v)
  if not iv then
    U.raise(name, ("%s = %s is not an integer"):format(what, tostring(v)),
      "pass an integer for a " .. t .. " buffer")
  end
  local r = U.INT[t]
  if r.lmin and (iv < r.lmin or iv > r.lmax) then
    U.raise(name, ("%s = %d is outside the range of %s"):format(what, iv, t),
      ("pass a value in [%d, %d]"):format(r.lmin, r.lmax))
  end
  return iv
end

-- One launch over n elements: args a gets n (or, with count, ncount and ncap).
local function launch(k, a, n, count)
  if count then a.ncount, a.ncap = count, n else a.n = n end
  return { k, a, { grid = { U.cdiv(n, U.WG) } } }
end

--- Appends the launch that stores value into buf[0..n) (with count: min(count[0], n)).
function M.fill_steps(be, buf, value, n, steps, count)
  if n == 0 then return end
  steps[#steps + 1] = launch(kernel(be, "fill", FILL, buf.type, count),
    { buf = buf, value = value }, n, count)
end

-- Each op is check(name, be, ...) -> args, then build(be, args, S, count) -> steps; the
-- plain call runs the steps, the steps form (opts {count, scratch} last) returns them.
local OPS = {}

OPS.fill = {
  nargs = 2,
  check = function(name, be, buf, value)
    U.check_backend(name, be)
    U.check_buffer(name, be, buf, "argument 2 (buf)", U.ALL_TYPES)
    return { buf = buf, value = M.check_value(name, "value", buf.type, value) }
  end,
  build = function(be, a, _, count)
    local steps = {}
    M.fill_steps(be, a.buf, a.value, a.buf.count, steps, count)
    return steps
  end,
  result = function(a) return a.buf end,
}

OPS.iota = {
  nargs = 3,
  check = function(name, be, buf, start, step)
    U.check_backend(name, be)
    U.check_buffer(name, be, buf, "argument 2 (buf)", U.NUM_TYPES)
    local t = buf.type
    return { buf = buf, start = M.check_value(name, "start", t, start == nil and 0 or start),
      step = M.check_value(name, "step", t, step == nil and 1 or step) }
  end,
  build = function(be, a, _, count)
    local n = a.buf.count
    if n == 0 then return {} end
    return { launch(kernel(be, "iota", IOTA, a.buf.type, count),
      { buf = a.buf, start = a.start, step = a.step }, n, count) }
  end,
  result = function(a) return a.buf end,
}

OPS.copy = {
  nargs = 2,
  check = function(name, be, src, dst)
    U.check_backend(name, be)
    U.check_buffer(name, be, src, "argument 2 (src)", U.ALL_TYPES)
    U.check_buffer(name, be, dst, "argument 3 (dst)", U.ALL_TYPES)
    if src.type ~= dst.type then
      U.raise(name, ("src is %s but dst is %s"):format(src.type, dst.type),
        "copy between buffers of the same type (convert with a program that casts)")
    end
    if dst.count < src.count then
      U.raise(name, ("dst has %d elements, fewer than src's %d"):format(dst.count, src.count),
        "pass a dst with at least #src elements")
    end
    return { src = src, dst = dst }
  end,
  build = function(be, a, S, count)
    local src, dst, n = a.src, a.dst, a.src.count
    local steps = {}
    -- memmove semantics, by memory rather than by object: the same start copies nothing;
    -- overlapping views go through a scratch buffer, since one parallel pass over
    -- overlapping ranges would read elements it has already overwritten.
    local alias = U.overlap(src, dst, n, n)
    if n > 0 and alias ~= "same" then
      local k = kernel(be, "copy", COPY, src.type, count)
      if alias == "overlap" then
        local tmp = U.scratch(S or be, "copy_tmp", src.type, n)
        steps[1] = launch(k, { src = src, dst = tmp }, n, count)
        steps[2] = launch(k, { src = tmp, dst = dst }, n, count)
      else
        steps[1] = launch(k, { src = src, dst = dst }, n, count)
      end
    end
    return steps
  end,
  result = function(a) return a.dst end,
}

--- The plain call of op: (name, timed, be, ...) -> result, timing.
function M.plain(op)
  local o = OPS[op]
  return function(name, timed, be, ...)
    local a = o.check(name, be, ...)
    local _, timing = U.run(name, be, o.build(be, a), nil, timed)
    return o.result(a), timing
  end
end

--- The steps form of op: (name, be, ..., [opts {count, scratch}]) -> steps.
function M.steps_form(op)
  local o = OPS[op]
  return function(name, be, ...)
    local args = table.pack(...)
    local opts
    if args.n > 1 and type(args[args.n]) == "table" and not U.mt_name(args[args.n]) then
      opts = args[args.n]
      args.n = args.n - 1
    end
    local a = o.check(name, be, table.unpack(args, 1, args.n))
    opts = U.check_opts(name, opts, { "count", "scratch" }, o.nargs + 2)
    local outs = { { a.buf or a.dst, a.buf and "argument 2 (buf)" or "dst" } }
    return o.build(be, a, U.scratch_of(name, be, opts.scratch), U.check_count(name, be,
      opts.count, outs))
  end
end

M.fill = M.plain("fill")
M.iota = M.plain("iota")
M.copy = M.plain("copy")

-- buf:random's kernel: written by src/lvyre/lgen.c from the description its host loop
-- (a:random, reference buffers) uses too, so the elements match bit for bit.
local function random_text(t)
  return core.random_kernel_text(t)
end

--- The texts of the kernels M.generate may launch (the fake CUDA driver computes only
--- programs a test registered: tests/fakecuda/harness.lua registers these).
function M.generator_texts()
  local texts = {}
  for _, t in ipairs(U.ALL_TYPES) do
    texts[#texts + 1] = FILL:render({ T = t })
    texts[#texts + 1] = random_text(t)
    if t ~= "bool" then texts[#texts + 1] = IOTA:render({ T = t }) end
  end
  return texts
end

--- buf:fill / buf:iota / buf:random of a CUDA Buffer (src/lvyre/lgen.c): g holds the
--- arguments read on the host (kind, and a, b or seed, lo, hi, prev, ilo, span as Lua
--- values of the right types); one launch, asynchronous like the upload it replaces.
function M.generate(be, buf, g)
  local t, n = buf.type, buf.count
  if n == 0 then return end
  local k, args
  if g.kind == "fill" then
    k, args = kernel(be, "fill", FILL, t), { buf = buf, value = g.a, n = n }
  elseif g.kind == "iota" then
    k, args = kernel(be, "iota", IOTA, t), { buf = buf, start = g.a, step = g.b, n = n }
  else
    k = U.kernel(be, "random:" .. t, function() return random_text(t) end)
    args = { buf = buf, seed = g.seed, lo = g.lo or 0, hi = g.hi or 0, prev = g.prev or 0,
      ilo = g.ilo, span = g.span, n = n }
  end
  k:launch(args, { grid = { U.cdiv(n, U.WG) } })
end

return M
