-- vyre.egraph — e-graphs resident on a backend, rebuilt to congruence closure on the
-- device by vyre programs (docs/EGRAPH.md). The same programs run on the reference
-- interpreter, so a GPU rebuild can be checked against it bit for bit; the policy
-- (staging, rounds, growth, extraction's fixed point) is this Lua.
--
--   local eg = vyre.egraph(be)                 -- be: vyre.backend(...) of either kind
--   local Add = eg:op("Add", 2)                -- op id; arity 0 makes a leaf op
--   local a = eg:leaf("Num", 7)                -- leaf with an integer payload
--   local s = eg:add("Add", a, a)              -- e-class id of a new e-node
--   local first, n = eg:add_many("Add", ids)   -- n = #ids / 2 e-nodes, ids first..first+n-1
--   eg:union(a, s); eg:union_many(pairs)       -- pairs: flat ids (table, Array, Buffer)
--   local rounds, unions = eg:rebuild()        -- congruence closure on the device
--   eg:find(s)  eg:size()  eg:classes()  eg:nodes(c)  eg:dot()
--   local buf, spans = eg:image()              -- the device image (the original system's layout)
--   local eg2 = vyre.egraph.from_image(be, buf, spans)
--   local term, text, cost = eg:extract(s, {Add = 1, Num = 1})
--
-- Ids: every added e-node gets a fresh e-class id (0, 1, 2, ... in the order of the
-- calls). Adding a node equal to an existing one is not looked up at once: rebuild finds
-- it congruent and unites the two, so find(id) is then the older id. The canonical id of
-- an e-class is the smallest id in it, on both backends and whatever the GPU's timing.
local Err = require("vyre.errors")
local S = require("vyre.egraph.store")
local R = require("vyre.egraph.rebuild")
local image = require("vyre.egraph.image")
local extract = require("vyre.egraph.extract")
local rules = require("vyre.egraph.rules")
local run = require("vyre.egraph.run")
local query = require("vyre.egraph.query")
local analysis = require("vyre.egraph.analysis")
local explain = require("vyre.egraph.explain")
local payload = require("vyre.egraph.payload")

local EGraph = {}
EGraph.__index = EGraph
EGraph.__name = "vyre.EGraph"

local function check_self(eg, fname)
  if getmetatable(eg) ~= EGraph then
    Err.wrong_self(eg, "vyre.EGraph", "vyre.EGraph:" .. fname, Err.outside("egraph"))
  end
  if eg.freed then S.raise(fname, "the e-graph was freed", "use a live e-graph", "freed") end
end

local function new(be, fname, opts)
  local mt = getmetatable(be)
  if type(mt) ~= "table" or rawget(mt, "__name") ~= "vyre.Backend" then
    S.raise(fname or "vyre.egraph", "argument 1 must be a vyre.Backend, got "
      .. (S.mt_name(be) or type(be)), "pass vyre.backend() or vyre.backend(\"reference\")")
  end
  if be.freed then
    S.raise(fname or "vyre.egraph", "the backend was freed", "use a live backend")
  end
  local eg = setmetatable({
    be = be,
    reg = { names = {}, arity = {}, byname = {} },
    nids = 0, nrows = 0, nwords = 0,
    dev = { nids = 0, nrows = 0, nwords = 0 },
    pend = { op = {}, len = {}, off = {}, words = {} },
    punion = {},
    merges = 0,
    clean = true,
    leaf_dirty = true,
  }, EGraph)
  eg.stat = be:buffer("u32", 64)
  if opts ~= nil then
    if type(opts) ~= "table" then
      S.raise(fname or "vyre.egraph", "argument 2 (opts) must be a table",
        "pass {explanations = true} or nothing")
    end
    for k in pairs(opts) do
      if k ~= "explanations" then
        S.raise(fname or "vyre.egraph", ("unknown option '%s'"):format(tostring(k)),
          "the only option is explanations = true")
      end
    end
    if opts.explanations ~= nil and type(opts.explanations) ~= "boolean" then
      S.raise(fname or "vyre.egraph", ("explanations must be a boolean, got %s"):format(
        type(opts.explanations)), "pass {explanations = true} or leave it out")
    end
    if opts.explanations then explain.enable(eg) end
  end
  require("vyre.egraph.precompile").base(eg) -- its fixed kernels, in one batch
  return eg
end

--- eg:op(name, arity [, ptype]) -> op id (registers it; the same name again returns the
--- same id). ptype, for a leaf op: the payload type "i64" (default), "f64" or "sym".
function EGraph:op(name, arity, ptype)
  check_self(self, "op")
  return S.op(self, name, arity, ptype)
end

--- eg:symbol(x) -> the symbol number of string x (interning it), or the string of number x.
function EGraph:symbol(x)
  check_self(self, "symbol")
  if type(x) == "string" then return payload.intern(self, x) end
  local s = payload.name(self, x)
  if s == nil then
    S.raise("symbol", ("%s is not a symbol number of this e-graph"):format(tostring(x)),
      "pass a string to intern it, or a number eg:symbol(string) returned")
  end
  return s
end

--- eg:ops() -> {{name =, arity =}, ...} in id order (id = index - 1).
function EGraph:ops()
  check_self(self, "ops")
  local out = {}
  for i, n in ipairs(self.reg.names) do out[i] = { name = n, arity = self.reg.arity[i] } end
  return out
end

--- eg:add(op, c1, ..., cN) -> the new e-node's e-class id (op by name or id; N = arity;
--- an op of arity 0 adds a leaf with payload 0).
function EGraph:add(op, ...)
  check_self(self, "add")
  local id = S.opid(self, "add", op)
  local arity = self.reg.arity[id + 1]
  local n = select("#", ...)
  if arity == 0 then
    if n ~= 0 then
      S.raise("add", ("'%s' is a leaf op (arity 0) but %d children were given"):format(
        self.reg.names[id + 1], n), "add leaves with eg:leaf(op, payload)")
    end
    return S.stage(self, id, { 0, 0 })
  end
  if n ~= arity then
    S.raise("add", ("'%s' takes %d children, got %d"):format(self.reg.names[id + 1], arity, n),
      ("pass %d e-class ids"):format(arity))
  end
  local words = { ... }
  for k = 1, n do S.check_id(self, "add", words[k], ("child %d"):format(k)) end
  return S.stage(self, id, words)
end

--- eg:leaf(op, value) -> e-class id of a leaf (op of arity 0) carrying value: an integer,
--- a number (f64 ops) or a string (sym ops).
function EGraph:leaf(op, value)
  check_self(self, "leaf")
  local id = S.opid(self, "leaf", op)
  if self.reg.arity[id + 1] ~= 0 then
    S.raise("leaf", ("'%s' has arity %d, not 0"):format(self.reg.names[id + 1],
      self.reg.arity[id + 1]), "register leaf ops with arity 0, e.g. eg:op(\"Num\", 0)")
  end
  local bits, want = payload.encode(self, id, value)
  if not bits then
    S.raise("leaf", ("the payload must be %s (op '%s'), got %s"):format(want,
      self.reg.names[id + 1], tostring(value)), ("pass a value of the op's payload type "
      .. "(%s; eg:op(name, 0, \"i64\" | \"f64\" | \"sym\"))"):format(payload.type_of(self, id)))
  end
  return S.stage(self, id, { bits & 0xffffffff, (bits >> 32) & 0xffffffff })
end

--- eg:add_many(op, children) -> first id, count. For an op of arity N >= 1, children
--- holds N ids per new e-node (flat); for a leaf op, one integer payload per leaf. A
--- table, a vyre.Array or a vyre.Buffer of the e-graph's backend (kept on the device).
function EGraph:add_many(op, children)
  check_self(self, "add_many")
  local id = S.opid(self, "add_many", op)
  if self.reg.arity[id + 1] == 0 then return S.add_leaves(self, "add_many", id, children) end
  return S.add_many(self, "add_many", id, children)
end

--- eg:union(a, b): records that a and b are equal (applied at the next device step).
function EGraph:union(a, b)
  check_self(self, "union")
  S.check_id(self, "union", a, "argument 1")
  S.check_id(self, "union", b, "argument 2")
  if a ~= b then
    local u = self.punion
    u[#u + 1], u[#u + 2] = a, b
    S.changed(self)
  end
end

--- eg:union_many(pairs) -> how many e-class merges it made. pairs: flat ids
--- {a1, b1, a2, b2, ...} (table, u32 Array or Buffer) or a table of {a, b}.
function EGraph:union_many(pairs)
  check_self(self, "union_many")
  return S.union_many(self, "union_many", pairs)
end

--- eg:find(c) -> the canonical id of c's e-class.
function EGraph:find(c)
  check_self(self, "find")
  S.check_id(self, "find", c, "argument 1")
  S.settle(self)
  return self.parent:download({ first = c + 1, count = 1 })[1]
end

--- eg:size() -> e-nodes, e-classes (e-classes that have e-nodes; before a rebuild,
--- e-nodes still counts duplicates).
function EGraph:size()
  check_self(self, "size")
  if not self.nclasses then self.nclasses = R.count_classes(self, "size") end
  return self.nrows, self.nclasses
end

--- eg:rebuild() -> rounds, unions, report: restores congruence on the device.
function EGraph:rebuild()
  check_self(self, "rebuild")
  local rounds, unions, report = R.rebuild(self, "rebuild")
  return rounds, unions, report
end

function EGraph:classes()
  check_self(self, "classes")
  return extract.classes(self, "classes")
end

function EGraph:nodes(c)
  check_self(self, "nodes")
  return extract.nodes(self, "nodes", c)
end

function EGraph:dot()
  check_self(self, "dot")
  return extract.dot(self, "dot")
end

--- eg:image([opts]) -> u32 Buffer, span table (see vyre.egraph.image); opts.analyses =
--- false leaves the analyses' declarations out.
function EGraph:image(opts)
  check_self(self, "image")
  return image.image(self, "image", opts)
end

--- eg:extract(roots, cost [, opts]) -> term, text, cost [, dag report]: cost is an op
--- table, a function(name, arity) or cost expressions (vyre.egraph.costfn); opts.dag
--- extracts with shared sub-terms counted once (vyre.egraph.dag_extract).
function EGraph:extract(roots, cost, opts)
  check_self(self, "extract")
  return extract.extract(self, "extract", roots, cost, opts)
end

--- eg:buffers() -> the device columns as they are now (settled): {parent, row_class,
--- row_op, row_off, row_len, children, isleaf} and the counts {ids, rows, words}, for
--- kernels written against the layout (e-matching).
function EGraph:buffers()
  check_self(self, "buffers")
  S.settle(self)
  return { parent = self.parent, row_class = self.row_class, row_op = self.row_op,
    row_off = self.row_off, row_len = self.row_len, children = self.children,
    isleaf = self.isleaf }, { ids = self.dev.nids, rows = self.dev.nrows,
    words = self.dev.nwords }
end

--- eg:rule(name, lhs, rhs [, opts]) -> rule index: a rewrite rule in S-expressions
--- (vyre.egraph.rules): lhs a pattern or a list of patterns, rhs a pattern or a list of
--- {term, term} unions; opts.when a device predicate, opts.guard a Lua function.
function EGraph:rule(name, lhs, rhs, opts)
  check_self(self, "rule")
  local r = rules.compile(self, "rule", name, lhs, rhs, opts)
  if opts and opts.ruleset ~= nil then
    if type(opts.ruleset) ~= "string" or not (self.rulesets and self.rulesets[opts.ruleset])
      and opts.ruleset ~= run.DEFAULT then
      S.raise("rule", ("unknown ruleset %s"):format(type(opts.ruleset) == "string"
        and ("'" .. opts.ruleset .. "'") or type(opts.ruleset)),
        "declare it first with eg:ruleset(\"name\")")
    end
    r.ruleset = opts.ruleset
  end
  self.rule_list = self.rule_list or {}
  for _, old in ipairs(self.rule_list) do
    if old.name == name then
      S.raise("rule", ("a rule named '%s' exists already"):format(name),
        "give each rule its own name")
    end
  end
  self.rule_list[#self.rule_list + 1] = r
  r.xindex = #self.rule_list
  return #self.rule_list
end

--- eg:ruleset(name) -> name: declares a named rule set (egglog's ruleset) for
--- eg:rule(..., {ruleset = name}) and eg:run{ruleset = name} or a schedule.
function EGraph:ruleset(name)
  check_self(self, "ruleset")
  if type(name) ~= "string" or not name:match("^[%a_][%w_%-%.]*$") then
    S.raise("ruleset", ("a ruleset name must be a symbol string, got %s"):format(
      type(name) == "string" and ("'" .. name .. "'") or type(name)),
      "use a name such as \"fold\" (letters, digits, _ - .)")
  end
  self.rulesets = self.rulesets or {}
  self.rulesets[name] = true
  return name
end

--- eg:run{iterations =, node_limit =, time_limit =, scheduler =, semi_naive =, rollback =,
--- ruleset =, until_ = | schedule =} -> report: equality saturation (search on the
--- device, apply, rebuild) with a record per iteration (vyre.egraph.run).
function EGraph:run(opts)
  check_self(self, "run")
  return run.run(self, "run", opts)
end

--- eg:search(pattern) -> list of substitutions {root =, ?var names = values}.
function EGraph:search(pattern)
  check_self(self, "search")
  return query.search(self, "search", pattern)
end

--- eg:lookup(term) -> the term's e-class id, or nil when the e-graph does not hold it.
function EGraph:lookup(term)
  check_self(self, "lookup")
  return (query.lookup(self, "lookup", term))
end

--- eg:delete(term) -> e-class id | nil: egglog's delete (removes the term's e-node).
function EGraph:delete(term)
  check_self(self, "delete")
  return query.delete(self, "delete", term)
end

--- eg:subsume(term) -> e-class id | nil: egglog's subsume (the term's e-node is no
--- longer matched or extracted; lookups still find it).
function EGraph:subsume(term)
  check_self(self, "subsume")
  return query.subsume(self, "subsume", term)
end

--- eg:analysis("const", {leaf =, fold =, modify =, prune =}): the built-in constant-folding
--- e-class analysis; eg:analysis(name, {type =, bottom =, make =, merge =, modify =}): a
--- user analysis (vyre.egraph.uanalysis). Both are computed on the device.
function EGraph:analysis(name, spec)
  check_self(self, "analysis")
  -- recorded as data for eg:image (vyre.egraph.image_analyses)
  require("vyre.egraph.image_analyses").declare(self, "analysis", name, spec)
end

--- eg:value(name, c) -> c's e-class's value in user analysis name (vyre.egraph.uanalysis).
function EGraph:value(name, c)
  check_self(self, "value")
  return require("vyre.egraph.uanalysis").value(self, "value", name, c)
end

--- eg:const(c) -> value | nil, "none" | "one" | "conflict": c's e-class's constant.
function EGraph:const(c)
  check_self(self, "const")
  return analysis.value(self, "const", c)
end

--- eg:equiv(t1, t2) -> true when both terms are in the e-graph, in one e-class.
function EGraph:equiv(t1, t2)
  check_self(self, "equiv")
  return query.equiv(self, "equiv", t1, t2)
end

--- eg:explain(t1, t2) -> proof: a list of rewrite steps {before =, rule =, direction =,
--- after =, at =} from t1 to t2 (terms as text or ids); needs {explanations = true}.
function EGraph:explain(t1, t2)
  check_self(self, "explain")
  return explain.explain(self, "explain", t1, t2)
end

--- eg:free(): frees the device buffers now (idempotent).
function EGraph:free()
  if self.freed then return end
  S.free(self)
  self.freed = true
end

function EGraph:__tostring()
  if self.freed then return "vyre.EGraph(freed)" end
  return ("vyre.EGraph(%s, %d e-nodes, %d ids, %d ops)"):format(self.be.name, self.nrows,
    self.nids, #self.reg.names)
end

EGraph.__close = EGraph.free

local M = setmetatable({}, {
  __call = function(_, be, opts) return new(be, "vyre.egraph", opts) end,
})
M.EGraph = EGraph
--- Schedulers for eg:run: egg's backoff (the default) and run-every-rule.
M.backoff = run.backoff
M.simple = run.simple

--- vyre.egraph.from_image(be, image, spans) -> e-graph.
function M.from_image(be, img, spans)
  return image.from_image(new, be, img, spans)
end

--- The row signature (the original system's hash) of op id and words, computed in Lua.
M.signature = require("vyre.egraph.kernels").signature

return M
