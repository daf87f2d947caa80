-- vyre.egraph.payload — typed leaf payloads (docs/EGRAPH.md, "Payloads").
--
-- A leaf row holds its payload as two u32 words (low, high): 64 bits, never
-- canonicalised. What the bits mean is the leaf op's payload type, fixed when the op is
-- registered (eg:op(name, 0, type)):
--   "i64"  a 64-bit integer (the default; the bits are the two's complement value);
--   "f64"  an IEEE double (the bits are the double's);
--   "sym"  an interned string: the bits are the symbol's number, 0, 1, 2, ... in the
--          order the e-graph first saw each string (eg:symbol converts both ways).
-- The type decides how a pattern's literal is read ((Num 1.5), (Var x)), how payload
-- arithmetic computes (in i64 or in f64), how a substitution's payload reaches Lua (an
-- integer, a float, a string) and how extraction prints it. The device only ever sees
-- the bits, so both backends hold the same words.
local P = {}

P.TYPES = { i64 = true, f64 = true, sym = true }

--- The bits (a Lua integer) of an f64 and back.
function P.f64_bits(x) return (string.unpack("<i8", string.pack("<d", x))) end
function P.bits_f64(b) return (string.unpack("<d", string.pack("<i8", b))) end

--- The payload type of op id op ("i64" for ops of arity >= 1 too).
function P.type_of(eg, op) return eg.reg.ptype and eg.reg.ptype[op + 1] or "i64" end

--- The arithmetic type a payload of this type computes in: sym numbers are integers.
function P.arith(t) return t == "f64" and "f64" or "i64" end

--- Interns string s; returns its symbol number.
function P.intern(eg, s)
  local syms = eg.syms
  if not syms then
    syms = { byname = {}, names = {} }
    eg.syms = syms
  end
  local id = syms.byname[s]
  if id then return id end
  id = #syms.names
  syms.names[id + 1] = s
  syms.byname[s] = id
  return id
end

--- The string of symbol number id, or nil.
function P.name(eg, id)
  return eg.syms and math.type(id) == "integer" and eg.syms.names[id + 1] or nil
end

--- The bits of Lua value v as a payload of op id op, or nil and what it should be.
function P.encode(eg, op, v)
  local t = P.type_of(eg, op)
  if t == "f64" then
    if type(v) ~= "number" or v ~= v then return nil, "a number (not NaN)" end
    if v == 0 then v = 0.0 end -- -0.0 and 0.0 are one constant (egg's NotNan compares so)
    return P.f64_bits(v + 0.0)
  elseif t == "sym" then
    if type(v) ~= "string" then return nil, "a string (the symbol)" end
    return P.intern(eg, v)
  end
  if math.type(v) ~= "integer" then return nil, "an integer" end
  return v
end

--- The Lua value of payload bits b of op id op.
function P.decode(eg, op, b)
  local t = P.type_of(eg, op)
  if t == "f64" then return P.bits_f64(b) end
  if t == "sym" then return P.name(eg, b) or b end
  return b
end

--- The shortest text that reads back as f64 x.
function P.f64_text(x)
  if x == math.floor(x) and math.abs(x) < 2 ^ 53 then return ("%d"):format(x) end
  for digits = 1, 17 do
    local s = ("%." .. digits .. "g"):format(x)
    if tonumber(s) == x then return s end
  end
  return ("%.17g"):format(x)
end

--- How extraction and eg:nodes print payload bits b of op id op.
function P.text(eg, op, b)
  local t = P.type_of(eg, op)
  if t == "f64" then return P.f64_text(P.bits_f64(b)) end
  if t == "sym" then return P.name(eg, b) or ("#" .. b) end
  return ("%d"):format(b)
end

--- Reads a pattern literal (an atom that is not a ?variable) as the bits of a payload of
--- type t; nil when it is not one.
function P.literal(eg, t, atom)
  if type(atom) ~= "string" then return nil end
  if t == "sym" then
    if atom:match("^[^%s()?][^%s()]*$") then return P.intern(eg, atom) end
    return nil
  end
  local n = tonumber(atom)
  if n == nil then return nil end
  if t == "f64" then
    if n ~= n then return nil end
    if n == 0 then n = 0.0 end
    return P.f64_bits(n + 0.0)
  end
  return math.tointeger(n)
end

--- A number literal's f64 text in the vyre text format (hexadecimal, exact).
function P.f64_lit(x)
  if x == 0 then return "0x0p+0f64" end
  return ("%af64"):format(x)
end

return P
