-- bench/megakernel/jacobi.lua — 2-D Jacobi relaxation of Laplace's equation on an
-- n x n f32 grid (top edge held at 1, the other edges at 0) until no point moves by more
-- than `tol` in a round: two sweeps per round between two buffers. At n = 256 and
-- tol = 3e-5 that is about 3700 small rounds. The seed offsets the top edge's values
-- (1 + seed-dependent jitter below 1/64) so runs differ by seed. Checked in plain Lua:
-- the residual of one more sweep is within tol, the edges are untouched and every
-- value lies between the edges' extremes (the discrete maximum principle).
local common = require("bench.megakernel.common")

local M = { name = "jacobi", title = "2-D Jacobi to a tolerance" }

local SWEEP = [[
(program jacobi (workgroup 256)
  (buffer src f32 read)
  (buffer dst f32 write)
  (buffer flag u32 read_write)
  (param n u32)
  (param tol f32)
  (let i (gid x))
  (if (lt i (len dst))
    (then
      (let px (rem i n))
      (let py (div i n))
      (if (land (land (gt px 0u32) (lt px (sub n 1u32)))
                (land (gt py 0u32) (lt py (sub n 1u32))))
        (then
          (let nv (mul 0x1p-2f32 (add (add (load src (sub i 1u32)) (load src (add i 1u32)))
            (add (load src (sub i n)) (load src (add i n))))))
          (if (gt (abs (sub nv (load src i))) tol) (then (atomic or flag 0u32 1u32)))
          (store dst i nv))
        (else (store dst i (load src i)))))))]]

M.SWEEP = SWEEP

local function f32(x)
  return (string.unpack("<f", string.pack("<f", x)))
end

--- The seeded initial grid (1-based flat table of f32 values).
function M.initial(n, seed)
  local rng = common.rng(seed)
  local u = {}
  for i = 1, n * n do u[i] = 0.0 end
  for x = 1, n do u[x] = f32(1 + rng:float() / 64) end
  return u
end

--- setup(be, {n =, tol =, seed =}) -> workload instance (see run.lua).
function M.setup(be, o)
  local vyre = require("vyre")
  local n, tol = o.n or 256, o.tol or 3e-5
  local init = M.initial(n, o.seed or 1)
  local init_arr = vyre.array("f32", init)
  local a, b = be:buffer("f32", n * n), be:buffer("f32", n * n)
  local flag = be:buffer("u32", 1)
  local k = common.kernel(be, SWEEP)
  local function sweep(src, dst)
    return { k, { src = src, dst = dst, flag = flag, n = n, tol = tol }, { n = n * n } }
  end
  local inst = {
    flag = flag, output = a, nodes = n * n, edges = 4 * (n - 2) * (n - 2),
    max_rounds = o.max_rounds or 50000,
    bytes_per_round = 2 * (2 * 4 * n * n), -- each sweep reads and writes the grid
    steps = { sweep(a, b), sweep(b, a) },
  }
  function inst.reset()
    a:upload(init_arr)
    b:upload(init_arr)
    flag:zero()
  end
  function inst.check(rounds)
    local u = a:download():totable()
    local lo, hi = 0.0, 0.0
    for x = 1, n do hi = math.max(hi, init[x]) end
    local worst = 0.0
    for i = 1, n * n do
      local x, y = (i - 1) % n, (i - 1) // n
      if x == 0 or y == 0 or x == n - 1 or y == n - 1 then
        if u[i] ~= init[i] then
          return false, ("edge point (%d, %d) moved: %g, was %g"):format(x, y, u[i], init[i])
        end
      else
        if u[i] < lo or u[i] > hi then
          return false, ("point (%d, %d) = %g outside [%g, %g]"):format(x, y, u[i], lo, hi)
        end
        local r = math.abs(0.25 * ((u[i - 1] + u[i + 1]) + (u[i - n] + u[i + n])) - u[i])
        if r > worst then worst = r end
      end
    end
    -- a converged round ended with |J(b) - b| <= tol and a = J(b); Jacobi does not
    -- expand the max norm, so |J(a) - a| <= tol up to f32 rounding
    if worst > tol * 1.001 + 1e-6 then
      return false, ("residual %g > tol %g after %d rounds"):format(worst, tol, rounds)
    end
    if rounds >= inst.max_rounds then
      return false, ("did not converge in %d rounds"):format(rounds)
    end
    return true, ("%d x %d, residual %.3g <= tol %g"):format(n, n, worst, tol)
  end
  return inst
end

return M
