-- jacobi_multi.lua — the Jacobi sweeps of jacobi.lua on every GPU of a vyre.Group: the
-- grid is split into strips of rows, one per GPU, each with a halo row above and below;
-- after each sweep the neighbours' edge rows are copied into the halos by peer copies
-- (buf:copy_to on views, ordered on the devices' streams), and every 25 sweeps the
-- largest change over all strips (vyre.lib.reduce over the group, max) decides whether
-- to stop. Checked bit for bit against the same sweeps on one GPU. Needs NCCL and two
-- or more GPUs (VYRE_GPUS=n uses the first n); otherwise it says why and exits.
package.path = (arg and arg[0] and arg[0]:match("^(.*)/") or ".") .. "/support/?.lua;"
  .. package.path
local vyre = require("vyre")
local lib = require("vyre.lib")

-- The strip sweep (support/jacobi_strip.lua, shared with bench/multigpu/bench.lua).
local sweep = require("jacobi_strip")

local cuda = vyre.cuda
local count = cuda.count() or 0
local ngpu = math.min(tonumber(os.getenv("VYRE_GPUS") or "") or count, count)
local nccl, why = cuda.nccl()
if ngpu < 2 or not nccl then
  print("jacobi_multi: needs NCCL and 2 or more GPUs: "
    .. (not nccl and tostring(why) or ("this machine has " .. count)))
  return
end
local ords = {}
for i = 1, ngpu do ords[i] = i - 1 end
local g = cuda.group(ords)

local w, h, tol, check_every, max_sweeps = 64, 8 * ngpu + 3, 1e-3, 25, 5000
local function initial(row) return row == 0 and 1.0 or 0.0 end -- top edge held at 1

-- The strips: ranks get h // ngpu rows, the last the rest.
local strips, first_row = {}, 0
for i = 1, ngpu do
  local rows = i < ngpu and h // ngpu or h - first_row
  local init = vyre.array("f32", (rows + 2) * w)
  for r = 0, rows + 1 do
    local gr = first_row + r - 1 -- global row of local row r
    if gr >= 0 and gr < h then
      for x = 0, w - 1 do init[r * w + x + 1] = initial(gr) end
    end
  end
  local be = g.backends[i]
  local s = { be = be, rows = rows, first = first_row,
    a = be:buffer("f32", init), b = be:buffer("f32", init), diff = be:buffer("f32", (rows + 2) * w),
    k = be:compile(sweep) }
  s.diff:zero()
  strips[i] = s
  first_row = first_row + rows
end

-- Halo exchange of the buffers `cur` (a or b) of every strip.
local function exchange(cur)
  for i = 1, ngpu - 1 do
    local up, down = strips[i], strips[i + 1]
    -- up's last row -> down's top halo; down's first row -> up's bottom halo
    up[cur]:view(up.rows * w + 1, w):copy_to(down[cur]:view(1, w))
    down[cur]:view(w + 1, w):copy_to(up[cur]:view((up.rows + 1) * w + 1, w))
  end
end

local sweeps, change = 0, math.huge
while change >= tol and sweeps < max_sweeps do
  for _ = 1, check_every do
    local src, dst = sweeps % 2 == 0 and "a" or "b", sweeps % 2 == 0 and "b" or "a"
    for i, s in ipairs(strips) do
      s.k:launch({ u = s[src], v = s[dst], diff = s.diff, w = w, rows = s.rows,
        top = i == 1 and 1 or 0, bottom = i == ngpu and 1 or 0 }, { n = { w, s.rows } })
    end
    exchange(dst)
    sweeps = sweeps + 1
  end
  local diffs = {}
  for i, s in ipairs(strips) do diffs[i] = s.diff end
  change = lib.reduce(g, diffs, "max")
end
local cur = sweeps % 2 == 0 and "a" or "b"

-- The same sweeps on one GPU, the whole grid as one strip.
local one = g.backends[1]
local init = vyre.array("f32", (h + 2) * w)
for r = 1, h do for x = 0, w - 1 do init[r * w + x + 1] = initial(r - 1) end end
local a, b = one:buffer("f32", init), one:buffer("f32", init)
local diff = one:buffer("f32", (h + 2) * w)
diff:zero()
local k = one:compile(sweep)
local one_sweeps, one_change = 0, math.huge
while one_change >= tol and one_sweeps < max_sweeps do
  for _ = 1, check_every do
    local u, v = one_sweeps % 2 == 0 and a or b, one_sweeps % 2 == 0 and b or a
    k:launch({ u = u, v = v, diff = diff, w = w, rows = h, top = 1, bottom = 1 }, { n = { w, h } })
    one_sweeps = one_sweeps + 1
  end
  one_change = lib.reduce(one, diff, "max")
end
local want = (one_sweeps % 2 == 0 and a or b):download()

local function check(cond, fmt, ...)
  if not cond then error(("check failed: " .. fmt):format(...), 2) end
end
check(sweeps == one_sweeps, "%d sweeps, one GPU needed %d", sweeps, one_sweeps)
check(change == one_change, "last change %.9g, one GPU %.9g", change, one_change)
for i, s in ipairs(strips) do
  local got = s[cur]:download()
  for r = 1, s.rows do
    for x = 0, w - 1 do
      local gi = (s.first + r) * w + x + 1
      check(got[r * w + x + 1] == want[gi], "strip %d row %d col %d = %.9g, one GPU %.9g", i, r,
        x, got[r * w + x + 1], want[gi])
    end
  end
end
print(("jacobi_multi: %dx%d grid in %d strips on %d GPUs converged to %.0e in %d sweeps "
  .. "— matches one GPU bit for bit"):format(w, h, ngpu, ngpu, tol, sweeps))
g:free()
