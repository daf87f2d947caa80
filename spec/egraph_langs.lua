-- spec/egraph_langs.lua — the languages of egg's tests/lambda.rs and tests/math.rs written
-- for vyre.egraph (read for facts: the ops, the rules, the conditions; spec 97 ports the
-- tests). Lambda: i64 Num and Bool leaves, interned Sym leaves, a "const" analysis over
-- Num and Bool (tagged) and a free-variable analysis whose value is a 64-bit set of
-- symbols (bit = symbol number mod 64: an over-approximation, so capture avoidance may
-- rename a binder that did not need it, never the other way). egg's if-elim rule
-- (ConditionEqual) is left out. Math: f64 Const leaves, Sym leaves, the constant
-- analysis with f64 folding (egg's ConstantFold) and an is_sym analysis.
local vyre = require("vyre")

local X = {}

X.LAMBDA_OPS = { { "Num", 0 }, { "Bool", 0 }, { "Sym", 0, "sym" }, { "Var", 1 }, { "Add", 2 },
  { "Eq", 2 }, { "App", 2 }, { "Lam", 2 }, { "Let", 3 }, { "Fix", 2 }, { "If", 3 } }
function X.lambda_graph(be)
  local eg = vyre.egraph(be)
  for _, o in ipairs(X.LAMBDA_OPS) do eg:op(o[1], o[2], o[3]) end
  -- egg's constant: a Num or a Bool (Add folds Nums, = folds two constants to a Bool),
  -- one "const" analysis over tagged values: Num n is 2n, Bool b is 2b + 1; modify adds
  -- the Num or the Bool leaf by the tag
  local nums = "(and (one? (child 0)) (one? (child 1)) (== (band (val (child 0)) 1) 0) "
    .. "(== (band (val (child 1)) 1) 0))"
  eg:analysis("lc", { type = "const", make = { Num = "(shl payload 1)",
    Bool = "(bor (shl payload 1) 1)",
    Add = "(if " .. nums .. " (+ (val (child 0)) (val (child 1))) none)",
    Eq = "(if (and (one? (child 0)) (one? (child 1))) "
      .. "(if (== (val (child 0)) (val (child 1))) 3 1) none)" },
    modify = { { leaf = "Num", when = "(and (one? v) (== (band (val v) 1) 0))",
      payload = "(sar (val v) 1)" },
      { leaf = "Bool", when = "(and (one? v) (== (band (val v) 1) 1))",
        payload = "(sar (val v) 1)" } } })
  eg:analysis("fv", { type = "i64", bottom = -1, merge = "(band a b)", make = {
    Num = "0", Bool = "0", Sym = "(bit payload)", Var = "(child 0)",
    Add = "(bor (child 0) (child 1))", Eq = "(bor (child 0) (child 1))",
    App = "(bor (child 0) (child 1))", Lam = "(band (child 1) (bnot (child 0)))",
    Fix = "(band (child 1) (bnot (child 0)))",
    Let = "(bor (child 1) (band (child 2) (bnot (child 0))))",
    If = "(bor (child 0) (bor (child 1) (child 2)))" } })
  local R = {
    { "if-true", "(If (Bool 1) ?then ?else)", "?then" },
    { "if-false", "(If (Bool 0) ?then ?else)", "?else" },
    { "add-comm", "(Add ?a ?b)", "(Add ?b ?a)" },
    { "add-assoc", "(Add (Add ?a ?b) ?c)", "(Add ?a (Add ?b ?c))" },
    { "eq-comm", "(Eq ?a ?b)", "(Eq ?b ?a)" },
    { "fix", "(Fix ?v ?e)", "(Let ?v (Fix ?v ?e) ?e)" },
    { "beta", "(App (Lam ?v ?body) ?e)", "(Let ?v ?e ?body)" },
    { "let-app", "(Let ?v ?e (App ?a ?b))", "(App (Let ?v ?e ?a) (Let ?v ?e ?b))" },
    { "let-add", "(Let ?v ?e (Add ?a ?b))", "(Add (Let ?v ?e ?a) (Let ?v ?e ?b))" },
    { "let-eq", "(Let ?v ?e (Eq ?a ?b))", "(Eq (Let ?v ?e ?a) (Let ?v ?e ?b))" },
    { "let-const", "(Let ?v ?e ?c)", "?c", { when = "(has lc ?c)" } },
    { "let-if", "(Let ?v ?e (If ?cond ?then ?else))",
      "(If (Let ?v ?e ?cond) (Let ?v ?e ?then) (Let ?v ?e ?else))" },
    { "let-var-same", "(Let ?v1 ?e (Var ?v1))", "?e" },
    { "let-var-diff", "(Let ?v1 ?e (Var ?v2))", "(Var ?v2)", { when = "(!= ?v1 ?v2)" } },
    { "let-lam-same", "(Let ?v1 ?e (Lam ?v1 ?body))", "(Lam ?v1 ?body)" },
    { "let-lam-diff", "(Let ?v1 ?e (Lam ?v2 ?body))", function(s, ctx)
      if ctx.value("fv", s.e) & ctx.value("fv", s.v2) == 0 then
        return "(Lam ?v2 (Let ?v1 ?e ?body))"
      end
      local fresh = ctx.leaf("Sym", "_" .. s.root)
      return "(Lam ?fresh (Let ?v1 ?e (Let ?v2 (Var ?fresh) ?body)))", { fresh = fresh }
    end, { when = "(!= ?v1 ?v2)" } },
  }
  for _, r in ipairs(R) do eg:rule(r[1], r[2], r[3], r[4]) end
  return eg
end
-- egg's lambda syntax to vyre's: (lam x b) (let x e b) (fix x e) (var x) numbers, true/false
function X.lambda_term(eg, text)
  local sx = require("vyre.egraph.rules").sexp("term", text)
  local names = { lam = "Lam", let = "Let", fix = "Fix", app = "App", ["+"] = "Add",
    ["="] = "Eq", ["if"] = "If" }
  local function go(x)
    if type(x) == "string" then
      if x == "true" or x == "false" then return eg:leaf("Bool", x == "true" and 1 or 0) end
      return eg:leaf("Num", math.tointeger(tonumber(x)))
    end
    if x[1] == "var" then return eg:add("Var", eg:leaf("Sym", x[2])) end
    local op = names[x[1]]
    local kids = {}
    for k = 2, #x do
      kids[k - 1] = (k == 2 and (op == "Lam" or op == "Let" or op == "Fix"))
        and eg:leaf("Sym", x[k]) or go(x[k])
    end
    return eg:add(op, table.unpack(kids))
  end
  return go(sx)
end

X.MATH_OPS = { { "Diff", 2 }, { "Integral", 2 }, { "Add", 2 }, { "Sub", 2 }, { "Mul", 2 },
  { "Div", 2 }, { "Pow", 2 }, { "Ln", 1 }, { "Sqrt", 1 }, { "Sin", 1 }, { "Cos", 1 },
  { "Const", 0, "f64" }, { "Sym", 0, "sym" } }
local NZ = "(or (not (const? ?%s)) (!= (const ?%s) 0))"
local function nz(v) return NZ:format(v, v) end
X.MATH_RULES = {
  { "comm-add", "(Add ?a ?b)", "(Add ?b ?a)" },
  { "comm-mul", "(Mul ?a ?b)", "(Mul ?b ?a)" },
  { "assoc-add", "(Add ?a (Add ?b ?c))", "(Add (Add ?a ?b) ?c)" },
  { "assoc-mul", "(Mul ?a (Mul ?b ?c))", "(Mul (Mul ?a ?b) ?c)" },
  { "sub-canon", "(Sub ?a ?b)", "(Add ?a (Mul (Const -1) ?b))" },
  { "div-canon", "(Div ?a ?b)", "(Mul ?a (Pow ?b (Const -1)))", nz("b") },
  { "zero-add", "(Add ?a (Const 0))", "?a" },
  { "zero-mul", "(Mul ?a (Const 0))", "(Const 0)" },
  { "one-mul", "(Mul ?a (Const 1))", "?a" },
  { "add-zero", "?a", "(Add ?a (Const 0))" },
  { "mul-one", "?a", "(Mul ?a (Const 1))" },
  { "cancel-sub", "(Sub ?a ?a)", "(Const 0)" },
  { "cancel-div", "(Div ?a ?a)", "(Const 1)", nz("a") },
  { "distribute", "(Mul ?a (Add ?b ?c))", "(Add (Mul ?a ?b) (Mul ?a ?c))" },
  { "factor", "(Add (Mul ?a ?b) (Mul ?a ?c))", "(Mul ?a (Add ?b ?c))" },
  { "pow-mul", "(Mul (Pow ?a ?b) (Pow ?a ?c))", "(Pow ?a (Add ?b ?c))" },
  { "pow0", "(Pow ?x (Const 0))", "(Const 1)", nz("x") },
  { "pow1", "(Pow ?x (Const 1))", "?x" },
  { "pow2", "(Pow ?x (Const 2))", "(Mul ?x ?x)" },
  { "pow-recip", "(Pow ?x (Const -1))", "(Div (Const 1) ?x)", nz("x") },
  { "recip-mul-div", "(Mul ?x (Div (Const 1) ?x))", "(Const 1)", nz("x") },
  { "d-variable", "(Diff ?x ?x)", "(Const 1)", "(value sym ?x)" },
  { "d-constant", "(Diff ?x ?c)", "(Const 0)",
    "(and (value sym ?x) (!= ?c ?x) (or (const? ?c) (value sym ?c)))" },
  { "d-add", "(Diff ?x (Add ?a ?b))", "(Add (Diff ?x ?a) (Diff ?x ?b))" },
  { "d-mul", "(Diff ?x (Mul ?a ?b))", "(Add (Mul ?a (Diff ?x ?b)) (Mul ?b (Diff ?x ?a)))" },
  { "d-sin", "(Diff ?x (Sin ?x))", "(Cos ?x)" },
  { "d-cos", "(Diff ?x (Cos ?x))", "(Mul (Const -1) (Sin ?x))" },
  { "d-ln", "(Diff ?x (Ln ?x))", "(Div (Const 1) ?x)", nz("x") },
  { "d-power", "(Diff ?x (Pow ?f ?g))",
    "(Mul (Pow ?f ?g) (Add (Mul (Diff ?x ?f) (Div ?g ?f)) (Mul (Diff ?x ?g) (Ln ?f))))",
    "(and " .. nz("f") .. " " .. nz("g") .. ")" },
  { "i-one", "(Integral (Const 1) ?x)", "?x" },
  { "i-power-const", "(Integral (Pow ?x ?c) ?x)",
    "(Div (Pow ?x (Add ?c (Const 1))) (Add ?c (Const 1)))", "(const? ?c)" },
  { "i-cos", "(Integral (Cos ?x) ?x)", "(Sin ?x)" },
  { "i-sin", "(Integral (Sin ?x) ?x)", "(Mul (Const -1) (Cos ?x))" },
  { "i-sum", "(Integral (Add ?f ?g) ?x)", "(Add (Integral ?f ?x) (Integral ?g ?x))" },
  { "i-dif", "(Integral (Sub ?f ?g) ?x)", "(Sub (Integral ?f ?x) (Integral ?g ?x))" },
  { "i-parts", "(Integral (Mul ?a ?b) ?x)",
    "(Sub (Mul ?a (Integral ?b ?x)) (Integral (Mul (Diff ?x ?a) (Integral ?b ?x)) ?x))" },
}
local NAMES = { d = "Diff", i = "Integral", ["+"] = "Add", ["-"] = "Sub", ["*"] = "Mul",
  ["/"] = "Div", pow = "Pow", ln = "Ln", sqrt = "Sqrt", sin = "Sin", cos = "Cos" }
function X.math_graph(be, prune)
  local eg = vyre.egraph(be)
  for _, o in ipairs(X.MATH_OPS) do eg:op(o[1], o[2], o[3]) end
  eg:analysis("const", { leaf = "Const", fold = { Add = "+", Sub = "-", Mul = "*", Div = "/" },
    modify = true, prune = prune ~= false })
  eg:analysis("sym", { type = "bool", make = { Sym = "true" }, merge = "(or a b)" })
  for _, r in ipairs(X.MATH_RULES) do eg:rule(r[1], r[2], r[3], r[4] and { when = r[4] } or nil) end
  return eg
end
-- egg's syntax: (d x (pow x 3)), numbers are constants, other atoms symbols
function X.math_term(eg, text)
  local sx = require("vyre.egraph.rules").sexp("term", text)
  local function go(x)
    if type(x) == "string" then
      if tonumber(x) then return eg:leaf("Const", tonumber(x) + 0.0) end
      return eg:leaf("Sym", x)
    end
    local kids = {}
    for k = 2, #x do kids[k - 1] = go(x[k]) end
    return eg:add(NAMES[x[1]], table.unpack(kids))
  end
  return go(sx)
end

return X
