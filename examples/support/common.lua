-- common.lua — shared by the examples: picks the backend and says which, and why.
local vyre = require("vyre.cuda")

local M = {}

function M.backend()
  local be = vyre.backend()
  if be.name == "cuda" then
    local info = be:info()
    print(("backend: cuda (%s, sm_%s)"):format(info.name, info.sm or "?"))
  else
    local ok, cuda = pcall(require, "vyre.cuda")
    local why = ok and select(2, cuda.available()) or tostring(cuda)
    print(("backend: reference CPU interpreter (CUDA not usable: %s)"):format(why))
  end
  return be
end

-- Rounds a Lua float to the nearest f32, as the GPU stores it.
function M.f32(x)
  return (string.unpack("f", string.pack("f", x)))
end

function M.check(cond, fmt, ...)
  if not cond then error(("check failed: " .. fmt):format(...), 2) end
end

return M
