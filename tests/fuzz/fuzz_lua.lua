-- tests/fuzz/fuzz_lua.lua — a mutation fuzzer for the Lua-side parsers (they take user text too):
-- the e-graph rule and pattern parser and the `when` compiler (lua/vyre/egraph/rules.lua,
-- match.lua: eg:rule, eg:run, eg:search on the reference backend) and the command line
-- (vyre.cli.main: argument parsing and file loading, in-process). libFuzzer cannot drive
-- them (they are Lua), so inputs are grown here from seeds by byte and token mutations
-- under a fixed seed (a finding replays with the same SEED and index).
--
--   lua5.4 tests/fuzz/fuzz_lua.lua TARGET N [SEED]      TARGET: egraph | cli | all
--
-- A finding is an outcome a user must never see: an error that is not a string, one that
-- does not start "vyre.<function>:" (or "vyre <command>:" for the CLI) or has no "Fix:",
-- a CLI exit status other than 0, 1 or 2, or one input taking over 5 s. It runs on the
-- regular build; the C parts it reaches (the text parser, the matching kernels on the
-- reference interpreter) are fuzzed under ASan and UBSan by scripts/fuzz.sh.
-- Prints "TARGET: N inputs, F findings" per target; exits 1 on any finding.
local vyre = require("vyre")

local target, n, seed = arg[1] or "all", tonumber(arg[2] or "1000"), tonumber(arg[3] or "1")
local rng_state = seed
-- A small LCG, not math.random: identical sequences on every Lua build.
local function rnd(k)
  rng_state = (rng_state * 6364136223846793005 + 1442695040888963407) & 0x7fffffffffffffff
  return (rng_state >> 33) % k + 1
end
local function pick(t) return t[rnd(#t)] end

local findings = 0
local outcomes = {} -- outcome -> count, printed per target (what the inputs reached)
local function count(k) outcomes[k] = (outcomes[k] or 0) + 1 end
local function finding(what, input)
  findings = findings + 1
  io.stderr:write(("FINDING %s\n--- input ---\n%s\n"):format(what, input))
end

-- An error is a string or a vyre.Error (lua/vyre/errors.lua: a table whose tostring is
-- the text); anything else (nil, a plain table) is a finding.
local function well_formed(err, prefix)
  if type(err) == "table" and getmetatable(err) and getmetatable(err).__tostring then
    err = tostring(err)
  end
  if type(err) ~= "string" then return false end
  local e = err:gsub("^[^\n]-:%d+: ", "")
  return e:find(prefix) == 1 and e:find("Fix:", 1, true) ~= nil
end

-- ---- mutations ----------------------------------------------------------------------

local TOKENS = { "(", ")", " ", "?a", "?b", "?x", "?", "F", "G", "Add", "Mul", "Num", "0",
  "1", "-1", "2147483648", "1e9", "0x10", "+", "*", "<", "==", "!=", ">=", "and", "or", "not",
  "%", "/", "\"", "\0", "\n", ";", "((((((((", "))))", "?_", "?a1", "Sym", "-", "3.5" }

local function mutate(s)
  for _ = 1, rnd(4) do
    local op, pos = rnd(5), rnd(#s + 1)
    if op == 1 then s = s:sub(1, pos - 1) .. pick(TOKENS) .. s:sub(pos)
    elseif op == 2 then s = s:sub(1, pos - 1) .. s:sub(pos + rnd(6))
    elseif op == 3 and #s > 0 then
      s = s:sub(1, pos - 1) .. string.char(rnd(256) - 1) .. s:sub(pos + 1)
    elseif op == 4 then
      local a = rnd(#s + 1); local b = a + rnd(12)
      s = s:sub(1, pos - 1) .. s:sub(a, b) .. s:sub(pos)
    else s = s:sub(1, pos - 1) .. string.rep("(F ", rnd(8)) .. s:sub(pos) end
  end
  return s
end

-- ---- e-graph rules, patterns, when ------------------------------------------------------

local PATS = { "(F ?a)", "(G ?a)", "(Add ?a ?b)", "(Mul ?a (Num 1))", "(Add ?a (Num 0))", "?a",
  "(F (Num ?x))", "(G (Num ?x))", "(Add (Mul ?a ?b) (Mul ?a ?c))", "(Num ?x)", "(Num 3)",
  "(Sym ?x)", "(F (F (F ?a)))" }
local WHENS = { "(< ?x 3)", "(and (== ?x ?y) (!= ?x 0))", "(or (< ?k 3) (>= (* ?k 2) 100))",
  "(> ?x 40)", "(not (== ?x 1))", "(< (+ ?x 1) (- ?x 1))", "(== (% ?x 2) 0)" }

local function egraph_case(be, i)
  -- Half the inputs unmutated on each side, so rules get past eg:rule and reach eg:run.
  local function maybe(t) return rnd(2) == 1 and pick(t) or mutate(pick(t)) end
  local lhs, rhs = maybe(PATS), maybe(PATS)
  local when = rnd(2) == 1 and maybe(WHENS) or nil
  local query = maybe(PATS)
  local input = ("lhs=%q rhs=%q when=%s query=%q"):format(lhs, rhs, when and ("%q"):format(when)
    or "nil", query)
  local eg = vyre.egraph(be)
  for name, arity in pairs({ Num = 0, Sym = 0, F = 1, G = 1, Add = 2, Mul = 2 }) do
    eg:op(name, arity)
  end
  for k = 0, 3 do
    local num = eg:leaf("Num", k)
    eg:add("F", num)
    eg:add("Add", num, eg:leaf("Num", k + 1))
  end
  local ok, err = pcall(eg.rule, eg, "r" .. i, lhs, rhs, when and { when = when } or nil)
  count(ok and "rule ok" or "rule refused")
  if not ok and not well_formed(err, "vyre%.[%w_.:]+: ") then
    finding("eg:rule raised a malformed error: " .. tostring(err), input)
  elseif ok and (i % 4 == 0 or os.getenv("VYRE_FUZZ_RUN_ALL")) then
    -- eg:run compiles and runs matching kernels (about a second on the reference
    -- backend): one accepted rule in four runs, the rest stop at eg:rule and eg:search.
    local t0 = os.clock()
    local rok, rerr = pcall(eg.run, eg, { iterations = 2, node_limit = 200 })
    count(rok and "run ok" or "run refused")
    if not rok and not well_formed(rerr, "vyre%.[%w_.:]+: ") then
      finding("eg:run raised a malformed error: " .. tostring(rerr), input)
    end
    if os.clock() - t0 > 5 then finding("eg:run took over 5 s", input) end
  end
  local qok, qerr = pcall(eg.search, eg, query)
  if not qok and not well_formed(qerr, "vyre%.[%w_.:]+: ") then
    finding("eg:search raised a malformed error: " .. tostring(qerr), input)
  end
end

-- ---- the command line ---------------------------------------------------------------

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))
local PROGRAM = "(program p (workgroup 64) (buffer v u32 read_write) (let i (gid x))"
  .. " (if (lt i (len v)) (then (store v i (add (load v i) 1u32)))))"
local WL = "(program w (workgroup 32) (worklist q u32) (push q (gid x)))"
local ARGS = { "check", "ptx", "run", "info", "help", "--help", "-h", "--version", "--sm", "90",
  "--sm=80", "--opt", "--no-opt", "--backend", "reference", "cuda", "-n", "16", "--n=99999999999",
  "v=zeros:8", "v=zeros:99999999999999", "v=1,2,3", "v=u32:1,2", "n=18446744073709551616",
  "n=0x1FFFFFFFFFFFFFFFF", "--", "-", "--json", "--quiet", "--grid", "2,1,1", "--print",
  "q=zeros:4", "--times", "3", "--steps", "0" }

local function cli_case(cli, i)
  local file = dir .. "/f" .. (i % 4) .. ".vyre"
  local fh = assert(io.open(file, "wb"))
  fh:write(rnd(3) == 1 and mutate(WL) or mutate(PROGRAM))
  fh:close()
  local argv = { pick({ "check", "ptx", "run", "info", "help", pick(ARGS) }) }
  for _ = 1, rnd(5) - 1 do
    local a = rnd(4) == 1 and file or pick(ARGS)
    if rnd(6) == 1 then a = mutate(a) end
    argv[#argv + 1] = a
  end
  if rnd(3) == 1 then argv[#argv + 1] = rnd(4) == 1 and dir or file end
  local out = {}
  local ctx = { out = function(s) out[#out + 1] = s end, err = function(s) out[#out + 1] = s end }
  local input = table.concat(argv, " ")
  local t0 = os.clock()
  local ok, rc = pcall(cli.main, argv, ctx)
  count(argv[1] .. " -> " .. tostring(rc))
  if not ok then
    finding("vyre.cli.main raised: " .. tostring(rc), input)
  elseif rc ~= 0 and rc ~= 1 and rc ~= 2 then
    finding("exit status " .. tostring(rc), input)
  elseif rc ~= 0 then
    local text = table.concat(out)
    -- A usage error (status 2) points at the command's --help instead of a Fix.
    local usage = rc == 2 and text:find("--help", 1, true)
    if not text:find("Fix:", 1, true) and not usage then
      finding("failed without a Fix: " .. text, input)
    end
  end
  if os.clock() - t0 > 5 then finding("took over 5 s", input) end
end

-- ---- main ---------------------------------------------------------------------------

local function go(name, fn)
  local f0 = findings
  outcomes = {}
  for i = 1, n do fn(i) end
  local keys = {}
  for k in pairs(outcomes) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return outcomes[a] > outcomes[b] end)
  local top = {}
  for i = 1, math.min(12, #keys) do top[i] = keys[i] .. " " .. outcomes[keys[i]] end
  print(("  outcomes: %s"):format(table.concat(top, ", ")))
  print(("%s: %d inputs, %d findings (seed %d)"):format(name, n, findings - f0, seed))
end

if target == "egraph" or target == "all" then
  local be = vyre.backend("reference")
  go("egraph", function(i) egraph_case(be, i) if i % 64 == 0 then collectgarbage() end end)
end
if target == "cli" or target == "all" then
  local cli = require("vyre.cli")
  go("cli", function(i) cli_case(cli, i) end)
end
os.execute("rm -rf '" .. dir .. "'")
os.exit(findings == 0 and 0 or 1)
