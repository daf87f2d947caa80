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

-- The fixed cost per size: the mean seconds of the iterations (from 2: iteration 1
-- compiles the kernels) that started below each power of ten of e-nodes.
local function fixed_cost(rows)
  local lines = {}
  for _, lim in ipairs({ 1e3, 1e4, 1e5 }) do
    local sum, k = 0, 0
    for _, r in ipairs(rows) do
      if r.iter > 1 and r.start < lim then sum, k = sum + r.seconds, k + 1 end
    end
    if k > 0 then
      lines[#lines + 1] = ("# fixed cost: iterations 2.. that start below %d e-nodes: mean %.3f ms "
        .. "per iteration (%d iterations)"):format(math.tointeger(lim), 1e3 * sum / k, k)
    end
  end
  return lines
end

-- The run next to egglog 14 on one CPU thread (results/cpu-egglog.txt, taken on the
-- CPU machine with bench/egraph/egglog_math.py, where egglog runs): per iteration the
-- e-nodes of both (they must be equal) and the seconds of both. "#" lines, after the
-- table, so readers of the table (specs 43, 106) see nothing new.
local EGGLOG = "bench/eqsat/results/cpu-egglog.txt"
local function beside_egglog(rows)
  local f = io.open(EGGLOG)
  if not f then return { "# egglog: " .. EGGLOG .. " not found (run from the repository)" } end
  local eg = {}
  for line in f:lines() do
    local it, n, s = line:match("^(%d+)\t(%d+)\t([%d.]+)")
    if it then eg[tonumber(it)] = { nodes = tonumber(n), s = tonumber(s) } end
  end
  f:close()
  local out = { "# beside egglog 14, one CPU thread (" .. EGGLOG .. ")",
    "# iter\tenodes\tegglog_enodes\tsame\tvyre_s\tegglog_s\tegglog/vyre" }
  for _, r in ipairs(rows) do
    local e = eg[r.iter]
    if e then
      out[#out + 1] = ("# %d\t%d\t%d\t%s\t%.4f\t%.3f\t%s"):format(r.iter, r.nodes, e.nodes,
        r.nodes == e.nodes and "yes" or "NO", r.seconds, e.s,
        e.s > 0 and ("%.2f"):format(e.s / r.seconds) or "-")
    end
  end
  return out
end

-- One whole run in this process (--whole): iterations 1..iters as one eg:run, then one
-- line with the times since the script started and the backend's compile counters.
local function whole(backend, iters, t_script)
  local vyre = require("vyre")
  local now = vyre.core.now_ns
  local t_req = now()
  local be = vyre.backend(backend)
  local t_be = now()
  local eg = vyre.egraph(be)
  M.setup(eg)
  eg:rebuild()
  local t_setup = now()
  local rep = eg:run({ iterations = iters, node_limit = 1e12, time_limit = 1e12,
    scheduler = vyre.egraph.simple() })
  local t_end = now()
  local st = be:stats()
  -- then the PTX emitted and read by program key, and where opening the device went
  -- (be:stats().open_*_ns, seconds; dlopen and cuInit are the process's first CUDA call's)
  local function s(name) return (st[name] or 0) / 1e9 end
  print(("whole\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%d\t%d\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f"
    .. "\t%.4f\t%.4f\t%.4f"):format(#rep, rep[#rep].nodes,
    (t_end - t_script) / 1e9, (t_be - t_req) / 1e9, (t_setup - t_be) / 1e9,
    (t_end - t_setup) / 1e9, st.jit_compiles or 0, st.disk_hits or 0, st.ptx_misses or 0,
    st.ptx_emits or 0, st.disk_program_hits or 0, s("open_ns"), s("open_dlopen_ns"),
    s("open_init_ns"), s("open_ctx_ns"), s("open_stream_ns"), s("open_probe_ns"),
    s("module_load_ns")))
end

-- --cold: the whole run in a new process, first with an empty VYRE_CACHE_DIR, then
-- twice with the cache it filled; each process's wall time is measured from here, around
-- its start and exit (Lua, the library, the CUDA context, the kernels, iterations).
local function cold(backend, iters)
  local vyre = require("vyre")
  local now = vyre.core.now_ns
  local dir = io.popen("mktemp -d"):read("l")
  local lua = arg[-1] or "lua5.4"
  print(("# math workload, whole run of iterations 1..%d on %s in a new process; "
    .. "VYRE_CACHE_DIR=%s"):format(iters, backend, dir))
  print("# cache\tprocess_s\titers\tenodes\tin_script_s\tbackend_s\tsetup_s\titerations_s"
    .. "\tjit_compiles\tdisk_hits\tptx_misses\tptx_emits\tdisk_program_hits\topen_s\topen_dlopen_s"
    .. "\topen_init_s\topen_ctx_s\topen_stream_s\topen_probe_s\tmodule_load_s")
  for _, which in ipairs({ "empty", "warm", "warm" }) do
    local cmd = ("VYRE_CACHE_DIR='%s' %s bench/eqsat/math.lua %s %d --whole"):format(dir, lua,
      backend, iters)
    local t0 = now()
    local f = io.popen(cmd)
    local out = f:read("a")
    local ok = f:close()
    local t1 = now()
    local line = out:match("whole\t([^\n]*)")
    if not ok or not line then
      print(("# %s: the child failed:\n%s"):format(which, out))
    else
      print(("%s\t%.4f\t%s"):format(which, (t1 - t0) / 1e9, line))
    end
    io.stdout:flush()
  end
  os.execute(("rm -rf '%s'"):format(dir))
end

local function main(backend, iters, search, apply_rows)
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
  -- live and peak: the bytes of the backend's buffers after the iteration and the most
  -- they held at once so far (the e-graph's columns, scratch and substitutions)
  print("iter\tenodes\teclasses\tmatches\tseconds\tsearch_s\tapply_s\trebuild_s"
    .. "\tlive_MB\tpeak_MB\tpieces")
  -- one iteration per call, so each line is out before the next iteration starts
  local sched = vyre.egraph.simple()
  local stop = "iterations"
  local rows = {}
  for i = 1, iters do
    local start = eg:size()
    local rep = eg:run({ iterations = 1, node_limit = 1e12, time_limit = 1e12,
      scheduler = sched, semi_naive = search ~= "naive", apply_rows = apply_rows })
    local r = rep[1]
    local m = 0
    for _, v in pairs(r.matches) do m = m + v end
    local st = be:stats()
    print(("%d\t%d\t%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t%.1f\t%.1f\t%s"):format(i, r.nodes,
      r.classes, m, r.seconds, r.search_s, r.apply_s, r.rebuild_s,
      (st.live_buffer_bytes or 0) / 2 ^ 20, (st.peak_buffer_bytes or 0) / 2 ^ 20,
      r.pieces and ("%d (%d segments)"):format(r.pieces, r.segments) or "1"))
    io.stdout:flush()
    rows[#rows + 1] = { iter = i, start = start, seconds = r.seconds, nodes = r.nodes }
    if rep.stop == "saturated" then
      stop = "saturated"
      break
    end
  end
  print("# stop: " .. stop)
  for _, l in ipairs(fixed_cost(rows)) do print(l) end
  for _, l in ipairs(beside_egglog(rows)) do print(l) end
end

if not pcall(debug.getlocal, 4, 1) then
  package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
  local t_script = require("vyre").core.now_ns()
  local flags = {}
  for k = 3, #arg do flags[arg[k]] = true end
  local backend, iters = arg[1] or "reference", tonumber(arg[2]) or 6
  if flags["--cold"] then
    cold(backend, iters)
  elseif flags["--whole"] then
    whole(backend, iters, t_script)
  else
    -- "naive" searches every match, else semi-naive (the default)
    -- --apply-rows=N: at most N staged rows between rebuilds (eg:run's apply_rows)
    local apply_rows
    for k = 3, #arg do
      local v = arg[k]:match("^%-%-apply%-rows=(%d+)$")
      if v then apply_rows = tonumber(v) end
    end
    main(backend, iters, flags.naive and "naive" or "semi-naive", apply_rows)
  end
end
return M
