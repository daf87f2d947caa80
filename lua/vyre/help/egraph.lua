-- vyre.help.egraph — help text of vyre.egraph and the EGraph type (lua/vyre/egraph.lua,
-- docs/EGRAPH.md). Same keys and form as vyre/help/api.lua: the call on the first line,
-- then what it does; spec/62_help_spec.lua fails when a function or method has none.
return {
  ["vyre.egraph"] = [=[
vyre.egraph(be [, {explanations = true}]) -> EGraph
An empty e-graph whose e-nodes, e-classes and union-find live in buffers of be (a
vyre.Backend of either kind); its rebuild runs there as vyre programs, bit-identical on
the reference interpreter and CUDA. With explanations = true it also logs, on the
device, every id's term and the reason of every union, for eg:explain. Raises
"vyre.egraph: ..." for a non-backend, a freed one or an unknown option. docs/EGRAPH.md.]=],
  ["vyre.egraph.from_image"] = [=[
vyre.egraph.from_image(be, image, spans) -> EGraph
A new e-graph holding the e-nodes of an image from eg:image(): image is a u32 Buffer of
be, a u32 Array or a binary string, spans the span table eg:image() returned. The image
is checked on the device; bad spans or rows raise and create nothing. Reads format
versions 1 (no spans.version: i64 leaves only), 2 (payload types, spans.symbols) and 3
(spans.analyses: the analyses are declared again, in their order, before the columns are
allocated; a corrupt or cut-short list raises); a newer version raises. Rules are not in
the image: declare them again. The analyses' values are computed on the first read.]=],
  ["vyre.egraph.backoff"] = [=[
vyre.egraph.backoff([{match_limit = 1000, ban_length = 5}]) -> scheduler
egg's BackoffScheduler for eg:run (the default): a rule whose matches exceed
match_limit << times_banned is banned for ban_length << times_banned iterations. A
callable table; sched.can_stop(iteration) is egg's: true when nothing is banned, else it
moves every ban forward and returns false and the rules unbanned (eg:run calls it when an
iteration changes nothing). Bans are by rule name and the e-graph's iteration count, so
one scheduler may be reused across eg:run calls.]=],
  ["vyre.egraph.simple"] = [=[
vyre.egraph.simple() -> scheduler
A scheduler for eg:run that runs every rule every iteration (egglog's run).]=],
  ["vyre.egraph.signature"] = [=[
vyre.egraph.signature(op, words) -> u32
The row signature of the original system (op id and child words hashed with mix/rotl32),
computed in Lua: the value the device rebuild sorts rows by.]=],

  ["EGraph"] = [=[
vyre.EGraph — an e-graph resident on a backend (vyre.egraph(be)); docs/EGRAPH.md.
Ids: every added e-node gets a fresh e-class id (0, 1, 2, ...); a duplicate is found by
the next rebuild, and an e-class's canonical id is its smallest. Misuse raises
"vyre.EGraph:<method>: what. Fix: how" and changes nothing.]=],
  ["EGraph:op"] = [=[
eg:op(name, arity [, ptype]) -> op id
Registers an operator (ids 0, 1, 2, ... in order); the same name and arity again give
the same id. Arity 0 makes a leaf op; ptype is its payload type: "i64" (default), "f64"
(a double: literals (Num 1.5), arithmetic in f64) or "sym" (an interned string:
(Var x)). docs/EGRAPH.md, "Payloads".]=],
  ["EGraph:symbol"] = [=[
eg:symbol(x) -> number | string
The symbol number of string x (interning it: 0, 1, 2, ... in first-seen order), or the
string of symbol number x. A "sym" leaf's payload is its symbol number.]=],
  ["EGraph:value"] = [=[
eg:value(name, c) -> value
c's e-class's value in user analysis name (an integer, a float or a boolean, by the
analysis's type; for type "const": value | nil, "none" | "one" | "conflict"; for type
"set": a list of its words);
rebuilds and recomputes first (the values are kept until the graph changes). Raises
when the e-graph has no analysis of that name.]=],
  ["EGraph:ops"] = [=[
eg:ops() -> {{name =, arity =}, ...}
The registered operators in id order (id = index - 1).]=],
  ["EGraph:add"] = [=[
eg:add(op, c1, ..., cN) -> e-class id
Adds an e-node (op by name or id, N = its arity) with a fresh e-class id; staged on the
host until the next device step. A leaf op with no children gets payload 0.]=],
  ["EGraph:leaf"] = [=[
eg:leaf(op, value) -> e-class id
Adds a leaf of an arity-0 op carrying a payload of the op's type: an integer (i64), a
number (f64; -0.0 is stored as 0.0, NaN refused) or a string (sym, interned).]=],
  ["EGraph:add_many"] = [=[
eg:add_many(op, children) -> first id, count
Adds count e-nodes in bulk: N ids per e-node for an op of arity N >= 1 (flat), one
payload per leaf for a leaf op. children: a table, a vyre.Array or a vyre.Buffer of the
e-graph's backend (read on the device). Ids are first .. first + count - 1.]=],
  ["EGraph:union"] = [=[
eg:union(a, b)
Records that e-classes a and b are equal (staged; applied with the next device step).]=],
  ["EGraph:union_many"] = [=[
eg:union_many(pairs) -> merges
Unites in bulk: flat ids {a1, b1, a2, b2, ...} (table, u32 Array or Buffer) or a table of
{a, b}; checked on the device (unknown ids, odd length raise), then united there.]=],
  ["EGraph:find"] = [=[
eg:find(c) -> canonical id
The canonical id of c's e-class: the smallest id in it.]=],
  ["EGraph:size"] = [=[
eg:size() -> e-nodes, e-classes
Counts (e-classes that have e-nodes); before a rebuild, duplicates still count.]=],
  ["EGraph:rebuild"] = [=[
eg:rebuild() -> rounds, unions, report
Restores congruence closure on the device; unions counts the merges congruence made;
report[i] = {rows, unions, duplicates} per round, plus wall_ns, device_ns, sequences.]=],
  ["EGraph:classes"] = [=[
eg:classes() -> {id, ...}
The canonical e-class ids that have e-nodes, ascending.]=],
  ["EGraph:nodes"] = [=[
eg:nodes(c) -> {{op = name, child ids...} | {op = name, payload = n}, ...}
The e-nodes of c's e-class, by row.]=],
  ["EGraph:dot"] = [=[
eg:dot() -> Graphviz text
One cluster per e-class, edges from e-nodes to their child classes (at most 10^5
e-nodes).]=],
  ["EGraph:image"] = [=[
eg:image([opts]) -> u32 Buffer, spans
The device image of the canonical graph (the original system's layout) in a new buffer, with
the span table (offset, bytes, count of each part) that vyre.egraph.from_image reads. The
table (format version 3) also holds each op's payload type, the interned strings in
symbol-number order, and every analysis's declaration as data (spans.analyses: {name =,
spec =} in declaration order, spans.nanalyses), so leaves and analyses load back as they
were. A declaration holding a function (or other non-data) raises naming it;
opts.analyses = false leaves the analyses out (spans.analyses = false).]=],
  ["EGraph:extract"] = [=[
eg:extract(roots, cost [, opts]) -> term, text, cost [, report] | {{term =, text =, cost =}, ...}
The cheapest term of each root (an id, or a list of ids) by a fixed point on the device;
cost: a table op name -> cost or a function (name, arity) -> cost, integers in
[1, 2^40]; or cost expressions (egg's CostFunction), one string for every op or a table
op name -> string: integers, payload, arity, sum, max, c1 .. c8 (the children's costs),
+ - * max min abs, (if test a b) with < <= > >= == != and or not, e.g. "(+ 1 max)" for
depth; payload is an integer (an f64 leaf's value truncated toward zero, a sym leaf's
symbol number). opts.dag = true counts shared sub-terms once (op costs only): greedy on the
device, exact branch and bound on the host up to opts.exact_limit classes (1000) and
opts.budget search nodes (10^5); the report (4th result, or the list's .dag) has tree,
tree_dag, greedy, exact, dag, method, optimal, classes. Rebuilds first if needed; the
result does not depend on timing.]=],
  ["EGraph:buffers"] = [=[
eg:buffers() -> {parent, row_class, row_op, row_off, row_len, children, isleaf},
                {ids, rows, words}
The device columns as they are now (settled) and their counts, for programs written
against the layout (e-matching).]=],
  ["EGraph:rule"] = [=[
eg:rule(name, lhs, rhs [, {when = "(!= ?x 0)", guard = function(s) ... end,
        ruleset = "name", subsume = true}]) -> index
A rewrite rule in S-expressions: lhs a pattern (a bare ?a matches every e-class) or a
list of patterns, rhs a pattern, a list of {term, term} unions or a Lua applier
function(s, ctx) (host path, slower: returns terms or ids to unite with s.root; ctx has
value, const, add, leaf, union; docs/EGRAPH.md, "Lua appliers"); when a device
predicate (reading analyses as (const ?x), (const? ?x), (value name ?x)), guard a Lua
function of the substitution, ruleset a set declared by eg:ruleset (default
"default"), subsume marks each applied match's e-node subsumed (egglog's :subsume; one
pattern, no guard). A second rule of the same name raises.]=],
  ["EGraph:run"] = [=[
eg:run{iterations = 30, node_limit = 10000, time_limit = 5, scheduler = backoff,
       semi_naive = true, rollback = true, ruleset = "default", until_ = {t1, t2},
       apply_rows = N}
eg:run{schedule = S, ...limits} -> report
Equality saturation: search every allowed rule of the ruleset on the device, apply,
rebuild, per iteration; report[i] = {iteration (counted by the e-graph across runs),
ruleset, found (matches the scheduler saw), matches (applied), nodes, classes, seconds,
fast_forward?, rolled_back?, interrupted?}, report.stop ("iterations", "saturated", "until",
"node_limit", "time_limit", "schedule"). Limits are checked between rules and rebuild
rounds; an iteration passing node_limit is rolled back (rollback = false: finish it),
one passing time_limit stops there and keeps what it applied (interrupted?). With no
rules it rebuilds. Schedules: "name" | {run = "name", times = n, until_ = {t1, t2}} |
{seq = {...}} | {saturate = S} | {repeat_ = n, S1, S2, ...}. apply_rows caps the rows
staged between rebuilds (default: the device's share; report[i].pieces, .segments say
when an iteration went in pieces). docs/EGRAPH.md.]=],
  ["EGraph:ruleset"] = [=[
eg:ruleset(name) -> name
Declares a named rule set (egglog's ruleset). Rules join it with eg:rule(name, lhs, rhs,
{ruleset = name}); eg:run{ruleset = name} or a schedule runs it. Rules without the
option are in "default", the set a plain eg:run runs.]=],
  ["EGraph:search"] = [=[
eg:search(pattern) -> {{root = e-class, var = value, ...}, ...}
The matches of a pattern (a rule's left-hand side syntax) on the rebuilt e-graph,
without rewriting: class variables as canonical e-class ids, payload variables as
Lua values of their leaf's type (integers, floats, symbol strings). Rebuilds first if
the graph changed.]=],
  ["EGraph:lookup"] = [=[
eg:lookup(term) -> e-class id | nil
The canonical e-class of a ground term (an S-expression without ?variables, e.g.
"(Add (Num 1) (Num 2))"), or nil when the e-graph does not hold it; adds nothing. An
integer is taken as an e-class id and gives its canonical id.]=],
  ["EGraph:delete"] = [=[
eg:delete(term) -> e-class id | nil
egglog's delete: removes the e-node of a ground term from the e-graph at once (the
columns are compacted on the device). Its e-class id stays, and so do e-nodes that have
it as a child; a rule may derive the term again. nil when the term is absent.]=],
  ["EGraph:subsume"] = [=[
eg:subsume(term) -> e-class id | nil
egglog's subsume: marks the e-node of a ground term subsumed. Rules no longer match it
and extraction skips it; eg:lookup and eg:equiv still find it, and it keeps its place in
congruence (a re-derived duplicate stays subsumed). nil when the term is absent (nothing
is added). A rule marks its matched e-nodes with eg:rule(..., {subsume = true}).]=],
  ["EGraph:analysis"] = [=[
eg:analysis("const", {leaf = "Num", fold = {Add = "+", Sub = "-", Mul = "*", Neg = "neg"},
            modify = true, prune = false})
eg:analysis(name, {type = "i64" | "f64" | "bool" | "const", of =, bottom =,
            make = {Op = expr, ...}, merge = expr, modify = {leaf =, when =, payload =,
            prune =} or a list of them})
"const" is the built-in constant-folding analysis, computed on the device: each e-class
is none, one value or conflict; a leaf of op `leaf` is its payload, a folded op of
constant children is the arithmetic (i64 wrapping, or f64 when the leaf op's payload is
f64, where "/" folds by a non-zero divisor); merge is the join. Rules read it in `when`
as (const ?x) and (const? ?x); modify = true adds the constant's leaf to every class with
one value (egg's constant folding), prune = true then keeps only the leaves of those
classes (egg's pruning). Any other name declares a user analysis: make gives an
e-node's value from payload and (child k), merge (over a, b) must be a join with bottom
its unit, written in the expression language of docs/EGRAPH.md ("User analyses"); type
"const" is the none/one/conflict lattice with the built-in join (none, (one x), (one? c),
(val c); when reads (has name ?x));
computed on the device to a fixed point on every rebuilt graph; `when` reads it as
(value name ?x), Lua appliers as ctx.value(name, c); modify adds (leaf payload(v)) to
every class where when(v) holds. A make may read an analysis declared before it:
(get other k) its value of child k, (get other self) of the e-node's own class
(declaration order is the dependency order, so reads cannot cycle): a value, a "const"
read with (one? c) and (val c), or a "set" read with (member S k), (size S), (empty S),
(subset S T), (disjoint S T) (a set's make may use it as a set).
type = "set", words = "auto" (the default) or N (1..64) is a set of symbols in i64 words
a class (the union is the join, the empty set bottom; make: (bit payload) of a "sym"
leaf, (child k), (get other k), empty, bor, band, bnot); "auto" words follow the interned
symbols (the next power of two of symbols / 64, up to 4096 symbols); eg:value gives the
list of its current words; a fixed N raises naming the words needed once the e-graph
has more symbols. `when` tests a set as (member name ?x k), (empty name ?x),
(size name ?x), (subset name ?x ?y), (disjoint name ?x ?y); modify's v is the set.]=],
  ["EGraph:const"] = [=[
eg:const(c) -> value | nil, "none" | "one" | "conflict"
The constant analysis of c's e-class (rebuilds and recomputes it first). Raises when the
e-graph has no analysis.]=],
  ["EGraph:equiv"] = [=[
eg:equiv(t1, t2) -> boolean
egglog's check: true when both terms (or e-class ids) are in the e-graph and in one
e-class; false when one is absent or they differ.]=],
  ["EGraph:explain"] = [=[
eg:explain(t1, t2) -> {{before =, rule =, direction =, after =, at =}, ...}
egg's explain_equivalence on an e-graph made with {explanations = true}: a proof that
t1 and t2 (term texts or ids) are equal, as rewrite steps of the whole term; rule is a
rule's name ("union" for eg:union, "analysis" for the constant analysis), direction
"=>" or "<=", at the position (child indexes from the root). Terms not in the e-graph
are added first, as egg does. Raises when the terms are not equal.]=],
  ["EGraph:free"] = [=[
eg:free()
Frees the device buffers now (idempotent; <close> calls it too).]=],
}
