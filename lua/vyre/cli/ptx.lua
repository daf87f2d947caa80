-- vyre ptx FILE [--sm N] — prints the PTX of a program (no GPU needed): what the CUDA
-- backend would JIT-compile, after constant folding and bounds-check elimination.
local vyre = require("vyre")
local C = require("vyre.cli.common")
local check = require("vyre.cli.check")

local M = {
  name = "ptx",
  summary = "print the PTX of a program (no GPU needed)",
}

M.help = [==[
usage: vyre ptx FILE [--sm N] [--program NAME] [-o OUT]

Prints the PTX that the CUDA backend compiles for the program in FILE (program text,
or a Lua file returning programs: see 'vyre check --help'). No GPU is needed.

Options:
  --sm N          PTX target: 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110,
                  120 or 121 (default 70, as vyre.ptx; docs/RUNTIME.md "PTX targets")
  --program NAME  the program to print when the file returns several (default: all,
                  one after the other)
  -o, --output F  write the PTX to file F instead of stdout
  -h, --help      this text

An invalid program is not emitted: its problems are listed as 'vyre check' lists them.
Exit status: 0 PTX written, 1 invalid program or unwritable file, 2 wrong command line.]==]

function M.run(argv, ctx)
  ctx = C.context(ctx)
  local opts, pos = C.parse_options(argv, { sm = "int", program = "string", output = "string",
    o = "string" })
  if not opts then return C.usage_error(ctx, "ptx", pos) end
  if opts.help then
    ctx.out(M.help .. "\n")
    return C.OK
  end
  if #pos ~= 1 then return C.usage_error(ctx, "ptx", "give exactly one FILE") end
  local sm = opts.sm or 70
  local known = {}
  for _, t in ipairs(vyre.core.ptx_targets()) do
    known[#known + 1] = t.sm
    if t.sm == sm then known = nil break end
  end
  if known then
    return C.usage_error(ctx, "ptx", ("--sm %d is not a PTX target vyre emits; use one of %s")
      :format(sm, table.concat(known, ", ")))
  end
  local path = pos[1]
  local entries, problems = C.load_programs(path)
  if entries then problems = check.problems_of(entries, path) end
  if #problems > 0 then
    check.report(ctx, problems, entries and entries[1].text)
    return C.problems_status(problems)
  end
  if opts.program then
    local e, why = C.pick(entries, opts.program)
    if not e then return C.usage_error(ctx, "ptx", why) end
    entries = { e }
  end
  local parts = {}
  for _, e in ipairs(entries) do
    local ok, ptx = pcall(vyre.ptx, e.program, { sm = sm })
    if not ok then
      ctx.err(("vyre ptx: %s: %s\n"):format(path, tostring(ptx)))
      return C.FAIL
    end
    parts[#parts + 1] = ptx
  end
  local text = table.concat(parts, "\n")
  local out = opts.output or opts.o
  if out then
    local f, err = io.open(out, "wb")
    if not f then
      ctx.err(("vyre ptx: cannot write %s: %s\n"):format(out, err))
      return C.FAIL
    end
    f:write(text)
    f:close()
  else
    ctx.out(text)
  end
  return C.OK
end

return M
