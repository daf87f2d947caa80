-- bench/common.lua — what the benchmark scripts share (run from the repository root,
-- scripts/env.sh sets the paths): the CUDA backend, or exit status 2 and the reason
-- without one; and the "name value unit" line every script prints.
local M = {}

--- The CUDA backend of device 0; exits with status 2 (and the reason on stderr) without.
function M.cuda()
  local be, why = require("vyre").backend("cuda")
  if not be then
    io.stderr:write("CUDA is not usable: " .. tostring(why) .. "\n")
    os.exit(2)
  end
  return be
end

--- Prints "name value unit" (3 decimals) and flushes, so a killed run keeps its lines.
function M.out(name, value, unit)
  print(("%s %.3f %s"):format(name, value, unit))
  io.stdout:flush()
end

return M
