-- spec/helpers.lua — shared pieces of the busted specs: a registry of every
-- program the specs build (checked for parse(print(p)) == p in one spec, and at
-- registration), and tiny programs that evaluate one expression on the
-- reference backend so each semantics row is one line of a spec.
--
-- Run from the repository root: `busted` (.busted sets Lua 5.4, spec/ and the package
-- paths lua/?.lua and build/?.so), or `busted --lua=lua5.4 spec` as scripts/test.sh does.
local vyre = require("vyre")

local H = {}

-- busted reloads modules for every spec file (insulation), so the registry lives
-- in the Lua registry, which outlives them: the last spec sees every program.
local REG_KEY = "vyre.spec.programs"
local registry = debug.getregistry()[REG_KEY]
if not registry then
  registry = {}
  debug.getregistry()[REG_KEY] = registry
end
H.registry = registry

--- Records p (with a label) for the round-trip spec and returns it.
function H.register(p, label)
  registry[#registry + 1] = { program = p, label = label or p.name }
  return p
end

function H.parse(text, label)
  return H.register(vyre.parse(text), label)
end

function H.program(name, spec, fn)
  return H.register(vyre.program(name, spec, fn), name)
end

-- Two small programs the backend specs share: v[i] += 1, and v[i] = i.
H.INC = [[
(program inc (workgroup 64)
  (buffer v u32 read_write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))]]

H.IOTA = [[
(program iota (workgroup 64)
  (buffer v u32 write)
  (let i (gid x))
  (if (lt i (len v)) (then (store v i i))))]]

-- The debug mode's example (specs 72 and 74): o[i + 2] = a[i + 1] over 4 invocations, so a
-- is read past its end once and o written past its end twice.
H.SHIFT_OOB = [[
(program shift (workgroup 4)
  (buffer a u32 read) (buffer o u32 write)
  (let i (gid x))
  (store o (add i 2u32) (load a (add i 1u32))))]]

local WIDTH = { bool = 4, i32 = 4, u32 = 4, f32 = 4, i64 = 8, u64 = 8, f64 = 8 }

local function is_nan_bits(t, bits)
  if t == "f32" then return bits & 0x7f800000 == 0x7f800000 and bits & 0x7fffff ~= 0 end
  if t == "f64" then
    return bits & 0x7ff0000000000000 == 0x7ff0000000000000 and bits & 0xfffffffffffff ~= 0
  end
  return false
end

--- Compares two arrays (reference, cuda) bit for bit, any NaN equal to any NaN (§3
--- leaves payloads free): nil when they agree, else the first difference.
function H.parity_diff(a, b)
  if #a ~= #b then return ("lengths %d vs %d"):format(#a, #b) end
  local sa, sb = a:bytes(), b:bytes()
  if sa == sb then return nil end
  local w = WIDTH[a.type]
  local fmt = w == 4 and "<I4" or "<i8"
  for i = 1, #a do
    local x = string.unpack(fmt, sa, (i - 1) * w + 1)
    local y = string.unpack(fmt, sb, (i - 1) * w + 1)
    if x ~= y and not (is_nan_bits(a.type, x) and is_nan_bits(a.type, y)) then
      return ("element %d: reference %s, cuda %s"):format(i, tostring(a[i]), tostring(b[i]))
    end
  end
  return nil
end

--- Runs p with the same args on the reference backend and on gpu and raises, naming
--- label, the output and the program, unless every output is bit-identical (H.parity_diff).
function H.parity_run(ref, gpu, p, args, opts, label)
  local want = ref:run(p, args, opts)
  local got = gpu:run(p, args, opts)
  for name, arr in pairs(want) do
    local d = H.parity_diff(arr, got[name])
    if d then
      error(("%s: output '%s' differs: %s\n%s"):format(label, name, d, p:text()), 0)
    end
  end
end

function H.ref()
  return vyre.backend("reference")
end

--- true when parse(p:text()) is structurally equal to p and prints the same.
function H.roundtrips(p)
  local q = vyre.parse(p:text())
  return q == p and q:text() == p:text()
end

--- Runs `(store o 0u32 EXPR)` with params {{name, type, value}...} and returns o[1].
function H.expr(rtype, expr, params)
  local decls = { "(buffer o " .. rtype .. " write 1)" }
  local args = {}
  for _, pr in ipairs(params or {}) do
    decls[#decls + 1] = string.format("(param %s %s)", pr[1], pr[2])
    args[pr[1]] = pr[3]
  end
  local text = string.format("(program e (workgroup 1)\n  %s\n  (store o 0u32 %s))\n",
    table.concat(decls, "\n  "), expr)
  local p = H.parse(text, "expr " .. expr)
  return H.ref():run(p, args).o[1]
end

function H.binop(op, t, a, b, rtype)
  return H.expr(rtype or t, "(" .. op .. " a b)", { { "a", t, a }, { "b", t, b } })
end

function H.unop(op, t, a, rtype)
  return H.expr(rtype or t, "(" .. op .. " a)", { { "a", t, a } })
end

function H.cast(to, from, a)
  return H.expr(to, "(cast " .. to .. " a)", { { "a", from, a } })
end

function H.bitcast(to, from, a)
  return H.expr(to, "(bitcast " .. to .. " a)", { { "a", from, a } })
end

--- f32 rounding of a Lua number.
function H.f32(x)
  return (string.unpack("<f", string.pack("<f", x)))
end

--- The error message raised by fn(...) (fails the spec if nothing is raised).
function H.error_of(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error, but the call succeeded")
  return tostring(err)
end

H.saxpy_text = [[
(program saxpy (workgroup 256)
  (buffer x f32 read)
  (buffer y f32 read_write)
  (param a f32)
  (let i (gid x))
  (if (lt i (len y))
    (then (store y i (add (mul a (load x i)) (load y i))))))
]]

function H.saxpy()
  return H.parse(H.saxpy_text, "saxpy")
end

-- Random inputs for generated programs (parity specs 22 and 30) ------------------------

--- xorshift64* from a seed: the same values on every machine.
function H.rng(seed)
  local s = seed ~ 0x9E3779B97F4A7C15
  if s == 0 then s = 1 end
  return function()
    s = s ~ (s >> 12); s = s ~ (s << 25); s = s ~ (s >> 27)
    return s * 0x2545F4914F6CDD1D
  end
end

local SPECIAL_F = { 0.0, -0.0, 1.0, -1.0, 0.5, 1 / 0, -1 / 0, 0 / 0, 1e-40, 3.4e38, 1e300 }

--- A value of type t from r: floats mostly moderate, sometimes special (±0, ±inf, NaN,
--- subnormal, huge).
function H.random_value(t, r)
  local x = r()
  if t == "bool" then return x & 1 == 1 end
  if t == "i32" then return ((x >> 32) & 0xffffffff) - 0x80000000 end
  if t == "u32" then return (x >> 32) & 0xffffffff end
  if t == "i64" or t == "u64" then return x end
  if x & 15 == 0 then return SPECIAL_F[(x >> 8) % #SPECIAL_F + 1] end
  local v = ((x >> 11) / (1 << 53) - 0.5) * 2.0 ^ (((x >> 4) & 31) - 10)
  if t == "f32" then v = string.unpack("f", string.pack("f", v)) end
  return v
end

--- Inputs for program p: every param, and every buffer that is read (n elements unless
--- it declares a count); write buffers are left to start at zero.
function H.random_inputs(p, seed, n)
  local r = H.rng(seed)
  local args = {}
  for _, d in ipairs(p:decls()) do
    if d.kind == "param" then
      args[d.name] = H.random_value(d.type, r)
    elseif d.kind == "buffer" and d.access ~= "write" then
      local count = (d.count and d.count > 0) and d.count or n
      local vals = {}
      for i = 1, count do vals[i] = H.random_value(d.type, r) end
      args[d.name] = vyre.array(d.type, vals)
    end
  end
  return args
end

--- Runs Lua code in a child lua5.4 with this process's module paths, its environment
--- and the extra assignments env ("NAME=value ..."); returns what it printed (stdout and
--- stderr).
function H.lua_child(env, code)
  local f = io.popen(("%s LUA_PATH=%q LUA_CPATH=%q lua5.4 -e %q 2>&1"):format(env, package.path,
    package.cpath, code))
  local out = f:read("a")
  f:close()
  return out
end

--- After a GPU spec dropped its objects: trims the device's caches (the compiled
--- megakernels it keeps become garbage), collects twice, trims again and returns the live
--- counts that are not zero ({} when nothing is left alive).
function H.leftovers(dev)
  dev:trim()
  collectgarbage()
  collectgarbage()
  dev:trim()
  local s, left = dev:stats(), {}
  for _, k in ipairs({ "live_buffers", "live_kernels", "live_graphs", "live_modules" }) do
    if s[k] ~= 0 then left[k] = s[k] end
  end
  return left
end

--- The CUDA backends a backend-parity spec runs on, each {name =, tag =, open =, small =}:
--- a real GPU (tag #gpu: the main pass, where CUDA is usable) and the fake driver (tag
--- #fakecuda: scripts/test.sh's fake pass, VYRE_LIBCUDA=<build>/fakecuda/libcuda.so.1).
--- The fake interprets every kernel on the CPU (tests/fakecuda/exec.c), so small = true
--- asks the spec for the sizes it uses on the reference backend. open() returns the
--- device or raises why it is not usable.
--- The fake kind is listed only where VYRE_LIBCUDA loads the fake driver, so a run on a
--- GPU machine (busted with or without --tags=gpu) has no fake describes to set up.
function H.cuda_kinds()
  local kinds = {
    { name = "CUDA", tag = "#gpu", small = false, open = function()
      return assert(require("vyre.cuda").device(0))
    end },
  }
  if H.fake_loaded() then
    kinds[#kinds + 1] = { name = "the fake CUDA driver", tag = "#fakecuda", small = true,
      open = H.fake_backend }
  end
  return kinds
end

--- True where VYRE_LIBCUDA loads the fake driver (scripts/test.sh's fake pass).
function H.fake_loaded()
  return (os.getenv("VYRE_LIBCUDA") or ""):find("fakecuda/libcuda.so.1", 1, true) ~= nil
end

--- kinds without the fake driver's entries (open = H.fake_backend) where the fake is not
--- loaded, so a GPU run sets up no fake describes (and a fake run keeps them).
function H.only_loaded(kinds)
  local out = {}
  for _, k in ipairs(kinds) do
    if k.open ~= H.fake_backend or H.fake_loaded() then out[#out + 1] = k end
  end
  return out
end

--- The fake driver's device 0 (a CUDA backend computing on the reference interpreter);
--- raises, saying how to get it, when VYRE_LIBCUDA does not load the fake driver.
function H.fake_backend()
  local lib = os.getenv("VYRE_LIBCUDA") or ""
  assert(lib:find("fakecuda/libcuda.so.1", 1, true), "the fake driver is not loaded: run with "
    .. "VYRE_LIBCUDA=build/fakecuda/libcuda.so.1 (scripts/test.sh's fake pass does)")
  local be = assert(require("vyre.cuda").device(0))
  assert(be:info().fake, "VYRE_LIBCUDA names the fake driver, but device 0 is not fake")
  return be
end

--- Asserts that fn raises an e-graph method's error holding want and a Fix.
--- (Plain error(): busted's assert is the specs' global, not this module's.)
function H.expect_egraph_error(fn, want)
  local err = H.error_of(fn)
  if not (err:find("vyre.EGraph:[a-z_]+: ") and err:find(want, 1, true)
      and err:find("Fix: ", 1, true)) then
    error(("expected an e-graph error holding %q and a Fix, got: %s"):format(want, err), 2)
  end
end

--- The three backends a spec runs each case on, as {name, tag, open} (the fake
--- driver's only where it is loaded): the reference interpreter, the fake CUDA driver
--- (#fakecuda, scripts/test.sh's fake pass) and a GPU's device 0 (#gpu).
function H.three_backends()
  return H.only_loaded({
    { name = "reference", tag = "", open = function()
      return require("vyre").backend("reference")
    end },
    { name = "fake CUDA driver's", tag = " #fakecuda", open = H.fake_backend },
    { name = "cuda", tag = " #gpu", open = function()
      return assert(require("vyre.cuda").device(0))
    end },
  })
end

return H
