-- vyre.egraph.schema — the e-graph's device columns in one place, so kernels cannot
-- disagree on them (the layout is docs/EGRAPH.md's "Device layout").
--
-- Every e-graph kernel used to declare the columns it reads one line each, with the
-- element type repeated in each of about 40 kernels. A kernel now names them:
--
--   (columns read row_class row_op row_off row_len)
--
-- and SC.expand turns that line into the declarations, in the order written, with the
-- type from the table below and the line's own indentation:
--
--   (buffer row_class u32 read)
--   (buffer row_op u32 read) ...
--
-- so the programs' text is exactly what the hand-written declarations were (the
-- migration was checked kernel by kernel: every kernel text specs 40, 41, 43, 84, 87, 97
-- and 98 compile is byte for byte the one before). Every kernel helper of the egraph
-- modules expands its text before it reaches the kernel cache; a kernel's own scratch
-- buffers (flags, ranks, sort keys) stay plain (buffer ...) declarations.
local SC = {}

-- name -> element type. The columns of the graph (store.lua), of extraction, and of
-- explanations (explain.lua).
SC.COLUMNS = {
  parent = "u32",     -- union-find parent of each id; the canonical id after settle
  row_class = "u32",  -- the e-class id of each row (e-node)
  row_op = "u32",     -- the op id of each row
  row_off = "u32",    -- where each row's words start in children
  row_len = "u32",    -- how many words: the arity, or 2 for a leaf's payload
  children = "u32",   -- the rows' words: child ids, or a leaf's payload (low, high)
  row_epoch = "u32",  -- the iteration that added the row (low 31 bits), subsumed (bit 31)
  isleaf = "u32",     -- per op id: 1 for an op of arity 0
  stat = "u32",       -- the small counters a sequence reads back
  xrow_id = "u32",    -- explanations: the term id of each row
  xt_op = "u32",      -- explanations: the term log (op, length, offset into xt_words)
  xt_len = "u32",
  xt_off = "u32",
  xt_words = "u32",
  xu_a = "u32",       -- explanations: the union log (the two terms, why, batch)
  xu_b = "u32",
  xu_why = "u32",
  xu_batch = "u32",
}

SC.ACCESS = { read = true, write = true, read_write = true }

local function bad(what)
  require("vyre.errors").raise("internal", "vyre.egraph internal: " .. what, 0)
end

--- The declaration lines of columns `names` (a space-separated list) with `access`,
--- each prefixed by `indent`, joined by newlines.
function SC.decl(indent, access, names)
  if not SC.ACCESS[access] then
    bad(("(columns %s %s): the access must be read, write or read_write"):format(access, names))
  end
  local out = {}
  for name in names:gmatch("%S+") do
    local t = SC.COLUMNS[name]
    if not t then
      bad(("(columns %s %s): '%s' is not a column of schema.lua"):format(access, names, name))
    end
    out[#out + 1] = ("%s(buffer %s %s %s)"):format(indent, name, t, access)
  end
  if #out == 0 then bad(("(columns %s): no column named"):format(access)) end
  return table.concat(out, "\n")
end

--- Kernel text with every `(columns ACCESS name ...)` line expanded.
function SC.expand(text)
  return (text:gsub("([ \t]*)%(columns ([%w_]+)([^()]*)%)", function(indent, access, names)
    return SC.decl(indent, access, names)
  end))
end

return SC
