-- bench/eqsat/math.lua — egg's `math` workload (the 23 rules and 7 start terms of
-- egglog's tests/math-microbenchmark.egg, as in bench/egraph/egglog_math.py) for
-- vyre.egraph's equality saturation. Also a module: require("bench.eqsat.math") gives
-- {rules, terms, setup(eg)} for the specs.
local M = {}

M.OPS = { { "Diff", 2 }, { "Integral", 2 }, { "Add", 2 }, { "Sub", 2 }, { "Mul", 2 },
  { "Div", 2 }, { "Pow", 2 }, { "Ln", 1 }, { "Sqrt", 1 }, { "Sin", 1 }, { "Cos", 1 },
  { "Const", 0 }, { "Var", 0 } }

M.RULES = {
  { "comm-add", "(Add ?a ?b)", "(Add ?b ?a)" },
  { "comm-mul", "(Mul ?a ?b)", "(Mul ?b ?a)" },
  { "assoc-add", "(Add ?a (Add ?b ?c))", "(Add (Add ?a ?b) ?c)" },
  { "assoc-mul", "(Mul ?a (Mul ?b ?c))", "(Mul (Mul ?a ?b) ?c)" },
  { "sub-canon", "(Sub ?a ?b)", "(Add ?a (Mul (Const -1) ?b))" },
  { "zero-add", "(Add ?a (Const 0))", "?a" },
  { "zero-mul", "(Mul ?a (Const 0))", "(Const 0)" },
  { "one-mul", "(Mul ?a (Const 1))", "?a" },
  { "cancel-sub", "(Sub ?a ?a)", "(Const 0)" },
  { "distribute", "(Mul ?a (Add ?b ?c))", "(Add (Mul ?a ?b) (Mul ?a ?c))" },
  { "factor", "(Add (Mul ?a ?b) (Mul ?a ?c))", "(Mul ?a (Add ?b ?c))" },
  { "pow-mul", "(Mul (Pow ?a ?b) (Pow ?a ?c))", "(Pow ?a (Add ?b ?c))" },
  { "pow1", "(Pow ?x (Const 1))", "?x" },
  { "pow2", "(Pow ?x (Const 2))", "(Mul ?x ?x)" },
  { "d-add", "(Diff ?x (Add ?a ?b))", "(Add (Diff ?x ?a) (Diff ?x ?b))" },
  { "d-mul", "(Diff ?x (Mul ?a ?b))", "(Add (Mul ?a (Diff ?x ?b)) (Mul ?b (Diff ?x ?a)))" },
  { "d-sin", "(Diff ?x (Sin ?x))", "(Cos ?x)" },
  { "d-cos", "(Diff ?x (Cos ?x))", "(Mul (Const -1) (Sin ?x))" },
  { "i-one", "(Integral (Const 1) ?x)", "?x" },
  { "i-cos", "(Integral (Cos ?x) ?x)", "(Sin ?x)" },
  { "i-sin", "(Integral (Sin ?x) ?x)", "(Mul (Const -1) (Cos ?x))" },
  { "i-sum", "(Integral (Add ?f ?g) ?x)", "(Add (Integral ?f ?x) (Integral ?g ?x))" },
  { "i-dif", "(Integral (Sub ?f ?g) ?x)", "(Sub (Integral ?f ?x) (Integral ?g ?x))" },
  { "i-parts", "(Integral (Mul ?a ?b) ?x)",
    "(Sub (Mul ?a (Integral ?b ?x)) (Integral (Mul (Diff ?x ?a) (Integral ?b ?x)) ?x))" },
}

-- Var payloads: x = 1, y = 2, five = 3.
M.TERMS = {
  "(Integral (Ln (Var 1)) (Var 1))",
  "(Integral (Add (Var 1) (Cos (Var 1))) (Var 1))",
  "(Integral (Mul (Cos (Var 1)) (Var 1)) (Var 1))",
  "(Diff (Var 1) (Add (Const 1) (Mul (Const 2) (Var 1))))",
  "(Diff (Var 1) (Sub (Pow (Var 1) (Const 3)) (Mul (Const 7) (Pow (Var 1) (Const 2)))))",
  "(Add (Mul (Var 2) (Add (Var 1) (Var 2))) (Sub (Add (Var 1) (Const 2)) (Add (Var 1) (Var 1))))",
  "(Div (Const 1) (Sub (Div (Add (Const 1) (Sqrt (Var 3))) (Const 2)) "
    .. "(Div (Sub (Const 1) (Sqrt (Var 3))) (Const 2))))",
}

--- Adds a term (S-expression text) to anything with op/add/leaf (an e-graph or the
--- oracle wrapper); returns its id.
function M.add_term(g, text)
  local rules = require("vyre.egraph.rules")
  local function go(s)
    if #s == 2 and type(s[2]) == "string" and math.tointeger(tonumber(s[2])) then
      return g:leaf(s[1], math.tointeger(tonumber(s[2])))
    end
    local kids = {}
    for k = 2, #s do kids[k - 1] = go(s[k]) end
    return g:add(s[1], table.unpack(kids))
  end
  return go(rules.sexp("add_term", text))
end

function M.setup(eg)
  for _, o in ipairs(M.OPS) do eg:op(o[1], o[2]) end
  for _, r in ipairs(M.RULES) do eg:rule(r[1], r[2], r[3]) end
  local roots = {}
  for i, t in ipairs(M.TERMS) do roots[i] = M.add_term(eg, t) end
  return roots
end

local function main(backend, iters, search)
  package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
  local vyre = require("vyre")
  local be = vyre.backend(backend)
  local eg = vyre.egraph(be)
  M.setup(eg)
  eg:rebuild()
  local n0, c0 = eg:size()
  print(("# vyre.egraph math workload on %s (%s), scheduler simple, %s search"):format(
    be.name, tostring(be), search))
  print(("0\t%d\t%d"):format(n0, c0))
  print("iter\tenodes\teclasses\tmatches\tseconds\tsearch_s\tapply_s\trebuild_s")
  -- one iteration per call, so each line is out before the next iteration starts
  local sched = vyre.egraph.simple()
  local stop = "iterations"
  for i = 1, iters do
    local rep = eg:run({ iterations = 1, node_limit = 1e12, time_limit = 1e12,
      scheduler = sched, semi_naive = search ~= "naive" })
    local r = rep[1]
    local m = 0
    for _, v in pairs(r.matches) do m = m + v end
    print(("%d\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f"):format(i, r.nodes, r.classes, m,
      r.seconds, r.search_s, r.apply_s, r.rebuild_s))
    io.stdout:flush()
    if rep.stop == "saturated" then
      stop = "saturated"
      break
    end
  end
  print("# stop: " .. stop)
end

if not pcall(debug.getlocal, 4, 1) then
  -- arg 3: "naive" searches every match, else semi-naive (the default)
  main(arg[1] or "reference", tonumber(arg[2]) or 6, arg[3] == "naive" and "naive" or "semi-naive")
end
return M
