-- vyre — the user's module (ARCHITECTURE.md §7): programs from text or the DSL,
-- host arrays, backend choice (CUDA when it works, else the CPU reference), PTX.
-- Everything heavy is in vyre.core (C); this file only wires the pieces together.
local core = require("vyre.core")
local dsl = require("vyre.dsl")

local vyre = {
  version = core.version,
  core = core,
}

-- Programs -----------------------------------------------------------------

--- Parses canonical (or hand-written) text into a Program; raises
--- "vyre.parse: line L, column C: ..." on a syntax error.
vyre.parse = core.parse

--- true, or false + list of {code, path, message, fix} (+ one formatted message).
function vyre.validate(p)
  return core.validate(p)
end

vyre.ptx = core.ptx
vyre.random_program = core.random_program
vyre.types = core.types()

-- The DSL (lua/vyre/dsl.lua) -------------------------------------------------
vyre.program = dsl.program
vyre.buffer = dsl.buffer
vyre.shared = dsl.shared
vyre.param = dsl.param
vyre.cast = dsl.cast
vyre.bitcast = dsl.bitcast
vyre.select = dsl.select
vyre.fma = dsl.fma
vyre.lit = dsl.lit

-- Host arrays ----------------------------------------------------------------

--- vyre.array(type, n | table | binary string) -> vyre.Array
vyre.array = core.array

-- Backends -------------------------------------------------------------------

local function load_cuda()
  local ok, mod = pcall(require, "vyre.cuda")
  if not ok then
    return nil, "vyre.cuda could not be loaded: " .. tostring(mod)
  end
  local avail, why = mod.available()
  if not avail then
    return nil, why or "CUDA is not available"
  end
  return mod
end

--- vyre.backend() -> best available (cuda, else reference);
--- vyre.backend("reference"); vyre.backend("cuda") -> backend | nil, reason.
function vyre.backend(name)
  if name == nil then
    local mod = load_cuda()
    if mod then
      local dev = mod.device(0)
      if dev then return dev end
    end
    return require("vyre.reference").new()
  elseif name == "reference" then
    return require("vyre.reference").new()
  elseif name == "cuda" then
    local mod, why = load_cuda()
    if not mod then return nil, why end
    return mod.device(0)
  end
  error(string.format("vyre.backend: unknown backend '%s'. Fix: use 'reference' or 'cuda' "
    .. "(or no argument for the best available)", tostring(name)), 2)
end

-- Planning (docs/PLANNERS.md): policies, planners and plan views load on first use.
local lazy = { lib = "vyre.lib", cuda = "vyre.cuda", policy = "vyre.policy",
  planners = "vyre.planners", profiles = "vyre.profiles", plan_view = "vyre.plan_view" }
setmetatable(vyre, {__index = function(_, k) if lazy[k] then return require(lazy[k]) end end})
return vyre
