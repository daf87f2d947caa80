-- vyre.egraph.precompile — a rule set's kernels compiled before iteration 1 in one batch
-- (issue 25 §6, cold start). A.prepare (saturate.lua) walks each rule once per backend
-- and compiles its search and apply kernels one after another: on a GPU with an empty
-- disk cache each is a JIT of tens of milliseconds. Here the walk runs first with
-- vyre.lib's kernel cache gathering (U.collect: programs parsed, not compiled), the
-- gathered programs go to one be:compile_all (the CUDA backend JIT-compiles them in
-- worker threads), and the walk then runs for real, finding every kernel cached.
local U = require("vyre.lib.util")
local A = require("vyre.egraph.saturate")

local P = {}

--- Prepares every rule of list on eg's backend (as A.prepare each), compiling the
--- kernels they miss as one batch. An error while gathering or compiling the batch is
--- raised by the one-by-one pass that follows, exactly as A.prepare raises it.
function P.rules(eg, list)
  local be = eg.be
  local todo = {}
  for _, rule in ipairs(list) do
    if not (rule.prepared and rule.prepared[be]) then todo[#todo + 1] = rule end
  end
  if #todo > 0 then
    pcall(U.collect, be, function()
      for _, rule in ipairs(todo) do A.prepare(eg, rule) end
      require("vyre.egraph.kernels").copy_range(be) -- the columns' first growth
    end)
    -- the gathering walk left stand-ins in the rules' own caches: drop them
    for _, rule in ipairs(todo) do A.forget(rule, be) end
  end
  for _, rule in ipairs(list) do A.prepare(eg, rule) end
end

--- The kernels every e-graph on eg's backend runs whatever its rules (rebuild's canon,
--- radix sort, scans and matching; the index's keys and ranges; the growth of columns), compiled as
--- one batch when the e-graph is made, instead of one by one in its first rebuild. The
--- gathering walk builds steps over eg.stat and throws them away; a kernel it names that
--- a rebuild never uses costs one compile, and a failure here is left to the first use.
local based = setmetatable({}, { __mode = "k" }) -- backend -> {[debug mode] = true}

function P.base(eg)
  local be = eg.be
  local mode = be:debug() and "debug" or "plain" -- debug kernels are cached apart
  based[be] = based[be] or {}
  if based[be][mode] then return end -- once per backend: later e-graphs find them cached
  based[be][mode] = true
  local K = require("vyre.egraph.kernels")
  local lib = require("vyre.lib")
  local scan = require("vyre.lib.shared").scan
  local b, n, steps = eg.stat, eg.stat.count, {}
  local v = be:buffer("u32", n) -- the sort's values (they may not alias its keys)
  pcall(U.collect, be, function()
    for _, name in ipairs({ "compress", "canon", "heads", "match", "scatter_rows", "move_words",
      "copy_range", "fill_from", "mark", "count_nonzero", "append_rows" }) do
      K[name](be)
    end
    require("vyre.egraph.match").index_kernels(be)
    lib.steps.sort(be, b, v)
    scan.steps(be, "u32", "max", false, b, b, n, steps)
    scan.steps(be, "u32", "add", true, b, b, n, steps)
    -- past a few tiles (about 10^4 e-nodes) the same scans run in one pass with
    -- look-back (rebuild's rounds, the compaction's offsets): their kernels too
    local onepass = require("vyre.lib.scan_onepass")
    onepass.scan_kernel(be, "u32", "max", false, true)
    onepass.scan_kernel(be, "u32", "add", true, true)
    require("vyre.lib.basic").fill_steps(be, b, 0, n, steps)
  end)
  v:free()
end

return P
