-- vyre check FILE... — validates program files (canonical text, or a Lua file that
-- builds programs) and lists every problem with its fix, as FILE:LINE:COLUMN lines an
-- editor can jump to. Exit 0 when every program is valid, 1 when any has a problem.
local vyre = require("vyre")
local C = require("vyre.cli.common")

local M = {
  name = "check",
  summary = "validate program files and list every problem with its fix",
}

M.help = [==[
usage: vyre check [--quiet] FILE...

Validates each FILE and lists every problem with how to fix it. FILE is program text
(the canonical S-expression format, any extension but .lua) or a Lua file (*.lua)
that builds programs and returns them: a vyre.Program, program text, a table
{program = p, args = {...}, opts = {...}} or a list of those. The Lua file runs with
the usual globals plus `vyre`.

Each problem is printed as
  FILE:LINE:COLUMN: error [CODE] PATH: what is wrong
      Fix: how to correct it
LINE:COLUMN is the statement the problem is in (text files). For a Lua file the
DSL's own error comes first (it names the Lua line of the first problem), then every
problem of the program it rejected.

Options:
  --quiet    print only the problems (nothing for valid files)
  -h, --help this text

Exit status: 0 every program is valid, 1 a problem was found or a file cannot be
read, 2 wrong command line (also a FILE that does not exist or is a directory).]==]

-- Source positions of statements (text files) -------------------------------------

-- A tiny S-expression reader: lists {line =, col =, [1..n] = atom string | list}.
local function read_tree(text)
  local pos, line, col = 1, 1, 1
  local root = { line = 1, col = 1 }
  local stack = { root }
  local n = #text
  while pos <= n do
    local c = text:sub(pos, pos)
    if c == "\n" then
      line, col, pos = line + 1, 1, pos + 1
    elseif c == ";" then
      local e = text:find("\n", pos, true) or n + 1
      col, pos = col + (e - pos), e
    elseif c == "(" then
      local l = { line = line, col = col }
      local top = stack[#stack]
      top[#top + 1] = l
      stack[#stack + 1] = l
      col, pos = col + 1, pos + 1
    elseif c == ")" then
      if #stack > 1 then stack[#stack] = nil end
      col, pos = col + 1, pos + 1
    elseif c:match("%s") then
      col, pos = col + 1, pos + 1
    else
      local s, e = text:find("^[^%s();]+", pos)
      local top = stack[#stack]
      top[#top + 1] = text:sub(s, e)
      col, pos = col + (e - s + 1), e + 1
    end
  end
  return root[1]
end

local DECL = { workgroup = true, buffer = true, shared = true, param = true }
local STMT = { let = true, set = true, store = true, ["if"] = true, ["for"] = true,
  ["break"] = true, ["return"] = true, barrier = true, atomic = true }

local function head(x) return type(x) == "table" and x[1] or nil end

-- The statements of a block list after index `from`.
local function stmts_from(list, from)
  local out = {}
  for i = from, #list do out[#out + 1] = list[i] end
  return out
end

-- Children of a statement by the validator's block names (then, else, body).
local function block_of(node, name)
  if head(node) == "if" then
    for i = 3, #node do
      if head(node[i]) == name then return stmts_from(node[i], 2) end
    end
  elseif head(node) == "for" and name == "body" then
    -- (for V FROM TO [STEP] S...): STEP is absent when the 5th element is a statement.
    local first = STMT[head(node[5])] and 5 or 6
    return stmts_from(node, first)
  end
  return nil
end

--- line, column of the deepest statement or declaration a validator path names
--- ("decls[1]", "body[2].then[0].value"), or nil.
function M.locate(text, path)
  local prog = read_tree(text)
  if type(prog) ~= "table" or prog[1] ~= "program" then return nil end
  local decls, body = {}, {}
  for i = 3, #prog do
    local x = prog[i]
    if DECL[head(x)] then
      if head(x) ~= "workgroup" then decls[#decls + 1] = x end
    else
      body[#body + 1] = x
    end
  end
  local first, idx = path:match("^(%a+)%[(%d+)%]")
  if not first then return prog.line, prog.col end
  local list = first == "decls" and decls or first == "body" and body or nil
  local node = list and list[tonumber(idx) + 1]
  if type(node) ~= "table" then return prog.line, prog.col end
  local found = node
  for name, i in path:gmatch("%.(%a+)%[(%d+)%]") do
    local blk = block_of(found, name)
    local nxt = blk and blk[tonumber(i) + 1]
    if type(nxt) ~= "table" then break end
    found = nxt
  end
  return found.line, found.col
end

-- Reporting ---------------------------------------------------------------------------

--- Writes problems (from common.load_programs or validation) to ctx.out.
function M.report(ctx, problems, text)
  for _, pr in ipairs(problems) do
    local line, col = pr.line, pr.column
    if not line and text and pr.path then line, col = M.locate(text, pr.path) end
    local where = pr.where .. (line and (":" .. line .. ":" .. (col or 1)) or "")
    local what = pr.path and (pr.path .. ": " .. pr.message) or pr.message
    ctx.out(("%s: error [%s] %s\n"):format(where, pr.code, what))
    if pr.fix then ctx.out(("    Fix: %s\n"):format(pr.fix)) end
  end
end

--- Validates every entry; returns the problems (empty when all are valid).
function M.problems_of(entries, where)
  local all = {}
  for _, e in ipairs(entries) do
    local ok, problems = vyre.validate(e.program)
    if not ok then
      for _, pr in ipairs(problems) do
        all[#all + 1] = { where = where, program = e.program.name, code = pr.code,
          path = pr.path, message = pr.message, fix = pr.fix }
      end
    end
  end
  return all
end

local function summary(p)
  local nb, np = 0, 0
  for _, d in ipairs(p:decls()) do
    if d.kind == "buffer" then nb = nb + 1 elseif d.kind == "param" then np = np + 1 end
  end
  local wg = p.workgroup
  return ("program %s, workgroup %dx%dx%d, %d buffer%s, %d param%s, hash %s"):format(p.name,
    wg[1], wg[2], wg[3], nb, nb == 1 and "" or "s", np, np == 1 and "" or "s", p:hash())
end

--- Checks one file: returns true when every program in it is valid, else false and the
--- exit status its problems call for (common.problems_status).
function M.check_file(ctx, path, quiet)
  local entries, problems = C.load_programs(path)
  local text
  if entries then
    text = entries[1].text
    problems = M.problems_of(entries, path)
  end
  if #problems == 0 then
    if not quiet then
      for _, e in ipairs(entries) do ctx.out(("%s: ok: %s\n"):format(path, summary(e.program))) end
    end
    return true
  end
  M.report(ctx, problems, text)
  if not quiet then
    ctx.out(("%s: %d problem%s\n"):format(path, #problems, #problems == 1 and "" or "s"))
  end
  return false, C.problems_status(problems)
end

function M.run(argv, ctx)
  ctx = C.context(ctx)
  local opts, files = C.parse_options(argv, { quiet = "flag" })
  if not opts then return C.usage_error(ctx, "check", files) end
  if opts.help then
    ctx.out(M.help .. "\n")
    return C.OK
  end
  if #files == 0 then return C.usage_error(ctx, "check", "no FILE given") end
  local status = C.OK
  for _, f in ipairs(files) do
    local ok, st = M.check_file(ctx, f, opts.quiet)
    if not ok then status = math.max(status, st) end -- a missing FILE (2) wins over 1
  end
  return status
end

return M
