-- vyre.reference — the CPU reference backend: the C interpreter that is the
-- specification of every op, behind the same vyre.Backend interface as CUDA (run,
-- buffers, compile, launch, bind, sequence, graph, timing, stats). Buffers live in
-- host memory; launches run to completion before they return.
local core = require("vyre.core")

local M = {}

--- A new reference backend (each has its own stats).
function M.new()
  return core.reference_new()
end

return M
