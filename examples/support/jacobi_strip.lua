-- jacobi_strip.lua — the Jacobi sweep over one strip of a grid split in rows, used by
-- examples/jacobi_multi.lua and the weak-scaling row of bench/multigpu/bench.lua.
local vyre = require("vyre")

-- One strip: rows 1 .. rows of a (rows + 2) x w block, rows 0 and rows + 1 are halos.
-- `top`/`bottom` say whether the strip's first/last row is the grid's edge (held).
return vyre.program("jacobi_strip", {workgroup = {16, 16},
    vyre.buffer("u", "f32", "read"), vyre.buffer("v", "f32", "write"),
    vyre.buffer("diff", "f32", "write"),
    vyre.param("w", "u32"), vyre.param("rows", "u32"),
    vyre.param("top", "u32"), vyre.param("bottom", "u32")},
  function(k)
    local x, r = k:let("x", k.gid.x), k:let("r", k.gid.y + 1) -- r: 1 .. rows
    k:when(x:lt(k.w):land(r:le(k.rows)), function()
      local i = k:let("i", r * k.w + x)
      local edge_row = r:eq(1):land(k.top:eq(1)):lor(r:eq(k.rows):land(k.bottom:eq(1)))
      local inside = x:gt(0):land(x:lt(k.w - 1)):land(edge_row:lnot())
      k:when(inside, function()
        local nv = k:let("nv", (k.u[i - 1] + k.u[i + 1] + k.u[i - k.w] + k.u[i + k.w]) * 0.25)
        k.v[i] = nv
        k.diff[i] = (nv - k.u[i]):abs()
      end, function()
        k.v[i] = k.u[i]
        k.diff[i] = 0.0
      end)
    end)
  end)

