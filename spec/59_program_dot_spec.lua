-- 59: p:dot() draws a program for Graphviz (issue 13 §5): statements in order, blocks as
-- clusters, expressions as a DAG (equal subexpressions are one node), buffers linked to
-- their loads and stores; a program too large to read is refused with a fix.
local vyre = require("vyre")

local P = vyre.parse([[(program sq (workgroup 64) (buffer u f32 read) (buffer o f32 write)
  (let i (gid x))
  (if (lt i (len o)) (then (store o i (mul (load u i) (load u i)))
    (for k 0u32 2u32 1u32 (store o i (add (load u i) 1.0f32))))))]])

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

describe("p:dot()", function()
  it("is a digraph with one node per distinct expression", function()
    local d = P:dot()
    assert.matches('^digraph "sq" {', d)
    assert.are.equal(1, count(d, 'label="load u"')) -- (load u i) three times, one node
    assert.are.equal(2, count(d, 'label="store o"'))
    assert.are.equal(1, count(d, 'label="then";'))
    assert.are.equal(1, count(d, 'label="body";'))
    assert.are.equal(1, count(d, "buf_u %[label=\"buffer u f32\", shape=cylinder%]"))
  end)

  it("is accepted by Graphviz", function()
    local h = io.popen("command -v dot")
    local dot = h:read("l")
    h:close()
    if not dot then
      pending("graphviz's dot is not on PATH: the rendering check did not run")
      return
    end
    local f = os.tmpname()
    local out = assert(io.open(f, "w"))
    out:write(P:dot())
    out:close()
    local ok = os.execute(dot .. " -Tsvg " .. f .. " -o /dev/null")
    os.remove(f)
    assert.is_true(ok)
  end)

  it("refuses programs with more expressions than max_nodes", function()
    local ok, err = pcall(P.dot, P, { max_nodes = 3 })
    assert.is_false(ok)
    assert.matches("p:dot: program 'sq' has more than 3 distinct expressions. Fix:", err, 1, true)
  end)
end)
