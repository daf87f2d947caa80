-- 93: regressions for what the issue 26 §6 sweeps found (bench/results/2026-11-26-sweeps.md),
-- on the reference backend: an error quoting user text with a NUL kept only the text up to
-- the NUL (the Fix was lost: found by tests/fuzz/fuzz_lua.lua on eg:rule and eg:search);
-- a worklist program could not be optimised (vyre_program_copy made its worklists params:
-- found by spec 99).
local vyre = require("vyre")

describe("issue 26 §6 sweep findings", function()
  it("an error quoting text with a NUL keeps the rest of the message and its Fix", function()
    local eg = vyre.egraph(vyre.backend("reference"))
    eg:op("F", 1)
    for _, call in ipairs({
      function() eg:rule("r", "(F\0 ?x)", "(F ?x)") end,
      function() eg:search("(G\0)") end,
      function() eg:rule("r", "(F ?x)", "?x", { when = "(<\0 ?x 1)" }) end,
    }) do
      local ok, err = pcall(call)
      assert.is_false(ok)
      local text = tostring(err)
      assert.truthy(text:find("\\0", 1, true), text)
      assert.truthy(text:find("Fix: ", 1, true), text)
      assert.truthy(err.fix and #err.fix > 0, text)
    end
  end)

  it("optimises a worklist program (the copy keeps its worklists)", function()
    local p = vyre.parse([[
(program w (workgroup 32)
  (buffer out u32 read_write)
  (worklist q u32)
  (let i (gid x))
  (if (lt i (len q))
    (then (store out (rem i (len out)) (add (load q i) (add 1u32 2u32)))
          (push q (add (load q i) 1u32)))))]])
    local q = p:optimize()
    assert.truthy(q:text():find("(worklist q u32)", 1, true), q:text())
    assert.truthy(q:text():find("3u32", 1, true), q:text()) -- folded
    local be = vyre.backend("reference")
    local out = be:buffer("u32", 4)
    local wl = be:worklist("u32", 8):push({ 5, 6 })
    be:compile(q):launch({ out = out, q = wl }, { n = wl })
    assert.are.same({ 8, 9, 0, 0 }, out:download():totable())
  end)
end)
