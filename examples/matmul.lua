-- matmul.lua — C = A * B in f32 with shared-memory tiles: each 16x16 workgroup computes
-- one 16x16 tile of C, stepping over K in 16-wide tiles of A and B that it stages in
-- shared memory between two barriers. Sizes that are not multiples of 16 exercise the
-- edges (out-of-range tile cells are loaded as 0). Checked bit for bit against the same
-- sums in plain Lua, rounding every f32 operation in the kernel's order.
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre.cuda")
local common = require("common")

local T = 16 -- the tile edge; the workgroup is T x T
local matmul = vyre.program("matmul", {workgroup = {T, T},
    vyre.buffer("A", "f32", "read"), vyre.buffer("B", "f32", "read"),
    vyre.buffer("C", "f32", "write"),
    vyre.param("M", "u32"), vyre.param("N", "u32"), vyre.param("K", "u32"),
    vyre.shared("As", "f32", T * T), vyre.shared("Bs", "f32", T * T)},
  function(k)
    local lx, ly = k:let("lx", k.lid.x), k:let("ly", k.lid.y)
    local col, row = k:let("col", k.gid.x), k:let("row", k.gid.y)
    local acc = k:var("acc", vyre.lit("f32", 0))
    local ntiles = k:let("ntiles", (k.K + (T - 1)) // T)
    -- Every invocation takes part in every barrier, so the edges are handled with
    -- select (not with k:when around the barriers).
    k:for_("t", 0, ntiles, function(t)
      local ka, kb = k:let("ka", t * T + lx), k:let("kb", t * T + ly)
      k.As[ly * T + lx] = vyre.select(row:lt(k.M):land(ka:lt(k.K)), k.A[row * k.K + ka], 0.0)
      k.Bs[ly * T + lx] = vyre.select(kb:lt(k.K):land(col:lt(k.N)), k.B[kb * k.N + col], 0.0)
      k:barrier()
      k:for_("j", 0, T, function(j)
        acc:set(acc + k.As[ly * T + j] * k.Bs[j * T + lx])
      end)
      k:barrier()
    end)
    k:when(row:lt(k.M):land(col:lt(k.N)), function()
      k.C[row * k.N + col] = acc
    end)
  end)

local be = common.backend()
local M, N, K = 50, 40, 70
local A = vyre.array("f32", M * K):random(11, -1, 1)
local B = vyre.array("f32", K * N):random(12, -1, 1)
-- n = {columns, rows}: gid.x walks the columns of C, gid.y its rows.
local out = be:run(matmul, {A = A, B = B, C = vyre.array("f32", M * N), M = M, N = N, K = K},
  {n = {N, M}})

local f32 = common.f32
local maxerr = 0
for r = 0, M - 1 do
  for c = 0, N - 1 do
    local acc, exact = 0.0, 0.0
    for j = 0, K - 1 do
      local p = A[r * K + j + 1] * B[j * N + c + 1]
      acc = f32(acc + f32(p))
      exact = exact + p
    end
    local got = out.C[r * N + c + 1]
    common.check(got == acc, "C[%d][%d] = %.9g, want %.9g", r, c, got, acc)
    maxerr = math.max(maxerr, math.abs(got - exact))
  end
end
print(("matmul: %dx%d * %dx%d in %dx%d tiles on %s, C[1][1] = %.6f, off the f64 sum by at most "
  .. "%.1e — matches"):format(M, K, K, N, T, T, be.name, out.C[1], maxerr))
