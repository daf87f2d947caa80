-- vyre.lib.basic — fill, iota and copy (docs/LIB.md): one invocation per element.
local U = require("vyre.lib.util")

local M = {}

local FILL = [[
(program lib_fill_$T (workgroup 256)
  (buffer buf $T write)
  (param value $T)
  (param n u32)
  (let i (gid x))
  (if (lt i n) (then (store buf i value))))
]]

local IOTA = [[
(program lib_iota_$T (workgroup 256)
  (buffer buf $T write)
  (param start $T)
  (param step $T)
  (param n u32)
  (let i (gid x))
  (if (lt i n) (then (store buf i (add start (mul (cast $T i) step))))))
]]

local COPY = [[
(program lib_copy_$T (workgroup 256)
  (buffer src $T read)
  (buffer dst $T write)
  (param n u32)
  (let i (gid x))
  (if (lt i n) (then (store dst i (load src i)))))
]]

local function kernel(be, what, template, t)
  return U.kernel(be, what .. ":" .. t, function()
    return U.fill(template, { T = t })
  end)
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

--- Appends the launch that stores value into buf[0..n).
function M.fill_steps(be, buf, value, n, steps)
  if n == 0 then return end
  steps[#steps + 1] = { kernel(be, "fill", FILL, buf.type), { buf = buf, value = value, n = n },
    { grid = { U.cdiv(n, U.WG) } } }
end

function M.fill(name, timed, be, buf, value)
  U.check_backend(name, be)
  U.check_buffer(name, be, buf, "argument 2 (buf)", U.ALL_TYPES)
  value = M.check_value(name, "value", buf.type, value)
  local steps = {}
  M.fill_steps(be, buf, value, buf.count, steps)
  local _, timing = U.run(name, be, steps, nil, timed)
  return buf, timing
end

function M.iota(name, timed, be, buf, start, step)
  U.check_backend(name, be)
  U.check_buffer(name, be, buf, "argument 2 (buf)", U.NUM_TYPES)
  local t = buf.type
  start = M.check_value(name, "start", t, start == nil and 0 or start)
  step = M.check_value(name, "step", t, step == nil and 1 or step)
  local steps = {}
  local n = buf.count
  if n > 0 then
    steps[1] = { kernel(be, "iota", IOTA, t), { buf = buf, start = start, step = step, n = n },
      { grid = { U.cdiv(n, U.WG) } } }
  end
  local _, timing = U.run(name, be, steps, nil, timed)
  return buf, timing
end

function M.copy(name, timed, be, src, dst)
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
  local steps = {}
  local n = src.count
  if n > 0 and not rawequal(src, dst) then
    steps[1] = { kernel(be, "copy", COPY, src.type), { src = src, dst = dst, n = n },
      { grid = { U.cdiv(n, U.WG) } } }
  end
  local _, timing = U.run(name, be, steps, nil, timed)
  return dst, timing
end

return M
