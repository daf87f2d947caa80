-- vyre.help.dsl — help text of the DSL (the builder k of a program body, expressions)
-- and of vyre.lib. Operators get their entry from OPS below plus the operator table
-- (core.ops(): operand class, types, result, Lua operators), so a new op without a line
-- here is caught by spec/62_help_spec.lua.
local M = {}

-- One line per operator of core.ops(), by its text-format name.
M.OPS = {
  add = "a + b (integers wrap around)",
  sub = "a - b (integers wrap around)",
  mul = "a * b (integers wrap around)",
  div = "a / b: integers truncate toward zero; x/0 is all ones (unsigned) or -1 (signed)",
  rem = "a % b, integers only: sign of a; x % 0 is x",
  ["and"] = "bitwise and (integers) or logical and (bool)",
  ["or"] = "bitwise or (integers) or logical or (bool)",
  xor = "bitwise xor (integers or bool)",
  shl = "a << b, the amount taken modulo the bit width",
  shr = "a >> b: arithmetic on signed types, logical on unsigned; amount modulo the width",
  eq = "a == b -> bool (any type; IEEE for floats)",
  ne = "a ~= b -> bool (true for NaN)",
  lt = "a < b -> bool",
  le = "a <= b -> bool",
  gt = "a > b -> bool",
  ge = "a >= b -> bool",
  min = "the smaller of a and b (floats: the non-NaN operand; -0 < +0)",
  max = "the larger of a and b (floats: the non-NaN operand; -0 < +0)",
  land = "logical and of two bools (Lua's `and` cannot build it)",
  lor = "logical or of two bools (Lua's `or` cannot build it)",
  mulhi = "the high half of the double-width product",
  neg = "-a (unsigned wraps)",
  ["not"] = "bitwise not of an integer",
  lnot = "logical not of a bool (Lua's `not` cannot build it)",
  abs = "|a| (identity on unsigned; MIN stays MIN)",
  sqrt = "square root, correctly rounded",
  rsqrt = "1 / sqrt(a), within the ULP bound of docs/ULP.md",
  floor = "round toward -infinity",
  ceil = "round toward +infinity",
  round = "round to nearest, half to even",
  trunc = "round toward zero",
  exp = "e^a (approximate, docs/ULP.md)",
  exp2 = "2^a (approximate)",
  log = "natural logarithm (approximate)",
  log2 = "base-2 logarithm (approximate)",
  sin = "sine (approximate)",
  cos = "cosine (approximate)",
  tanh = "hyperbolic tangent (approximate)",
  popcount = "number of one bits (result: the operand's type)",
  clz = "leading zero bits (clz(0) = the bit width)",
  ctz = "trailing zero bits (ctz(0) = the bit width)",
  brev = "the bits in reverse order",
}

M.ENTRIES = {
  ["Builder"] = [=[
k — the program builder that vyre.program passes to the body function
Declarations are fields: k.x[i] loads, k.x[i] = v stores, k.x:len(), k.a is a param.
Built-ins: k.gid.x, k.lid.y, k.wgid.z, k.wgsize.x, k.ngroups.x (u32 expressions).
Statements: let, var, set, when, for_, atomic, barrier, grid_barrier, converge, break_,
return_.]=],
  ["Builder:let"] = [=[
k:let([name,] e) -> variable
Binds e to a new variable (let in the text); also binds an atomic's old value:
k:let("old", k:atomic("add", k.sum, 0, v)).]=],
  ["Builder:var"] = [=[
k:var(name, init) -> variable
A variable that v:set(e) (or k:set(v, e)) assigns later.]=],
  ["Builder:set"] = [=[
k:set(v, e)
Assigns e to the variable v (same as v:set(e)).]=],
  ["Builder:when"] = [=[
k:when(cond, function() ... end [, function() ... end])
if cond then ... else ... (cond a bool expression: use :lt :eq :land ..., not < == and).]=],
  ["Builder:for_"] = [=[
k:for_(name, [type,] from, to [, step], function(v) ... end)
for v = from, to - 1, step: half-open; a step <= 0 runs no iteration. The loop variable's
type: the type name given (k:for_("j", "i32", 0, 5, fn); i32 u32 i64 u64), else the
type of a typed bound (an expression or vyre.lit("i32", 0)), else u32 (plain Lua
numbers). A typed bound of another type is an error at the loop.]=],
  ["Builder:atomic"] = [=[
k:atomic(op, buf, i, v [, desired]) -> pending old value
op: add sub min max and or xor exchange cas ("cas": v is the expected value). Bind the
old value with k:let(name, k:atomic(...)).]=],
  ["Builder:barrier"] = [=[
k:barrier()
Workgroup barrier (only in uniform control flow; the validator checks).]=],
  ["Builder:grid_barrier"] = [=[
k:grid_barrier()
Every invocation of the whole dispatch meets here, not only the workgroup (docs/GRID.md):
it ends a section, and variables declared before it are not visible after it. be:run and
k:launch run such programs (cooperative or host split on CUDA, be:grid_sync picks; the
sections in order on the reference); be:megakernel composes steps with them.]=],
  ["Builder:converge"] = [=[
k:converge(flag, max, function() ... end)
Sets flag[0] = 0, then repeats the body's statements in rounds while a round leaves
flag[0] non-zero and fewer than max (u32) rounds ran: an iterate-until-done loop on the
device (flag: a writable u32, i32 or bool buffer; max grid-uniform; k:rounds() gives the
rounds run). On a worklist, k:converge(k.frontier, max, fn): each round ends by advancing
it (the pushed items become current), and the loop stops after a round that pushed
nothing or overflowed it (reported after the run). docs/GRID.md.]=],
  ["Builder:break_"] = [=[
k:break_()
Leaves the innermost k:for_ loop.]=],
  ["Builder:return_"] = [=[
k:return_()
Ends this invocation.]=],
  ["Builder:load"] = [=[
k:load(buf, i) -> Expr
buf[i] (same as k.buf[i]); out of bounds reads a typed zero.]=],
  ["Builder:store"] = [=[
k:store(buf, i, v)
buf[i] = v (same as k.buf[i] = v); out of bounds is dropped.]=],
  ["Builder:push"] = [=[
k:push(wl, v)
Appends v (of the item type) to worklist wl's next-round items (same as k.wl:push(v);
vyre.worklist).]=],
  ["Builder:len"] = [=[
k:len(buf) -> Expr (u32)
The bound element count (same as k.buf:len()).]=],
  ["Builder:ballot"] = [=[
k:ballot(c) -> Expr (u32)
Bit j set when lane j of the subgroup has c true (docs/SUBGROUPS.md).]=],
  ["Builder:subgroup_size"] = [=[
k:subgroup_size() -> Expr (u32)
32, the subgroup (warp) width.]=],
  ["Builder:subgroup_lane"] = [=[
k:subgroup_lane() -> Expr (u32)
This invocation's lane in its subgroup.]=],
  ["Builder:gid"] = "k.gid.x | .y | .z -> Expr (u32)\nGlobal invocation index on an axis.",
  ["Builder:lid"] = "k.lid.x | .y | .z -> Expr (u32)\nIndex inside the workgroup.",
  ["Builder:wgid"] = "k.wgid.x | .y | .z -> Expr (u32)\nWorkgroup index.",
  ["Builder:wgsize"] = "k.wgsize.x | .y | .z -> Expr (u32)\nWorkgroup size.",
  ["Builder:ngroups"] = "k.ngroups.x | .y | .z -> Expr (u32)\nWorkgroups in the grid.",

  ["Expr"] = [=[
e — a typed DSL expression (e.type, e.text)
Lua operators + - * / // % & | ~ << >> and unary - ~ build ops; comparisons and logic are
methods (:lt :le :gt :ge :eq :ne :land :lor :lnot) because Lua's < == and or not give
plain booleans. A Lua number next to an expression takes its type. help("sqrt") etc.]=],
  ["Expr:cast"] = "e:cast(type) -> Expr\nSame as vyre.cast(type, e).",
  ["Expr:bitcast"] = "e:bitcast(type) -> Expr\nSame as vyre.bitcast(type, e).",
  ["Expr:set"] = "v:set(e)\nAssigns e to the variable v (made by k:var or k:let).",
  ["Expr:shuffle"] = "v:shuffle(lane) -> Expr\nv of the given lane of the subgroup "
    .. "(an absent lane gives one's own v).",
  ["Expr:shuffle_xor"] = "v:shuffle_xor(mask) -> Expr\nv of lane (own lane xor mask).",
  ["Expr:shuffle_up"] = "v:shuffle_up(delta) -> Expr\nv of lane (own lane - delta).",
  ["Expr:shuffle_down"] = "v:shuffle_down(delta) -> Expr\nv of lane (own lane + delta).",
  ["Expr:subgroup_reduce"] = "v:subgroup_reduce(op) -> Expr\nop (add min max and or xor) over "
    .. "the subgroup's lanes; the same bits in every lane.",
  ["Expr:subgroup_scan"] = "v:subgroup_scan(op) -> Expr\nInclusive scan of op over the lanes.",
  ["Expr:match_any"] = "v:match_any() -> Expr (u32)\nBit j set when lane j of the subgroup "
    .. "is present and its v has the same bits as this lane's (floats: -0 and +0 differ, "
    .. "equal NaN bits match; docs/SUBGROUPS.md). match.any.sync on the GPU.",
  ["Expr:subgroup_all"] = "c:subgroup_all() -> Expr (bool)\nc is true in every present lane.",
  ["Expr:subgroup_any"] = "c:subgroup_any() -> Expr (bool)\nc is true in some present lane.",

  ["vyre.lib"] = [=[
require("vyre.lib") (also vyre.lib) -> GPU primitives written as vyre programs
reduce, scan, compact, sort, argsort, histogram, fill, iota, copy, segmented_reduce,
segmented_scan, unique, run_length, reduce_by_key (each also as f_timed -> value, timing,
and as lib.steps.f -> steps), scratch, release, kernel_cache, geometry. They work on Buffers
of either backend with bit-identical results (docs/LIB.md).]=],
  ["vyre.lib.reduce"] = "lib.reduce(be, buf [, op]) -> Lua scalar\nop add (default), min "
    .. "or max over every element. lib.reduce(g, bufs [, op]): over a vyre.Group's buffers "
    .. "as one array (docs/MULTIGPU.md).",
  ["vyre.lib.scan"] = "lib.scan(be, src, dst [, op] [, {exclusive = bool}]) -> dst\n"
    .. "Inclusive (or exclusive) scan; dst may be src. lib.scan(g, src, dst ...): the scan "
    .. "of a vyre.Group's buffers in rank order as one array (docs/MULTIGPU.md).",
  ["vyre.lib.compact"] = "lib.compact(be, src, flags | \"pred over x\", dst) -> count\n"
    .. "Stable compaction of the elements whose flag (or predicate) holds.",
  ["vyre.lib.sort"] = [=[
lib.sort(be, keys [, values] [, {scratch =, bits = {lo, hi}, order = "total" | "numpy"}]) -> keys
Stable LSD radix sort in place; keys u32 i32 f32 u64 i64 f64, values of the same six types.
Float order, by default ("total"): -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN (NaNs by
sign and payload, bits kept). order = "numpy": every NaN last whatever its sign and payload,
-0 equal to +0 (both kept in input order). bits = {lo, hi}: orders by bits lo..hi-1 of the
key's order image only (u32/u64: the key; i32/i64: sign bit flipped; floats: the image
above), stably; {0, 32} or {0, 64} is the full sort. lib.sort(g, keys [, values]): a
stable sample sort of a vyre.Group's buffers as one array, each rank keeping its count
(docs/MULTIGPU.md).]=],
  ["vyre.lib.argsort"] = "lib.argsort(be, keys [, {bits, order, out = u32 Buffer}]) -> u32 "
    .. "Buffer\nThe 0-based source positions of keys in stable sorted order (lib.sort's "
    .. "orders and options); keys are left as they are.",
  ["vyre.lib.unique"] = "lib.unique(be, src, dst) -> count\nOn sorted input: the first "
    .. "element of each run of equal neighbours (equal bits), in order, into dst.",
  ["vyre.lib.run_length"] = "lib.run_length(be, src, values_out, counts_out) -> count\nOn "
    .. "sorted input: each run's value and its length (u32), in order.",
  ["vyre.lib.reduce_by_key"] = "lib.reduce_by_key(be, keys, values, keys_out, values_out "
    .. "[, op]) -> count\nOn sorted keys: each run's key and the left fold (add, min, max) "
    .. "of its values.",
  ["vyre.lib.scratch"] = "lib.scratch(be) -> Scratch\nScratch buffers for steps forms "
    .. "(opts.scratch): grown when bigger steps are built, never while they run; keep it "
    .. "alive with the steps; s:free() frees its buffers.",
  ["vyre.lib.steps"] = [=[
lib.steps.NAME(be, ... [, opts]) -> steps
The steps ({kernel, args, opts}) of lib.NAME's call, for be:sequence, be:graph and
be:megakernel: nothing read back (opts.out takes a scalar result or a count), nothing
allocated when they run (opts.scratch = lib.scratch(be)), and opts.count = u32 Buffer
(all but the segmented ones) works on the first count[0] elements, a number known only on
the device.]=],
  ["vyre.lib.steps.reduce"] = "lib.steps.reduce(be, buf [, op], {out = Buffer [, count, "
    .. "scratch]}) -> steps\nWrites the reduction to out[0].",
  ["vyre.lib.steps.scan"] = "lib.steps.scan(be, src, dst [, op] [, {exclusive, count, "
    .. "scratch}]) -> steps\nlib.scan's launches.",
  ["vyre.lib.steps.compact"] = "lib.steps.compact(be, src, keep, dst, {out = u32 Buffer "
    .. "[, count, scratch]}) -> steps\nWrites the kept count to out[0].",
  ["vyre.lib.steps.sort"] = "lib.steps.sort(be, keys [, values] [, {scratch, bits, order, "
    .. "count}]) -> steps\nlib.sort's launches (opts.scratch: a lib.scratch or {keys, values}).",
  ["vyre.lib.steps.argsort"] = "lib.steps.argsort(be, keys, {out = u32 Buffer [, bits, "
    .. "order, scratch, count]}) -> steps\nWrites the positions to out.",
  ["vyre.lib.steps.histogram"] = "lib.steps.histogram(be, src, bins, lo, hi, {out = u32 "
    .. "Buffer [, count, scratch]}) -> steps\nZeroes out and counts into it.",
  ["vyre.lib.steps.fill"] = "lib.steps.fill(be, buf, value [, {count, scratch}]) -> steps\n"
    .. "lib.fill's launch.",
  ["vyre.lib.steps.iota"] = "lib.steps.iota(be, buf [, start [, step]] [, {count, scratch}]) "
    .. "-> steps\nlib.iota's launch.",
  ["vyre.lib.steps.copy"] = "lib.steps.copy(be, src, dst [, {count, scratch}]) -> steps\n"
    .. "lib.copy's launches (memmove semantics).",
  ["vyre.lib.steps.segmented_reduce"] = "lib.steps.segmented_reduce(be, values, offsets, out "
    .. "[, op] [, {scratch}]) -> steps\nlib.segmented_reduce's launch.",
  ["vyre.lib.steps.segmented_scan"] = "lib.steps.segmented_scan(be, values, offsets, dst "
    .. "[, op] [, {exclusive, scratch}]) -> steps\nlib.segmented_scan's launch.",
  ["vyre.lib.steps.unique"] = "lib.steps.unique(be, src, dst, {out = u32 Buffer [, count, "
    .. "scratch]}) -> steps\nWrites the count to out[0].",
  ["vyre.lib.steps.run_length"] = "lib.steps.run_length(be, src, values_out, counts_out, "
    .. "{out = u32 Buffer [, count, scratch]}) -> steps\nWrites the count to out[0].",
  ["vyre.lib.steps.reduce_by_key"] = "lib.steps.reduce_by_key(be, keys, values, keys_out, "
    .. "values_out [, op], {out = u32 Buffer [, count, scratch]}) -> steps\nWrites the "
    .. "count to out[0].",
  ["vyre.lib.steps.expand"] = [=[
lib.steps.expand(be, {rowptr =, col =, frontier = wl, visit = "text" [, prologue, decls,
  args, guard, layout, stats, name, scratch, threads, chunk]}) -> steps
One worklist round over a CSR graph (u32 row starts rowptr, u32 neighbours col): for
each current item of the u32 Worklist `frontier`, prologue (text, once per item: $V the
item, $I its index in the round; read only) and, per entry of its row, visit ($V, $I,
$E the entry, $W = col[$E]; it may (push frontier x)). @name is a local of the text
(a layout may put the texts in twice); decls declares the other buffers and params the
texts use, args binds them; guard: a grid-uniform condition without which the round
does nothing. layout "item" (an invocation per item), "subgroup" (a subgroup per item
of degree >= 32), "edges" (degrees scanned on the device, then equal chunks of the
round's entries: 3 or more steps); nil: vyre.policy.choose_expansion(stats or
vyre.policy.degree_stats(rowptr)). Every step carries expansion = {layout, reason};
be:plan copies it into plan.steps[i].expansion and plan.expansion, and tostring(plan)
prints it. threads/chunk: the edges layout's invocations and most entries per chunk
(16). Bad options raise "vyre.lib.steps.expand: ... Fix: ...". docs/GRID.md.]=],
  ["vyre.lib.histogram"] = "lib.histogram(be, src, bins, lo, hi [, {out = Buffer}]) -> "
    .. "u32 Buffer\nCounts of the values in bins equal steps of [lo, hi).",
  ["vyre.lib.fill"] = "lib.fill(be, buf, value) -> buf\nEvery element = value.",
  ["vyre.lib.iota"] = "lib.iota(be, buf [, start [, step]]) -> buf\nbuf[i] = start + i * step.",
  ["vyre.lib.copy"] = "lib.copy(be, src, dst) -> dst\nCopies #src elements.",
  ["vyre.lib.segmented_reduce"] = "lib.segmented_reduce(be, values, offsets, out [, op]) -> "
    .. "out\nOne reduction per segment (CSR offsets, u32, nsegments + 1).",
  ["vyre.lib.segmented_scan"] = "lib.segmented_scan(be, values, offsets, dst [, op] "
    .. "[, {exclusive}]) -> dst\nA scan restarting at each segment (CSR offsets); segments "
    .. "over 4096 elements are split into chunks\nover the whole grid, in a fixed order "
    .. "(docs/LIB.md): the same bits on every device.",
  ["vyre.lib.release"] = "lib.release(be)\nFrees the scratch buffers and kernels kept for be.",
  ["vyre.lib.kernel_cache"] = "lib.kernel_cache(be [, {limit = n}]) -> {entries, limit, hits, "
    .. "misses, evictions}\nvyre.lib keeps at most limit compiled kernels per backend "
    .. "(default 1024, $VYRE_LIB_KERNEL_CACHE),\nthe least recently used dropped first (freed "
    .. "once nothing holds them); opts.limit sets it.",
  ["vyre.lib.geometry"] = "lib.geometry -> {workgroup, items, tile, max_groups}\nThe fixed "
    .. "launch geometry (it decides the bits of float sums).",
}

return M
