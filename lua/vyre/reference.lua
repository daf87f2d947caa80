-- vyre.reference — the CPU reference backend: the C interpreter that is the
-- specification of every op, behind the same vyre.Backend interface as CUDA (run,
-- buffers, compile, launch, bind, sequence, graph, timing, stats). Buffers live in
-- host memory; launches run to completion before they return.
local core = require("vyre.core")

local M = {}

--- A new reference backend (each has its own stats). opts.max_steps: the loop
--- iterations one run may take (default VYRE_REF_MAX_STEPS or 10^10). opts.debug: count
--- out-of-bounds accesses per declaration (default $VYRE_DEBUG=1; be:debug, be:oob_report).
function M.new(opts)
  local be = core.reference_new(opts) -- not a tail call: errors then carry no file:line
  return be
end

return M
