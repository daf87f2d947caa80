-- vyre — the library (ARCHITECTURE.md §7): programs from text or the DSL, host arrays,
-- backend choice (CUDA when it works, else the CPU reference), PTX. Users write
-- require("vyre.cuda"): this table seen through lua/vyre/cuda.lua, with the CUDA device
-- functions added. Everything heavy is in vyre.core (C); this file wires the pieces.
local Err = require("vyre.errors")
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
--- vyre.fuse({p1, p2, ...}, {internal = {"tmp"}}) -> one Program running the chain per
--- invocation (src/core/ir/fuse.c has the rules); internal buffers become registers
--- and a u32 param NAME_len.
vyre.fuse = core.fuse

-- Methods written in Lua attach to the C classes through core.extend, the one extension
-- point (src/lvyre/lerror.c): p:dot([{max_nodes = n}]) -> Graphviz text of the program
-- (lua/vyre/program_dot.lua); be:profile() -> the planners' device table built from
-- be:info() (lua/vyre/profiles.lua), so synthetic profiles and the real device share one
-- definition.
core.extend("vyre.Program", { dot = require("vyre.program_dot").dot })
core.extend("vyre.Backend", {
  profile = function(be)
    local mt = getmetatable(be)
    if type(mt) ~= "table" or rawget(mt, "__name") ~= "vyre.Backend" then
      require("vyre.errors").wrong_self(be, "vyre.Backend", "vyre.Backend:profile", 2)
    end
    if be.freed then
      require("vyre.errors").raise("freed", "vyre.Backend:profile: the backend was freed. Fix: "
        .. "open it again with vyre.backend() or vyre.cuda.device(i)", 2)
    end
    return require("vyre.profiles").of(be)
  end,
})
vyre.types = core.types()

-- The DSL (lua/vyre/dsl.lua) -------------------------------------------------
vyre.program = dsl.program
vyre.buffer = dsl.buffer
vyre.shared = dsl.shared
vyre.param = dsl.param
vyre.worklist = dsl.worklist
vyre.cast = dsl.cast
vyre.bitcast = dsl.bitcast
vyre.select = dsl.select
vyre.fma = dsl.fma
vyre.lit = dsl.lit

-- Host arrays ----------------------------------------------------------------

--- vyre.array(type, n | table | binary string) -> vyre.Array
vyre.array = core.array

-- Backends -------------------------------------------------------------------

--- vyre.reference.new([{max_steps = n}]): the CPU reference backend.
vyre.reference = require("vyre.reference")
vyre.backends = core.backends -- {{name, priority, available [, reason]}, ...} (lbackends.c)

local function load_cuda()
  local ok, mod = pcall(require, "vyre.cuda_device")
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
--- opts go to vyre.reference.new or vyre.cuda.device ({debug = true}: the debug mode).
function vyre.backend(name, opts)
  if name == nil then
    local mod = load_cuda()
    if mod then
      local dev = mod.device(0, opts)
      if dev then return dev end
    end
    return require("vyre.reference").new(opts)
  elseif name == "reference" then
    return require("vyre.reference").new(opts)
  elseif name == "cuda" then
    local mod, why = load_cuda()
    if not mod then return nil, why end
    return mod.device(0, opts)
  end
  Err.raise("arg",
    string.format("vyre.backend: unknown backend '%s'. Fix: use 'reference' or 'cuda' "
    .. "(or no argument for the best available)", tostring(name)), 2)
end

--- vyre.help([x]) prints help for a function, object, module or name (lua/vyre/help.lua).
function vyre.help(x)
  return require("vyre.help").help(x)
end

-- The megakernel policy and the plan view attach to the runtime through registered
-- hooks (core.set_hook, the one registry of them: the C binding requires no Lua module);
-- both modules load on first use.
core.set_hook("megakernel_policy", function(facts)
  return require("vyre.policy").decide(facts)
end)
core.set_hook("plan", function(plan, steps)
  return require("vyre.plan_view").attach(plan, steps)
end)
-- buf:fill/iota/random on CUDA run one kernel of vyre.lib.basic (src/lvyre/lbuffer.c).
core.set_hook("generate", function(be, buf, g)
  return require("vyre.lib.basic").generate(be, buf, g)
end)

-- Loaded on first use: vyre.lib, vyre.egraph (docs/EGRAPH.md), vyre.cuda, and planning
-- (docs/PLANNERS.md): policies, planners, profiles and plan views.
local lazy = { lib = "vyre.lib", egraph = "vyre.egraph", cuda = "vyre.cuda",
  policy = "vyre.policy", planners = "vyre.planners", profiles = "vyre.profiles",
  plan_view = "vyre.plan_view" }
setmetatable(vyre, {__index = function(_, k) if lazy[k] then return require(lazy[k]) end end})
return vyre
