-- vyre.cli — the `vyre` command: dispatches to one module per subcommand
-- (lua/vyre/cli/<command>.lua). Each command is run(argv, ctx) -> exit status, with
-- ctx = {out = fn(string), err = fn(string)} (common.capture() collects output), so
-- the specs call it in-process; bin/vyre is a thin launcher:
--   os.exit(require("vyre.cli").main(arg))
local C = require("vyre.cli.common")

local M = {}

M.COMMANDS = { "info", "check", "ptx", "run", "bench", "repl", "launch" }

local function command(name)
  for _, c in ipairs(M.COMMANDS) do
    if c == name then return require("vyre.cli." .. name) end
  end
  return nil
end
M.command = command

function M.usage()
  local lines = {
    "usage: vyre COMMAND [options] [arguments]",
    "",
    "Commands:",
  }
  for _, name in ipairs(M.COMMANDS) do
    lines[#lines + 1] = ("  %-6s %s"):format(name, command(name).summary)
  end
  for _, l in ipairs({
    "  help   vyre help COMMAND: the help of one command",
    "",
    "vyre COMMAND --help gives each command's options. vyre --version prints the version.",
    "Program files are canonical program text (any extension but .lua) or Lua files",
    "that return programs (see vyre check --help). Exit status: 0 success, 1 the work",
    "failed (problems found, the run raised), 2 wrong command line.",
  }) do lines[#lines + 1] = l end
  return table.concat(lines, "\n") .. "\n"
end

--- Runs the command line argv (a list of strings, as `arg`); returns the exit status.
function M.main(argv, ctx)
  ctx = C.context(ctx)
  local args = {}
  for i = 1, #(argv or {}) do args[i] = argv[i] end
  local name = table.remove(args, 1)
  if name == nil then
    ctx.err(M.usage())
    return C.USAGE
  end
  if name == "-h" or name == "--help" then
    ctx.out(M.usage())
    return C.OK
  end
  if name == "--version" or name == "-v" then
    ctx.out("vyre " .. require("vyre").version .. "\n")
    return C.OK
  end
  if name == "help" then
    if #args == 0 then
      ctx.out(M.usage())
      return C.OK
    end
    local cmd = command(args[1])
    if not cmd then
      ctx.err(("vyre help: unknown command '%s'\n"):format(args[1]) .. M.usage())
      return C.USAGE
    end
    ctx.out(cmd.help .. "\n")
    return C.OK
  end
  local cmd = command(name)
  if not cmd then
    ctx.err(("vyre: unknown command '%s'. Fix: use one of %s (vyre --help)\n"):format(name,
      table.concat(M.COMMANDS, ", ")))
    return C.USAGE
  end
  return cmd.run(args, ctx)
end

return M
