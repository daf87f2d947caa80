-- frame.lua — the script that examples/embed/host_lua.c runs: init once, then frame
-- once per frame of the host's loop. It keeps a backend, its resident buffers and the
-- compiled kernels in upvalues, so nothing is re-created or copied between frames, and
-- each frame hands the buffers' raw pointers to the host (engine.present, a C function
-- the host registered). The host checks them against its own C simulation.
local vyre = require("vyre.cuda")

local M = {}

local be, step, top_launch, args, y, vy, top

-- The highest particle, with a float atomic max (heights are >= 0, top starts at +0).
local function height_program()
  return vyre.program("height", {workgroup = 64,
      vyre.buffer("y", "f32", "read"), vyre.buffer("top", "f32", "read_write", 1)},
    function(k)
      local i = k:let("i", k.gid.x)
      k:when(i:lt(k.y:len()), function()
        k:atomic("max", k.top, 0, k.y[i])
      end)
    end)
end

--- cfg: {backend = "reference" | "cuda", particles = n, gravity, bounce, dir}. Returns a
--- line saying what was set up.
function M.init(cfg)
  be = assert(vyre.backend(cfg.backend))
  local f = assert(io.open(cfg.dir .. "/particles.vyre", "rb"))
  local particles = vyre.parse(f:read("a"))
  f:close()
  local n = cfg.particles
  local y0, vy0 = vyre.array("f32", n), vyre.array("f32", n)
  for i = 1, n do -- the same start as engine.h: particle i - 1
    y0[i] = ((i - 1) % 97) * 0.25
    vy0[i] = ((i - 1) % 13 - 6) * 0.5
  end
  y, vy, top = be:buffer("f32", y0), be:buffer("f32", vy0), be:buffer("f32", 1)
  step = be:compile(particles)
  -- One args table for every frame: only dt changes, so a frame allocates nothing.
  args = { y = y, vy = vy, dt = 0.0, gravity = cfg.gravity, bounce = cfg.bounce }
  -- A bound launch: names and buffers resolved once, relaunched with top_launch().
  top_launch = be:compile(height_program()):bind({ y = y, top = top })
  return ("%s backend, %d particles in resident buffers, kernels %s and %s"):format(be.name,
    n, step.name, "height")
end

--- One frame: step the particles, find the highest, hand both buffers to the engine.
function M.frame(frame, dt)
  args.dt = dt
  step:launch(args)
  top:zero()
  top_launch()
  be:synchronize() -- the engine's C code reads the memory next
  engine.present(frame, y:pointer(), top:pointer(), #y) -- luacheck: ignore engine
end

return M
