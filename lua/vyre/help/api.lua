-- vyre.help.api — help text of the module functions and the userdata types (one entry
-- per public function or method; spec/62_help_spec.lua fails when one is missing).
-- Each entry: the call on the first line, then what it does. Keys: "vyre.f" for module
-- functions, "Type" for a type, "Type:method" for a method.
return {
  ["vyre"] = [=[
local vyre = require("vyre.cuda") -> the library (require("vyre"): the same, less the
CUDA device functions of vyre.cuda: available, count, device, open, profile, cache, nvtx).
Programs from text (vyre.parse) or the DSL (vyre.program), validation (vyre.validate),
PTX (vyre.ptx), host arrays (vyre.array) and backends (vyre.backend): CUDA when usable,
else the CPU reference interpreter, with bit-identical results. Types: Program, Array,
Backend, Buffer, Kernel, Launch, Graph; DSL: Builder (the k of a program body), Expr.
Modules: vyre.cuda, vyre.reference, vyre.lib, vyre.egraph (EGraph); planning:
vyre.policy, vyre.profiles, vyre.plan_view, vyre.planners.*. vyre.help(x) explains any.
Errors are vyre.Error values: err.code (stable: "arg", "type", "self", "freed", "backend",
"unsupported", "limit", "oom", "parse", "validate", "runtime", "driver", "no_cuda",
"lost", "io", "internal"), err.message, err.fix; tostring(err) is the whole
"vyre.fn: what. Fix: how" (docs/ERRORS.md).]=],
  ["vyre.version"] = [=[
vyre.version -> "0.1.0"
The library version (also in the disk cache key of compiled kernels).]=],
  ["vyre.types"] = [=[
vyre.types -> {"bool", "i32", "u32", "i64", "u64", "f32", "f64"}
The element and value types of programs, arrays and buffers (bool is stored as 4 bytes).]=],
  ["vyre.core"] = [=[
vyre.core -> the C module vyre.core
What the Lua files are built on (parse, validate, ptx, array, ops, backends). Use the
vyre functions instead; vyre.core.now_ns() is a monotonic clock in nanoseconds.]=],
  ["vyre.parse"] = [=[
vyre.parse(text) -> Program
Parses program text (the canonical S-expression format, or hand-written with decimal
floats and comments). Raises "vyre.parse: line L, column C: what. Fix: how".]=],
  ["vyre.validate"] = [=[
vyre.validate(p) -> true | false, problems, message
Checks every rule and reports all problems at once: each is {code, path, message, fix}
(path like "body[2].then[0].value"), plus cast (a type name) when converting to that
type fixes it; message is one text listing them. Also p:validate().]=],
  ["vyre.ptx"] = [=[
vyre.ptx(p [, {sm = 70, opt = {...}, debug = false}]) -> PTX text
The PTX the CUDA backend compiles for p (after the optimiser and bounds-check
elimination), for sm 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120 or 121,
each at its oldest PTX ISA (docs/RUNTIME.md "PTX targets"); debug = true gives the debug
mode's PTX (out-of-bounds counters as the last parameter, vy_oob). No GPU needed. CLI:
vyre ptx FILE --sm N.]=],
  ["vyre.random_program"] = [=[
vyre.random_program(seed [, {max_stmts, max_depth, allow_barriers, allow_approx,
                             allow_invalid, allow_subgroup}]) -> Program
A deterministic generated program for a seed (property tests, fuzzing); valid unless
allow_invalid.]=],
  ["vyre.fuse"] = [=[
vyre.fuse({p1, p2, ...} [, {internal = {"tmp", ...}}]) -> Program
Launch fusion: one program whose invocations run the chain's bodies in order, with the
chain's results bit for bit. Needs one 1-D (workgroup X) for all, no barrier, shared
memory or subgroup op, and buffers that two programs share (one writing) accessed only
at (gid x). Buffers of one name are one buffer; an `internal` buffer becomes a register
and a u32 param NAME_len (pass the length it would have had). Refusals name the program
and the reason. Bind memory the programs share under one name: two names over
overlapping memory (a buffer and its view) lose the chain's order.]=],
  ["vyre.program"] = [=[
vyre.program(name, {workgroup = 256 | {x, y, z}, decl...}, function(k) ... end) -> Program
Builds a program with the DSL: the declarations come from vyre.buffer, vyre.shared and
vyre.param; the body function gets the builder k (help("Builder")). The result is
validated; the first problem is raised at the Lua line that built it.]=],
  ["vyre.buffer"] = [=[
vyre.buffer(name, type, access [, count]) -> declaration
A global buffer for vyre.program: access "read", "write" or "read_write"; a count fixes
its length (bindings must then have exactly that many elements).]=],
  ["vyre.shared"] = [=[
vyre.shared(name, type, count) -> declaration
A workgroup-shared array of count elements for vyre.program (k.name[i] loads/stores).]=],
  ["vyre.worklist"] = [=[
vyre.worklist(name, type) -> declaration
A device worklist for vyre.program (ARCHITECTURE.md §2): k.name:len() counts the current
items, k.name[i] reads one (a typed zero past the end), k.name:push(v) appends v to the
next round's items (one atomic per subgroup on the GPU). Items of a round are a multiset:
their order differs between backends. The host passes {name = be:worklist(type, cap)}.]=],
  ["vyre.param"] = [=[
vyre.param(name, type) -> declaration
A scalar parameter for vyre.program, passed by value at each launch (args.name).]=],
  ["vyre.cast"] = [=[
vyre.cast(type, e) -> Expr
Converts e to type: float -> int truncates and saturates (NaN -> 0), int -> float rounds
to nearest even, narrowing ints keep the low bits, any -> bool is e ~= 0. Also e:cast(t).]=],
  ["vyre.bitcast"] = [=[
vyre.bitcast(type, e) -> Expr
Reinterprets the bits of e (same width: i32/u32/f32 or i64/u64/f64). Also e:bitcast(t).]=],
  ["vyre.select"] = [=[
vyre.select(c, a, b) -> Expr
a where the bool c is true, else b (both evaluated; a and b of one type).]=],
  ["vyre.fma"] = [=[
vyre.fma(a, b, c) -> Expr
a * b + c with one rounding (f32 or f64). A mul then add is never fused otherwise.]=],
  ["vyre.lit"] = [=[
vyre.lit(type, value) -> Expr
A typed literal: vyre.lit("u64", 7), vyre.lit("bool", true). A plain Lua number next to
a typed operand becomes a literal of that operand's type by itself.]=],
  ["vyre.array"] = [=[
vyre.array(type, n | table | binary string) -> Array
A typed host array: n zeros, the values of a table, or the raw bytes of a string
(little-endian elements). 1-based: a[1] .. a[#a].]=],
  ["vyre.backend"] = [=[
vyre.backend([name [, opts]]) -> Backend
No name: CUDA device 0 when usable, else the reference interpreter. "reference": a new
reference backend. "cuda": device 0, or nil, reason when CUDA is not usable. opts go to
vyre.reference.new or cuda.device: {debug = true} counts out-of-bounds accesses.]=],
  ["vyre.backends"] = [=[
vyre.backends() -> {{name =, priority =, available = [, reason =]}, ...}
The backends libvyre registers, in registry order: "cuda" (priority 100) and
"reference" (priority 0, always available). available says whether it can be opened
here; reason, only when it cannot, says why and how to fix it (e.g. no driver).]=],
  ["vyre.help"] = [=[
vyre.help([x])
Prints help: with no argument the list of topics; x may be a function (vyre.parse,
be.run), an object (a Backend, a Buffer, ...), a module, or a name such as "vyre.array",
"Buffer:upload", "upload", "Builder:when", "sqrt" or ":land".]=],

  ["vyre.cuda"] = [=[
local vyre = require("vyre.cuda") -> the library, with the CUDA device functions
Everything require("vyre") gives (the same functions, the same vyre.lib and vyre.egraph:
a view of one table, not a copy), plus available(), count(), device(i), open(i),
profile(name), cache(), nvtx([on]), driver_version(). None of these is a name of
require("vyre"); vyre.cuda.device(0) works from both. pairs() lists the device functions
only. Loads the driver at run time: the module loads, and answers why not, on machines
without CUDA; vyre.backend() then gives the reference backend.]=],
  ["vyre.cuda.available"] = [=[
cuda.available() -> true | false, reason
Whether CUDA is usable here (driver loaded, version >= 12.0, a device present).]=],
  ["vyre.cuda.count"] = [=[
cuda.count() -> n | nil, reason
The number of CUDA devices.]=],
  ["vyre.cuda.cache"] = [=[
cuda.cache() -> {dir, bytes, files, cap, refused}
The disk cache of compiled kernels: its directory ($VYRE_CACHE_DIR, else
$XDG_CACHE_HOME/vyre or ~/.cache/vyre), size and cap ($VYRE_CACHE_MAX_BYTES). refused
(nil when usable) says why the cache is off: a directory another user owns or that its
group or others can write (see docs/RUNTIME.md).]=],
  ["vyre.cuda.driver_version"] = [=[
cuda.driver_version() -> integer
The driver's CUDA version (12040 is 12.4); 0 when no driver loaded.]=],
  ["vyre.cuda.nvtx"] = [=[
cuda.nvtx([on]) -> enabled, built | false, reason
NVTX ranges (Nsight Systems) around compile, launch, sequence, run, graph replay and
megakernel sections, named by program. Process-wide; starts as $VYRE_NVTX=1 says. Without
the toolkit's nvtx3 header at build time, nvtx(true) gives false and the reason.]=],
  ["vyre.cuda.device"] = [=[
cuda.device([i [, {debug = b}]]) -> Backend | nil, reason
The backend of device i (0-based, default 0): the same object for an ordinal until it is
freed or lost. debug switches its debug mode (be:debug; shared by every user of it).]=],
  ["vyre.cuda.profile"] = [=[
vyre.cuda.profile(name) -> profile table
A synthetic device profile for planning without a GPU: "h100", "h200", "a100", "rtx5090",
"blackwell-envelope" (the original's figures) or "reference". Fields: SMs, warp size,
threads/registers/shared memory per SM and block, L2, memory, bandwidth, cooperative
launch, cost numbers. docs/PLANNERS.md.]=],
  ["vyre.cuda.open"] = [=[
cuda.open([i [, {debug = b}]]) -> Backend | nil, reason
Opens a new backend for device i even if one is open (it becomes cuda.device(i)).]=],
  ["vyre.reference"] = [=[
require("vyre.reference") -> the reference backend module
new() gives a CPU interpreter backend: the semantics every backend matches bit for bit.]=],
  ["vyre.reference.new"] = [=[
reference.new([opts]) -> Backend
A new reference backend with its own counters (= vyre.backend("reference")). opts.max_steps:
steps one run may take (one per invocation and one per loop back edge, grid-level loops
and converge rounds included; Ctrl-C is seen between workgroups too); opts.debug: count
out-of-bounds accesses (be:debug).]=],

  ["Program"] = [=[
vyre.Program — one validated-or-not program (from vyre.parse or vyre.program)
Fields: p.name, p.workgroup ({x, y, z}, also .x .y .z). p == q compares structure;
tostring(p) is its canonical text.]=],
  ["Program:text"] = [=[
p:text() -> string
The canonical text: parse(p:text()) == p, and the hash is taken over it.]=],
  ["Program:optimize"] = [=[
p:optimize([{fold =, simplify =, copy =, cse =, licm =, dce = true|false}]) -> Program, counts
The program after the optimiser's passes (docs/OPT.md), as a new Program you can read
(p:text()); counts = {folded, simplified, copied, cse, hoisted, removed}. Every rewrite
holds under the total semantics, so results are bit-identical. vyre.ptx(p, {opt = ...})
takes the same switches; $VYRE_OPT ("-cse,-licm", "none") sets the runtime's.]=],
  ["Program:dot"] = [=[
p:dot([{max_nodes = 400}]) -> Graphviz text
The program as a graph: statements in order (if/for blocks as clusters), expressions as a
DAG where equal subexpressions are one node, buffers linked to loads and stores. Render
with `dot -Tsvg`.]=],
  ["Program:hash"] = [=[
p:hash() -> 16 hex digits
XXH3-64 of the canonical text (the kernel caches key on it).]=],
  ["Program:decls"] = [=[
p:decls() -> {{kind, name, type, access, count, slot}, ...}
The declarations in order (kind "buffer", "shared" or "param"; slot is 1-based among
declarations of the same kind).]=],
  ["Program:validate"] = [=[
p:validate() -> true | false, problems, message
Same as vyre.validate(p).]=],
  ["Program:free"] = [=[
p:free()
Releases the program now (idempotent; also at garbage collection or <close>).]=],

  ["Array"] = [=[
vyre.Array — a typed host array (vyre.array): a[i] 1-based, #a, a.type, a.count,
pairs/ipairs, a == b compares type, length and bytes. Backends take and return them.
tostring(a) shows the type, length and the first 8 and last 4 elements; a float as the
shortest text that reads back to its bits (10.0, 0.1, -0.0, 1e-45, inf, nan, -nan, and
nan:0xBITS for another NaN), the same in the REPL and `vyre run`.]=],
  ["Array:totable"] = [=[
a:totable() -> {values...}
A Lua table of the elements.]=],
  ["Array:bytes"] = [=[
a:bytes() -> binary string
The raw bytes (little-endian elements); vyre.array(type, s) reads them back. tostring(a)
gives text.]=],
  ["Array:tostring"] = [=[
a:tostring() — renamed: a:bytes() gives the raw bytes (tostring(a) gives text). Calling
a:tostring() raises an error naming a:bytes().]=],
  ["Array:fill"] = [=[
a:fill(v) -> a
Sets every element to v (converted as a[i] = v would).]=],
  ["Array:iota"] = [=[
a:iota([start [, step]]) -> a
a[i] = start + (i - 1) * step in the element type (integers wrap, floats round each
operation), as vyre.lib.iota computes it; start 0 and step 1 by default.]=],
  ["Array:random"] = [=[
a:random(seed [, lo, hi]) -> a
Deterministic random fill (splitmix64 from the seed, one draw per element, the same on
every machine): floats uniform in [lo, hi) (default [0, 1)); integers uniform in
[lo, hi] inclusive (default every value of the type); bool a fair coin.]=],
  ["Array:view"] = [=[
a:view(first [, count]) -> Array
An Array of count elements (default: to the end) sharing this one's memory from
element first (1-based): writes through either show in both; it binds like any Array.
It keeps the parent alive; freeing the parent ends its views. a:copy() owns its memory.]=],
  ["Array:from_string"] = [=[
a:from_string(s [, first]) -> a
Copies the raw bytes of s (whole little-endian elements, as a:bytes() gives them)
into the array in place, from element first (1-based, default 1).]=],
  ["Array:copy"] = [=[
a:copy() -> Array
A new array with the same type and contents.]=],
  ["Array:free"] = [=[
a:free()
Releases the memory now (idempotent; also at garbage collection or <close>).]=],

  ["Backend"] = [=[
vyre.Backend — the CUDA device or the reference interpreter, one interface
Fields: be.name ("cuda" | "reference"), be.ordinal, be.freed. Results are bit-identical
on both; only load_ptx and launch_raw are CUDA-only.]=],
  ["Backend:run"] = [=[
be:run(p, args [, opts]) -> {name = Array | Buffer}, rounds
Runs p once: args maps names to values (a param: a Lua value; a buffer: an Array, a
table or a Buffer of this backend). Returns each write/read_write buffer: a new Array,
or the Buffer passed (used in place). opts: {n = elements | {w, h, d}, grid = {x, y, z}};
a program reading gid.y/z needs n = {w, h [, d]} or grid (a scalar n is an error for it,
unless it reads ngroups; n = {N} is an explicit 1-D grid). rounds: the converge loops'
rounds (0 without one).]=],
  ["Backend:run_timed"] = [=[
be:run_timed(p, args [, opts]) -> results, rounds, {wall_ns, device_ns, enqueue_ns, wait_ns}
be:run and its timing (the one timing record, last; docs/API.md "Vocabulary").]=],
  ["Backend:buffer"] = [=[
be:buffer(type, n | Array | table) -> Buffer
A resident buffer: n zeros, or a copy of the data.]=],
  ["Backend:compile"] = [=[
be:compile(p) -> Kernel
Validates and compiles p (CUDA: through the PTX, module and disk caches).]=],
  ["Backend:compile_all"] = [=[
be:compile_all({p1, p2, ...}) -> {Kernel, ...}
Validates and compiles every program at once, each kernel the one be:compile(p) gives.
CUDA: the cubins the disk cache lacks are JIT-compiled in worker threads
(min(#programs, CPUs, 8), or $VYRE_JIT_THREADS); the reference compiles each in turn.
All or nothing: an error names the first failing program (programs[i] and its name) and
no kernel is left. The e-graph compiles a rule set's kernels this way before iteration 1.]=],
  ["Backend:load_ptx"] = [=[
be:load_ptx(ptx, entry) -> Kernel   (CUDA only)
A kernel from raw PTX text, launched with k:launch_raw.]=],
  ["Backend:sequence"] = [=[
be:sequence({{k, args [, opts]}, ...} [, {prefix, times, readback, timed, converge}])
  -> arrays [, timing]
Launches the steps in order with one synchronisation: steps 1..prefix once, the rest
`times` times, then reads back each buffer, or element range {buf, first, count} (first
1-based, count defaulting to the rest, as buf:download{first =, count =}), in readback.
converge = {worklist = wl, max = n} in place of times: the rest run round by round, each
round followed by wl:advance(), until a round pushes nothing (one count read per round);
arrays.rounds is the number of rounds run. A step's opts may be {n = wl}.]=],
  ["Backend:graph"] = [=[
be:graph({{k, args [, opts]}, ...}) -> Graph
Captures the steps once (arguments by value) for cheap replay with g:launch(times).]=],
  ["Backend:synchronize"] = [=[
be:synchronize() -> true
Waits until every queued launch and copy has finished (a no-op on the reference), then
raises the lost-device cause or an error recorded while freeing objects (deferred).]=],
  ["Backend:trim"] = [=[
be:trim()
Gives cached memory back (CUDA transient and pinned pools, unused modules).]=],
  ["Backend:lost"] = [=[
be:lost() -> boolean
True once a sticky fault poisoned the device (never on the reference).]=],
  ["Backend:check"] = [=[
be:check() — renamed: be:synchronize() waits and raises the lost-device cause or an
error recorded while freeing. Calling be:check() raises an error naming it.]=],
  ["Backend:megakernel"] = [=[
be:megakernel(steps [, {times = n | converge = {flag = buf, max = n}, prefix =, timed =,
              grid_sync =}]) -> rounds [, timing]
Runs the steps (the list be:sequence takes) as ONE kernel: each step a grid-stride
section over its own workgroups, grid barriers only between layers of steps that depend
on each other (RAW/WAR/WAW on the same memory: a view and its parent alias). converge
repeats the steps on the device until a round leaves flag[1] zero (zeroed before each
round) or max rounds ran.
Results equal be:sequence's bit for bit; the reference backend runs it too. grid_sync
("auto", "cooperative", "split", "graph") forces the execution mode; "graph" replays each
converge round as a CUDA graph (one graph launch and one flag read per round).
converge = {worklist = wl, max = n}: rounds of the steps (after the prefix), composed
into the kernel too; each round ends by advancing wl ON THE DEVICE (cooperative: no host
sync until the end), until a round pushes nothing, overflows wl (raised right after the
run with the capacity needed) or max rounds ran; returns the rounds. Steps may be sized
by a worklist ({n = wl}: len read each round). Split/graph modes run these rounds as a
host loop (one header read per round); be:plan's reason says which. docs/GRID.md.]=],
  ["Backend:plan"] = [=[
be:plan(steps [, opts]) -> plan
What be:megakernel would do, before anything runs: {mode, reason, layers, barriers (with
the dependency that forced each), deps (every dependency), grid ({blocks, blocks_per_sm,
sms, threads, virtual_workgroups}), occupancy (a fraction of the SM's thread slots),
bytes_per_round, facts, ...}; the mode comes from vyre.policy.megakernel(facts). Plans
are cached per backend (be:stats().plan_hits). plan:dot() draws it for Graphviz.]=],
  ["Backend:grid_sync"] = [=[
be:grid_sync(["auto" | "cooperative" | "split" | "graph"]) -> mode
How programs with grid barriers run on this backend: a cooperative launch, a host split at
each grid barrier, the host split with each converge round replayed as a CUDA graph
(graph: one graph launch and one flag read per round), or the choice of the runtime (auto;
$VYRE_GRID_SYNC sets the initial mode). The mode belongs to this backend object (another
backend on the same device keeps its own) and goes with each launch it makes. Forcing
cooperative where it cannot run is an error with a Fix.]=],
  ["Backend:debug"] = [=[
be:debug([on]) -> on
Debug mode (default $VYRE_DEBUG=1, or reference.new{debug = true}): out-of-bounds loads
and stores are counted per declaration. Results do not change (loads past the end read 0,
stores are dropped). Switching starts a new report. Reference: every run and launch counts.
CUDA: kernels compiled while it is on count on the device (be:run, vyre.lib and
be:megakernel compile their own; a Kernel compiled before keeps running uncounted, see
k:info().debug); the code is slower and has no vector entry.]=],
  ["Backend:oob_report"] = [=[
be:oob_report() -> {name = {loads = n, stores = n}, ...}
The buffer and shared declarations that had out-of-bounds accesses (atomics count as
stores) since debug mode was switched on or the last report, which this one resets. CUDA:
waits for the device's queued work first. be:megakernel's steps count under the composed
program's names: mg_b0, mg_b1, ... for the distinct Buffers in order of first use.]=],
  ["Backend:profile"] = [=[
be:profile() -> profile table
The real device as a profile (the same fields as vyre.cuda.profile(name)), built from
be:info(); the reference backend returns the documented CPU profile.]=],
  ["Backend:info"] = [=[
be:info() -> table
Device facts in the profiles' vocabulary (vyre.profiles.FIELDS): name, sm, sms,
memory_bytes, max_threads_per_block, shared_bytes_per_block[_optin], ... (CUDA), or the
reference's. Old names (multiprocessors, total_memory, shared_bytes, shared_bytes_optin,
max_workgroup) raise naming the new one. CUDA
also: target (the PTX target it runs, "sm_120"), target_isa ("8.7") and target_reason
(its own SM, or why a lower target runs: a newer SM, an older driver; docs/RUNTIME.md).
fake = true on the fake CUDA driver of tests/fakecuda (CI without a GPU: kernels run on
the reference interpreter, so its results are the reference's and its timings mean nothing).]=],
  ["Backend:stats"] = [=[
be:stats() -> table
Counters: launches, bytes_up, bytes_down, syncs, live_buffers, live_kernels, ... (CUDA
also cache hits and misses and pool sizes; ptx_emits and disk_program_hits, the PTX
emitted or read from disk by program key; open_ns, open_ctx_ns, ...: where opening the
device went, docs/RUNTIME.md); this backend's megakernel plans: plan_hits, plan_misses,
plan_evictions, plan_entries.]=],
  ["Backend:free"] = [=[
be:free()
Releases this backend object (its buffers and kernels keep the device until freed).]=],

  ["Buffer"] = [=[
vyre.Buffer — a resident buffer (device memory on CUDA, host memory on the reference)
Fields: buf.type, buf.count, buf.bytes, buf.freed, buf.backend (the Backend that made it);
#buf. Bind it by name in launches.]=],
  ["Buffer:upload"] = [=[
buf:upload(array | table | binary string [, {first = i} | {byte_offset = o}]) -> buf
Copies host data into the buffer, from element first (1-based) or, by name, at a byte
offset (whole elements, range checked). A string is raw little-endian elements. A
positional offset raises naming both tables (ranges are elements unless named bytes).]=],
  ["Buffer:download"] = [=[
buf:download([{first = i, count = n} | {byte_offset = o, nbytes = n}]) -> Array
Copies the buffer, or an element range (1-based; count defaults to the rest) or, by name,
a byte range, back to a new Array (waits for queued work). :bytes() of it gives raw
bytes. Positional numbers raise naming both tables.]=],
  ["Buffer:zero"] = [=[
buf:zero() -> buf
Fills the buffer with zero bytes (asynchronous on CUDA).]=],
  ["Buffer:view"] = [=[
buf:view(first [, count]) -> Buffer
A Buffer of count elements (default: to the end) aliasing this one's storage from
element first (1-based): writes through either show in both, and launches bind it as
its own length (on CUDA its pointer is the parent's + offset; any alignment works). It
keeps the parent alive; freeing the parent ends its views. Views cost no memory.]=],
  ["Buffer:fill"] = [=[
buf:fill(v) -> buf
Sets every element to v, as Array:fill does (in place on the reference; on CUDA one
asynchronous launch of a vyre.lib kernel; iota and random too, with the same elements).]=],
  ["Buffer:iota"] = [=[
buf:iota([start [, step]]) -> buf
The elements Array:iota gives: start + (i - 1) * step in the element type (default 0, 1).]=],
  ["Buffer:random"] = [=[
buf:random(seed [, lo, hi]) -> buf
The elements Array:random gives for the same seed and range (splitmix64; floats in
[lo, hi), integers in [lo, hi], bool a fair coin). On a view, draws start at its first.]=],
  ["Buffer:pointer"] = [=[
buf:pointer() -> integer
The address of the buffer's data, for raw PTX kernels (k:launch_raw) and a host's own
code (interop): the device pointer (CUdeviceptr) on CUDA, the host address of its memory
on the reference (0 when empty). Valid until the buffer is freed; synchronize first when
the host reads it.]=],
  ["Buffer:device_ptr"] = [=[
buf:device_ptr() — renamed: buf:pointer() gives the data's address on either backend.
Calling buf:device_ptr() raises an error naming buf:pointer().]=],
  ["Buffer:free"] = [=[
buf:free()
Releases the memory now (idempotent; also at garbage collection or <close>).]=],

  ["Kernel"] = [=[
vyre.Kernel — a program compiled for one backend (be:compile)
Fields: k.program, k.name, k.ptx (CUDA). Launches bind buffers and params by name.]=],
  ["Kernel:launch"] = [=[
k:launch(args [, opts]) -> k
One launch on resident Buffers (asynchronous on CUDA; done on return on the reference).
opts: {n = elements | {w, h, d} | worklist, grid = {x, y, z}}; a program reading gid.y/z
needs n = {w, h [, d]} or grid, as be:run says. n = wl runs wl:size() invocations, the
count read on the device (a grid-stride loop over a bounded grid, no readback); the
program must declare a worklist. Also in be:sequence and be:graph steps.]=],
  ["Kernel:launch_timed"] = [=[
k:launch_timed(args [, opts]) -> {wall_ns, device_ns, enqueue_ns, wait_ns}
One launch, synchronised, with its timing.]=],
  ["Kernel:bind"] = [=[
k:bind(args [, opts]) -> Launch
Matches the arguments once; l() then relaunches with no lookups (the launch floor).]=],
  ["Kernel:rounds"] = [=[
k:rounds() -> n
The rounds its last launch ran: converge loops' rounds (0 for programs without one).]=],
  ["Kernel:occupancy"] = [=[
k:occupancy() -> blocks_per_sm, cooperative, mode, blocks
Four values: blocks of this kernel the device keeps resident per SM (from the driver; 0
on the reference), whether the device has cooperative launch, and the last launch's
grid-sync mode and block count. (The fraction of the SM this fills is what `occupancy`
means in tables: plan.occupancy, vyre.planners.occupancy.)]=],
  ["Kernel:info"] = [=[
k:info() -> table
name, backend, hash, workgroup, nbuffers, nparams (CUDA: registers, shared and local
bytes, max threads, PTX and binary versions, vector (has the vector entry), debug
(compiled in debug mode: counts out-of-bounds accesses)).]=],
  ["Kernel:launch_raw"] = [=[
k:launch_raw(grid, block, args)   (CUDA only, kernels from be:load_ptx)
args: Buffers (device pointer), integers (64-bit) or {"u32" | "f32" | ..., value}.]=],
  ["Kernel:free"] = [=[
k:free()
Releases the kernel now (idempotent; also at garbage collection or <close>).]=],

  ["Launch"] = [=[
vyre.Launch — a kernel with its arguments matched once (k:bind); l() or l:launch().]=],
  ["Launch:launch"] = [=[
l:launch() -> l     (also l())
Launches again with the bound buffers, params and grid.]=],
  ["Launch:free"] = [=[
l:free()
Drops the launch's references (idempotent).]=],

  ["vyre.planners.fusion.plan"] = [=[
fusion.plan({stages = {{id, layout_hash, input_bytes, output_bytes, scratch_bytes,
             requires_host_materialization}, ...}, budget_bytes = n}) -> plan
The original's greedy launch-fusion planner: groups (one launch each) of consecutive
same-layout stages within the budget, avoided launches and intermediate bytes;
plan:dot() (Graphviz), tostring(plan) (a table). docs/PLANNERS.md §3.7.]=],
  ["vyre.planners.multiquery.plan"] = [=[
multiquery.plan({queries = {{query, graph_layout_hash, traversal_key, graph_upload_bytes,
                 frontier_bytes, scratch_bytes, output_bytes}, ...}, budget_bytes = n}) -> plan
Multi-query batches by (layout, traversal key) within the budget, each graph uploaded
once, one host fence per batch; avoided launches, fences and upload bytes, peak resident
bytes. docs/PLANNERS.md §3.8.]=],
  ["vyre.planners.compaction.plan"] = [=[
compaction.plan({slots = {{slot, meaningful_bytes, capacity_bytes}, ...},
                 record_limit_bytes = n}) -> plan
Result compaction: small slots packed into one compact buffer (offsets), large ones read
directly, empty ones skipped; full / compact / direct / avoided bytes. §3.9.]=],
  ["vyre.planners.compaction.readback"] = [=[
compaction.readback(be, plan, {[slot] = Buffer, ...}) -> {[slot] = Array}, stats
Runs a compaction plan: a generated vyre program gathers the compact slots into one
device buffer, read in one transfer; direct slots are downloaded each. Both backends.]=],
  ["vyre.planners.compaction.gather_text"] = [=[
compaction.gather_text(type, k) -> program text
The gather program readback launches for k slots of one element type.]=],
  ["vyre.planners.session.plan"] = [=[
session.plan({graph_layout_hash, graph_bytes, run_count, per_run_frontier_bytes,
              reusable_scratch_bytes, per_run_output_bytes, budget_bytes}) -> plan
A resident graph session: peak bytes; avoided uploads, allocations and fences. §3.10.]=],
  ["vyre.planners.session.sample"] = [=[
session.sample(plan, measured) -> speedup-gate sample
One measured session ({host_orchestrated_ns, resident_ns, graph_nodes, graph_edges,
profile | device fields, timed counters}) as a vyre.planners.speedup_gate sample.]=],
  ["vyre.planners.session.samples"] = [=[
session.samples(plan, {measured, ...}) -> {sample, ...}
session.sample over a list, for speedup_gate.evaluate.]=],
  ["vyre.planners.passes.select"] = [=[
passes.select({candidates = {...}, frontier_items, reuse_count, avoided_readback_bytes,
               planning_budget_ns, scratch_budget_bytes}) -> {selected, skipped, ...}
Benchmark pass selection: mandatory first, thresholds, budgets, projected speedup (the
product of the factors); skip reasons as the original names them. §3.11.]=],
  ["vyre.planners.workqueue.plan"] = [=[
workqueue.plan({entry_bytes, control_bytes, budget_bytes, capacity | expansion_items,
                initial_items, drain_items, host_sync = "final_only"}) -> plan
The device work-queue planner: capacity (a given one, or initial + expansion within the
budget), queue/resident bytes, initial occupancy (bps), drain windows (strategy,
items_per_chunk, chunks). be:worklist sizes with it. §3.12.]=],
  ["vyre.planners.workqueue.worklist"] = [=[
workqueue.worklist(type [, opts]) -> profile
The planner's profile of a worklist of that item type (entry_bytes = 2 x item size,
control_bytes = 32) with opts' capacity, initial/expansion items, budget and drain.]=],

  ["Backend:worklist"] = [=[
be:worklist(type [, capacity | {expansion_items, initial_items, budget_bytes,
            drain_items, capacity}]) -> Worklist
A device worklist of at most `capacity` items per round (numeric type), empty. Without a
capacity the work-queue planner sizes it: expansion_items (default 2^20) within
budget_bytes (CUDA: a quarter of the device's memory; reference: 1 GiB); wl:plan() shows
the plan. Bind it by the declaration's name ({frontier = wl}) and size launches with it
({n = wl}).]=],
  ["Worklist:plan"] = [=[
wl:plan() -> table
The work-queue plan that sized the worklist: capacity, queue_bytes, control_bytes,
resident_bytes, initial_occupancy_bps, strategy, items_per_chunk, chunks (drain windows:
CUDA's default window is the resident grid's threads), final_only_host_sync.]=],
  ["Worklist"] = [=[
vyre.Worklist — a device worklist (be:worklist): the current items, which kernels read,
and the next round's, which their pushes fill; wl:advance() swaps them. Fields: type,
capacity, freed. A round that pushes past the capacity is reported (never a silent drop)
at the next host read of the worklist (the reference: right after the launch), naming the
capacity needed.]=],
  ["Worklist:push"] = [=[
wl:push(values) -> wl
Appends a table, vyre.Array or Buffer of the item type to the current items (seeding).]=],
  ["Worklist:size"] = [=[
wl:size() -> integer
The number of current items (CUDA: waits for queued work and reads the count).]=],
  ["Worklist:pushed"] = [=[
wl:pushed() -> integer
The number of items pushed for the next round so far.]=],
  ["Worklist:items"] = [=[
wl:items() -> Array
A copy of the current items (their order within a round is not defined).]=],
  ["Worklist:advance"] = [=[
wl:advance() -> wl
The pushed items become current and the next round starts empty (CUDA: a step on the
stream, no host synchronisation).]=],
  ["Worklist:clear"] = [=[
wl:clear() -> wl
No current or pushed items, and no overflow record.]=],
  ["Worklist:free"] = [=[
wl:free()
Releases the worklist's memory (idempotent; also <close> and garbage collection).]=],

  ["Graph"] = [=[
vyre.Graph — launch steps captured once (be:graph), replayed with g:launch(times).]=],
  ["Graph:launch"] = [=[
g:launch([times [, timed]]) -> g | timing
Replays the steps `times` times (default 1), then synchronises.]=],
  ["Graph:free"] = [=[
g:free()
Releases the graph (idempotent).]=],
}
