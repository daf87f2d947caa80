-- vyre.program_dot — p:dot(): a program as Graphviz text, for reading
-- small programs: statements in order as a chain of boxes (blocks of if/for as
-- clusters), each statement's expressions as a DAG in which equal subexpressions are
-- one node (so repeated work is visible), loads and stores linked to their buffers.
-- Works from the canonical text, so it shows exactly what the backends run.
local Err = require("vyre.errors")
local M = {}

-- S-expression reader for canonical text: atoms are strings, lists are tables.
local function read(text)
  local pos, stack, cur = 1, {}, { tag = "root" }
  while pos <= #text do
    local c = text:sub(pos, pos)
    if c == "(" then
      local node = {}
      cur[#cur + 1] = node
      stack[#stack + 1] = cur
      cur = node
      pos = pos + 1
    elseif c == ")" then
      cur = table.remove(stack)
      pos = pos + 1
    elseif c:match("%s") then
      pos = pos + 1
    else
      local atom = text:match("^[^%s()]+", pos)
      cur[#cur + 1] = atom
      pos = pos + #atom
    end
  end
  return cur[1]
end

local function show(x)
  if type(x) == "string" then return x end
  local parts = {}
  for i, v in ipairs(x) do parts[i] = show(v) end
  return "(" .. table.concat(parts, " ") .. ")"
end

local function esc(s)
  return (s:gsub("\\", "\\\\"):gsub('"', '\\"'))
end

local BUILTIN = { gid = true, lid = true, wgid = true, wgsize = true, ngroups = true }
-- heads whose first operand is a word (a type or an op), shown in the label
local TYPED_HEAD = { cast = true, bitcast = true, subgroup_reduce = true, subgroup_scan = true }
local STMT = { let = true, set = true, store = true, ["if"] = true, ["for"] = true,
  ["break"] = true, ["return"] = true, barrier = true, atomic = true }

function M.dot(p, opts)
  local ok, text = pcall(function() return p:text() end)
  if not ok or type(text) ~= "string" then Err.wrong_self(p, "vyre.Program", "p:dot", 2) end
  if opts ~= nil and type(opts) ~= "table" then
    Err.raise("type",
      ("p:dot: options must be a table (got %s). Fix: p:dot() or p:dot{max_nodes = 1000}")
      :format(type(opts)), 2)
  end
  local limit = opts and opts.max_nodes or 400
  if math.type(limit) ~= "integer" or limit < 1 then
    Err.raise("arg",
      ("p:dot: max_nodes must be a positive integer (got %s). Fix: p:dot{max_nodes = 1000}")
      :format(tostring(limit)), 2)
  end
  local tree = read(text)
  local lines = { ("digraph %q {"):format(tree[2]), "  rankdir=TB;",
    '  node [fontname="monospace", fontsize=10];' }
  -- Expression and buffer nodes are defined at top level and edges at the end, so the
  -- clusters of if/for hold only their statements.
  local nodes, body, edges = {}, {}, {}
  local function node(s) nodes[#nodes + 1] = "  " .. s end
  local function emit(s) body[#body + 1] = "  " .. s end
  local function edge(s) edges[#edges + 1] = "  " .. s end
  local ids, nexpr, nstmt, ncluster = {}, 0, 0, 0
  local function expr(e)
    local key = show(e)
    if ids[key] then return ids[key] end
    nexpr = nexpr + 1
    if nexpr > limit then
      Err.raise("limit",
        ("p:dot: program '%s' has more than %d distinct expressions. Fix: p:dot{max_nodes "
        .. "= n} for a larger graph, or draw a smaller program"):format(tree[2], limit), 3)
    end
    local id = "e" .. nexpr
    ids[key] = id
    if type(e) == "string" then
      node(('%s [label="%s", shape=plaintext];'):format(id, esc(e)))
      return id
    end
    local head, args = e[1], {}
    if BUILTIN[head] then
      node(('%s [label="%s", shape=ellipse, style=filled, fillcolor="#e8f0ff"];'):format(id,
        esc(key)))
      return id
    end
    local label = head
    local first = 2
    if head == "load" or head == "len" then
      label = head .. " " .. e[2]
      first = 3
      edge(('buf_%s -> %s [style=dashed];'):format(e[2], id))
    elseif TYPED_HEAD[head] then
      label = head .. " " .. e[2]
      first = 3
    end
    node(('%s [label="%s", shape=ellipse];'):format(id, esc(label)))
    for i = first, #e do args[#args + 1] = expr(e[i]) end
    for i, a in ipairs(args) do edge(('%s -> %s [label="%d", fontsize=8];'):format(a, id, i)) end
    return id
  end
  local prev
  local function stmt(s)
    nstmt = nstmt + 1
    local id = "s" .. nstmt
    local head = s[1]
    local label = head
    local operands = {}
    if head == "let" or head == "set" then
      label = head .. " " .. s[2]
      operands = { s[3] }
    elseif head == "store" then
      label = "store " .. s[2]
      operands = { s[3], s[4] }
    elseif head == "atomic" then
      label = "atomic " .. s[2] .. " " .. s[3]
      operands = { table.unpack(s, 4) }
    elseif head == "if" then
      operands = { s[2] }
    elseif head == "for" then
      label = "for " .. s[2]
      operands = { s[3], s[4], s[5] }
    end
    emit(('%s [label="%s", shape=box, style=filled, fillcolor="#fff4d6"];'):format(id, esc(label)))
    if prev then edge(("%s -> %s [weight=10, penwidth=2];"):format(prev, id)) end
    prev = id
    for i, o in ipairs(operands) do
      if type(o) ~= "table" or not STMT[o[1]] then
        edge(('%s -> %s [label="%d", fontsize=8];'):format(expr(o), id, i))
      end
    end
    if head == "store" or head == "atomic" then
      edge(("%s -> buf_%s [style=dashed];"):format(id, head == "store" and s[2] or s[3]))
    end
    local blocks = {}
    if head == "if" then
      for i = 3, #s do blocks[#blocks + 1] = { s[i][1], { table.unpack(s[i], 2) } } end
    elseif head == "for" then
      blocks[1] = { "body", { table.unpack(s, 6) } }
    end
    for _, b in ipairs(blocks) do
      ncluster = ncluster + 1
      emit(("subgraph cluster_%d { label=%q;"):format(ncluster, b[1]))
      local save = prev
      prev = id
      for _, inner in ipairs(b[2]) do stmt(inner) end
      emit("}")
      prev = save
    end
  end
  for i = 3, #tree do
    local d = tree[i]
    if type(d) == "table" and (d[1] == "buffer" or d[1] == "shared") then
      node(('buf_%s [label="%s %s %s", shape=cylinder];'):format(d[2], d[1], d[2], d[3]))
    elseif type(d) == "table" and STMT[d[1]] then
      stmt(d)
    end
  end
  for _, list in ipairs({ nodes, body, edges }) do
    for _, l in ipairs(list) do lines[#lines + 1] = l end
  end
  lines[#lines + 1] = "}"
  return table.concat(lines, "\n") .. "\n"
end

return M
