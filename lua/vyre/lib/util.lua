-- vyre.lib.util — the pieces every vyre.lib primitive shares (docs/LIB.md): argument
-- checks that raise "vyre.lib.<name>: what went wrong. Fix: how", the per-backend
-- caches of compiled kernels and scratch buffers (weak-keyed by backend), the type
-- table (literals, identities), the padding fragment, device counts, and running a list
-- of launches as one be:sequence (optionally timed).
local vyre = require("vyre")
local core = require("vyre.core")
local E = require("vyre.errors")
local G = require("vyre.lib.geometry")
local T = require("vyre.lib.template")
local F = require("vyre.lib.fragments")

local U = {}

-- Geometry shared by the primitives: vyre.lib.geometry's, named here too for the Lua
-- drivers that size grids (one table: change it there).
U.WG = G.WG          -- invocations per workgroup
U.ITEMS = G.ITEMS    -- elements per invocation per tile
U.TILE = G.TILE      -- WG * ITEMS: elements per tile
U.TILEP = G.TILEP    -- TILE + TILE / 32: a tile padded against shared-memory bank conflicts
U.MAXG = G.MAXG      -- most workgroups of a chunked pass (about one wave on an H100)

-- Errors ----------------------------------------------------------------------------

--- Raises "vyre.lib.<name>: <what>. Fix: <fix>" (a vyre.Error with `code`, default
--- "arg"; lua/vyre/errors.lua) at the line of the first caller outside lua/vyre/lib.
function U.raise(name, what, fix, code)
  E.raise_outside("lib", code or "arg", E.format("vyre.lib." .. name, what, fix))
end

--- The __name of v's metatable (vyre.Buffer, vyre.Backend, ...), or nil.
local function mt_name(v)
  local mt = getmetatable(v)
  return type(mt) == "table" and rawget(mt, "__name") or nil
end
U.mt_name = mt_name

local function describe(v)
  local n = mt_name(v)
  if n then return n end
  return type(v)
end

function U.check_backend(name, be)
  if mt_name(be) ~= "vyre.Backend" then
    U.raise(name, "argument 1 must be a vyre.Backend, got " .. describe(be),
      "pass vyre.backend() or require('vyre.cuda').device(0) as the first argument", "type")
  end
  if be.freed then
    U.raise(name, "the backend was freed", "use a live backend", "freed")
  end
end

U.ALL_TYPES = { "bool", "i32", "u32", "i64", "u64", "f32", "f64" }
U.NUM_TYPES = { "i32", "u32", "i64", "u64", "f32", "f64" }

local function list_has(list, v)
  for _, x in ipairs(list) do
    if x == v then return true end
  end
  return false
end
U.list_has = list_has

--- Checks that buf is a live vyre.Buffer of be's kind whose type is in `types`.
function U.check_buffer(name, be, buf, what, types)
  if mt_name(buf) ~= "vyre.Buffer" then
    U.raise(name, ("%s must be a vyre.Buffer, got %s"):format(what, describe(buf)),
      "create it with be:buffer(type, n | array) on the backend you pass", "type")
  end
  if buf.freed then
    U.raise(name, what .. " was freed", "pass a live buffer", "freed")
  end
  local kind = buf.backend.name
  if kind ~= be.name then
    U.raise(name, ("%s belongs to a %s backend, not to the %s backend passed"):format(
      what, kind, be.name), "create buffers with the backend you pass to vyre.lib", "backend")
  end
  if types and not list_has(types, buf.type) then
    U.raise(name, ("%s has type %s, which is not supported here"):format(what, buf.type),
      "use a buffer of type " .. table.concat(types, ", "))
  end
end

function U.check_op(name, op, ops)
  if not list_has(ops, op) then
    U.raise(name, ("unknown op '%s'"):format(tostring(op)),
      "use one of " .. table.concat(ops, ", "))
  end
end

--- Checks an optional opts table against allowed keys; returns it (or {}).
function U.check_opts(name, opts, allowed, pos)
  if opts == nil then return {} end
  if type(opts) ~= "table" or mt_name(opts) then
    U.raise(name, ("argument %d (opts) must be a table, got %s"):format(pos, describe(opts)),
      "pass nil or a table with keys " .. table.concat(allowed, ", "))
  end
  for k in pairs(opts) do
    if not list_has(allowed, k) then
      U.raise(name, ("unknown option '%s'"):format(tostring(k)),
        "use only " .. (#allowed > 0 and table.concat(allowed, ", ") or "no options"))
    end
  end
  return opts
end

-- Aliasing --------------------------------------------------------------------------
-- Buffers alias by memory, not by object: two views of one buffer are different objects
-- over the same bytes. core.buffer_extent names a Buffer's allocation (its root) and
-- its byte range there, so these checks see through views.

--- The root allocation and byte range [first, stop) of buf's first n elements (all
--- when n is nil).
local function extent(buf, n)
  local root, first, stop = core.buffer_extent(buf)
  if n and buf.count > 0 then stop = first + (stop - first) // buf.count * n end
  return root, first, stop
end

--- How the memory of a's first na and b's first nb elements (all when nil) relate: nil
--- when disjoint (or either is empty), "same" when both start at the same byte of one
--- allocation (an in-place call), "overlap" when they share bytes otherwise.
function U.overlap(a, b, na, nb)
  local ra, fa, ea = extent(a, na)
  local rb, fb, eb = extent(b, nb)
  if ra ~= rb or fa >= ea or fb >= eb or fa >= eb or fb >= ea then return nil end
  return fa == fb and "same" or "overlap"
end

--- Raises unless a and b (what: their names in messages) share no memory; with
--- allow_same, the same start (an in-place call) passes and only partial overlap raises.
--- why, when given, ends the message's first part ("compaction cannot run in place").
function U.check_disjoint(name, a, awhat, b, bwhat, fix, allow_same, why)
  local o = U.overlap(a, b)
  if not o or (o == "same" and allow_same) then return end
  local how = rawequal(a, b) and ("%s is %s"):format(awhat, bwhat)
    or ("%s and %s share memory (overlapping views of one buffer)"):format(awhat, bwhat)
  if allow_same then how = how .. " without starting at the same element" end
  if why then how = how .. "; " .. why end
  U.raise(name, how, fix)
end

function U.is_buffer(v)
  return mt_name(v) == "vyre.Buffer"
end

-- Types ----------------------------------------------------------------------------

local INT = {
  i32 = { min = "-2147483648i32", max = "2147483647i32", bits = 32, signed = true,
    lmin = -2147483648, lmax = 2147483647 },
  u32 = { min = "0u32", max = "4294967295u32", bits = 32, signed = false,
    lmin = 0, lmax = 4294967295 },
  i64 = { min = "-9223372036854775808i64", max = "9223372036854775807i64", bits = 64,
    signed = true, lmin = math.mininteger, lmax = math.maxinteger },
  u64 = { min = "0u64", max = "18446744073709551615u64", bits = 64, signed = false },
}
U.INT = INT

function U.is_float(t) return t == "f32" or t == "f64" end
function U.is_int(t) return INT[t] ~= nil end

local NAN = { f32 = "nan:0x7fc00000f32", f64 = "nan:0x7ff8000000000000f64" }

--- The literal 0 of type t (+0.0 for floats).
function U.zero(t)
  if U.is_float(t) then return "0x0p+0" .. t end
  if t == "bool" then return "false" end
  return "0" .. t
end

--- The exact identity of op on t: x op id == id op x == x for every x (floats: add's is
--- -0.0, min's and max's is NaN, since vyre's min/max return the non-NaN operand).
function U.identity(op, t)
  if op == "add" then
    return U.is_float(t) and ("-0x0p+0" .. t) or ("0" .. t)
  end
  if U.is_float(t) then return NAN[t] end
  if op == "min" then return INT[t].max end
  return INT[t].min
end

--- What a reduction of nothing reports where a value must be written (segmented reduce):
--- 0 for add, the largest value (+inf) for min, the smallest (-inf) for max.
function U.empty_value(op, t)
  if op == "add" then return U.zero(t) end
  if U.is_float(t) then return (op == "min" and "inf" or "-inf") .. t end
  if op == "min" then return INT[t].max end
  return INT[t].min
end

-- Text ----------------------------------------------------------------------------------
-- vyre.lib's kernels are written with vyre.lib.template (docs/LIB.md).

local PAD = T.new("pad", "(add $E (shr $E ${PAD_SHIFT}u32))")

--- The padded shared index of the element at index expression e (one word skipped per
--- 2^PAD_SHIFT): a template instance.
function U.pad(e)
  return PAD({ E = e })
end

-- Caches ------------------------------------------------------------------------------

-- backend -> its kernel cache; weak keys (ephemerons): a backend no longer used by the
-- caller is collected with its kernels and scratch buffers.
local kernels = setmetatable({}, { __mode = "k" })
local scratch = setmetatable({}, { __mode = "k" })

-- The kernels a backend's cache keeps at most (least recently used dropped first): a
-- process that keeps making new kernels (e-graphs with new analyses, new predicates)
-- compiles them but does not keep every one. $VYRE_LIB_KERNEL_CACHE or
-- lib.kernel_cache(be, {limit = n}) changes it (per process).
U.KERNEL_CACHE_DEFAULT = 1024
local cache_limit = U.KERNEL_CACHE_DEFAULT
do
  local env = os.getenv("VYRE_LIB_KERNEL_CACHE")
  local n = env and math.tointeger(tonumber(env))
  if env and env ~= "" and not (n and n >= 1) then
    E.raise("arg", ("vyre.lib: VYRE_LIB_KERNEL_CACHE=%q is not a count >= 1. Fix: unset it "
      .. "(default %d kernels per backend) or give e.g. 4096"):format(env,
        U.KERNEL_CACHE_DEFAULT), 0)
  end
  if n then cache_limit = n end
end

-- be's kernel cache and the key under which key's kernel lives there (debug apart):
-- map key -> Kernel, used key -> the clock of its last use, and the counters.
-- be's debug method is looked up once per backend (a lookup is a C __index call; every
-- kernel request asks, ~120 per e-graph iteration); the mode itself is asked each time.
local function cache_of(be, key)
  local c = kernels[be]
  if not c then
    local debug = be.debug
    if debug(be) then key = key .. "#debug" end
    c = { map = {}, used = {}, n = 0, clock = 0, hits = 0, misses = 0, evictions = 0,
      debug = debug }
    kernels[be] = c
    return c, key
  end
  if c.debug(be) then key = key .. "#debug" end
  return c, key
end

local function cache_get(c, key)
  local k = c.map[key]
  if k then
    c.clock = c.clock + 1
    c.used[key] = c.clock
    c.hits = c.hits + 1
  end
  return k
end

-- Past the limit, the least recently used eighth goes (at least down to the limit). A
-- dropped Kernel is not freed here: a step list, an e-graph rule's own cache or the caller
-- may still hold it; the collector frees it once nothing does.
local function cache_trim(c)
  if c.n <= cache_limit then return end
  local keys = {}
  for key in pairs(c.map) do keys[#keys + 1] = key end
  local used = c.used
  table.sort(keys, function(a, b) return used[a] < used[b] end)
  local drop = math.min(#keys, c.n - cache_limit + cache_limit // 8)
  for i = 1, drop do
    c.map[keys[i]], used[keys[i]] = nil, nil
  end
  c.n, c.evictions = c.n - drop, c.evictions + drop
end

-- keep: leave the trim to the caller (a batch trims once, after all its kernels are in)
local function cache_put(c, key, k, keep)
  if not c.map[key] then c.n = c.n + 1 end
  c.map[key] = k
  c.clock = c.clock + 1
  c.used[key] = c.clock
  if not keep then cache_trim(c) end
end

--- be's kernel cache: {entries, limit, hits, misses, evictions}; opts.limit (>= 1) sets
--- the limit of every backend's cache (trimming them now).
function U.kernel_cache(be, opts)
  if opts and opts.limit ~= nil then
    local n = math.tointeger(opts.limit)
    if not n or n < 1 then
      U.raise("kernel_cache", ("opts.limit must be an integer >= 1 (got %s)"):format(
        tostring(opts.limit)), "e.g. {limit = 4096}")
    end
    cache_limit = n
    for _, c in pairs(kernels) do cache_trim(c) end
  end
  local c = kernels[be] or { n = 0, hits = 0, misses = 0, evictions = 0 }
  return { entries = c.n, limit = cache_limit, hits = c.hits, misses = c.misses,
    evictions = c.evictions }
end

-- backend -> the batch U.collect is gathering: { keys, progs, stand = key -> stand-in }.
local collecting = setmetatable({}, { __mode = "k" })

--- The compiled kernel for key on be, built by gen() (text) the first time; one of its
--- own while be's debug mode is on (it counts out-of-bounds accesses). Inside
--- U.collect(be, fn) a miss is parsed but not compiled: fn gets a stand-in.
function U.kernel(be, key, gen)
  local c
  c, key = cache_of(be, key)
  local k = cache_get(c, key)
  if not k then
    local b = collecting[be]
    if b and b.stand[key] then return b.stand[key] end
    local text = gen()
    local ok, p = pcall(vyre.parse, text)
    if not ok then
      E.raise("internal", "vyre.lib internal: kernel " .. key .. " does not parse: " .. tostring(p)
        .. "\n" .. text, 0)
    end
    if b then
      b.keys[#b.keys + 1], b.progs[#b.progs + 1] = key, p
      b.stand[key] = { stand_in = key }
      return b.stand[key]
    end
    k = be:compile(p)
    c.misses = c.misses + 1
    cache_put(c, key, k)
  end
  return k
end

--- Runs fn() with be's kernel cache gathering instead of compiling: every kernel fn
--- misses is parsed and fn sees a stand-in table (so fn may only collect kernels into
--- steps, never launch them, and must drop what it kept of them); then all of them are
--- compiled with one be:compile_all (the CUDA backend JIT-compiles them in parallel)
--- and cached. Returns how many were compiled. An error in fn or in compiling leaves
--- the cache as it was and raises it.
function U.collect(be, fn)
  if collecting[be] then -- nested: the outer batch gathers
    fn()
    return 0
  end
  local b = { keys = {}, progs = {}, stand = {} }
  collecting[be] = b
  local ok, err = pcall(fn)
  collecting[be] = nil
  if not ok then error(err, 0) end
  if #b.progs == 0 then return 0 end
  local ks = be:compile_all(b.progs)
  local c = cache_of(be, "")
  c.misses = c.misses + #ks
  for i, key in ipairs(b.keys) do cache_put(c, key, ks[i], true) end -- debug-qualified
  cache_trim(c)
  return #ks
end

--- Compiles text on be under key, raising a vyre.lib error (with the cause) when the text
--- does not parse or validate: for kernels that embed user text (compact's predicate;
--- what: how the error names the text, default "the predicate").
function U.user_kernel(name, be, key, text, fix, what)
  local c
  c, key = cache_of(be, key)
  local k = cache_get(c, key)
  if k then return k end
  local ok, res = pcall(function() return be:compile(vyre.parse(text)) end)
  if not ok then
    local msg, why = E.parts(res)
    if why then msg = msg .. " Fix: " .. why end
    U.raise(name, (what or "the predicate") .. " does not compile (" .. msg .. ")", fix,
      E.code(res))
  end
  c.misses = c.misses + 1
  cache_put(c, key, res)
  return res
end

-- Scratch objects: role:type -> Buffer. A plain call builds its steps and runs them at
-- once, so its scratch (the backend's "call" object) may free a buffer it outgrows. A steps
-- list may be kept (be:graph, a later be:sequence), so the scratch behind it never frees a
-- buffer it outgrows: the steps list holds the old one, which goes with it.
local SCRATCH_MT = { __name = "vyre.lib.Scratch" }
SCRATCH_MT.__index = SCRATCH_MT
function SCRATCH_MT.__tostring(s)
  local n = 0
  for _ in pairs(s.bufs) do n = n + 1 end
  return ("vyre.lib.Scratch(%s, %d buffers)"):format(s.be.name, n)
end

--- A new scratch object for be; free_on_grow as above.
function U.new_scratch(be, free_on_grow)
  return setmetatable({ be = be, bufs = {}, free_on_grow = free_on_grow }, SCRATCH_MT)
end

function U.is_scratch(v) return getmetatable(v) == SCRATCH_MT end

--- s:free(): frees the buffers of the scratch object (steps built with it must not run
--- again; building new steps allocates afresh).
function SCRATCH_MT.free(s) U.free_scratch(s) end

--- The backend's own scratch object: "call" for plain calls, "steps" for steps forms
--- given no opts.scratch.
function U.default_scratch(be, which)
  local c = scratch[be]
  if not c then
    c = { call = U.new_scratch(be, true), steps = U.new_scratch(be, false) }
    scratch[be] = c
  end
  return c[which]
end

--- Checks opts.scratch of a steps form (a lib.scratch object of be, or nil); returns the
--- scratch object to use.
function U.scratch_of(name, be, s)
  if s == nil then return U.default_scratch(be, "steps") end
  if not U.is_scratch(s) then
    U.raise(name, "opts.scratch must be a vyre.lib.Scratch, got " .. describe(s),
      "make one with lib.scratch(be) and keep it alive as long as the steps")
  end
  if s.be ~= be then
    U.raise(name, "opts.scratch belongs to another backend",
      "make the scratch object with lib.scratch(be) for the backend you pass")
  end
  return s
end

--- A scratch buffer of type t with at least n elements from scratch object S (or, when S
--- is a backend, the backend's "call" object), kept per role, grown on demand. Calls on
--- one backend run one after another (each ends with one sync) and the steps of one list
--- run in order, so a role is never used by two launches at once.
-- role .. ":" .. t, made once per pair (the sort and scan builders ask ~30 times an
-- e-graph iteration)
local SKEYS = setmetatable({}, { __index = function(k, role)
  local v = setmetatable({}, { __index = function(kt, t)
    local s = role .. ":" .. t
    rawset(kt, t, s)
    return s
  end })
  rawset(k, role, v)
  return v
end })

function U.scratch(S, role, t, n)
  if not U.is_scratch(S) then S = U.default_scratch(S, "call") end
  local key = SKEYS[role][t]
  local b = S.bufs[key]
  -- S.caps: the count of each buffer made here (reading b.count is a C __index call);
  -- a buffer someone freed is still noticed
  local caps = S.caps
  if not caps then
    caps = setmetatable({}, { __mode = "k" })
    S.caps = caps
  end
  if b and caps[b] and caps[b] >= n and not b.freed then return b end
  if not b or b.freed or b.count < n then
    if b and not b.freed and S.free_on_grow then b:free() end
    b = S.be:buffer(t, math.max(n, 1))
    S.bufs[key] = b
    caps[b] = math.max(n, 1)
  end
  return b
end

--- Frees the buffers of scratch object S (steps built with it must not run again).
function U.free_scratch(S)
  for _, b in pairs(S.bufs) do
    if not b.freed then b:free() end
  end
  S.bufs = {}
end

--- Frees the scratch buffers and drops the compiled kernels kept for be.
function U.release(be)
  local c = scratch[be]
  if c then
    U.free_scratch(c.call)
    U.free_scratch(c.steps)
  end
  scratch[be] = nil
  kernels[be] = nil
end

-- Device counts ---------------------------------------------------------------------
-- A steps form given opts.count (a u32 Buffer) works on the first min(count[0], #buf)
-- elements, a number known only on the device when the steps run. Grids stay sized for
-- #buf; kernels read the count and compute their geometry from it exactly as the host
-- does for a plain call, so results are the plain call's on the same elements, bit for bit.

--- The device expression of U.chunks' chunk for the u32 expression n (at least one tile,
--- so that a division by it is defined).
local CHUNK = T.new("chunk", "(mul ${TILE}u32 (max 1u32 (div (add (div (add $N ${TILE_M1}u32) "
  .. "${TILE}u32) ${MAXG_M1}u32) ${MAXG}u32)))")

function U.chunk_expr(n)
  return CHUNK:render({ N = n })
end

--- Checks opts.count: nil, or a u32 Buffer of at least one element that shares no memory
--- with the outputs (a list of {Buffer, what}: the steps read the count all along);
--- returns it.
function U.check_count(name, be, c, outputs)
  if c == nil then return nil end
  U.check_buffer(name, be, c, "opts.count", { "u32" })
  if c.count < 1 then
    U.raise(name, "opts.count is empty", "pass a u32 buffer whose element 0 holds the count")
  end
  for _, o in ipairs(outputs or {}) do
    U.check_disjoint(name, c, "opts.count", o[1], o[2], "keep the count in a buffer that "
      .. "the steps do not write (copy it first with lib.steps.copy)")
  end
  return c
end

-- A kernel template that works on the first n elements declares them with $NDECL (its
-- params n, and chunk for a chunked one), puts $NLETS before its first statement and,
-- tiled, binds ntiles with $TILES; U.with_count fills them for the host's count or for a
-- device count, so the two variants are one template.
local NDECL = T.new("ndecl", "  (param n u32)")
local NDECL_CHUNK = T.new("ndeclchunk", "  (param n u32)\n  (param chunk u32)")
local NDECL_DEV = T.new("ndecldev", "  (buffer ncount u32 read)\n  (param ncap u32)")
local NLETS_DEV = T.new("nletsdev", "  (let n1 (min (load ncount 0u32) ncap))\n$LETS")
-- A loop holding barriers must have a bound the validator sees as uniform (params only):
-- under a device count the tile loops run to ntmax (a bound over every count <= ncap),
-- and tiles past the real end hold only the identity and store nothing.
local TILES_DEV = T.new("ntilesdev", "  (let ntiles ntmax)")
local NTMAX = T.new("ntmax", "(let ntmax (div $CH ${TILE}u32))")

--- Fills args' $NDECL and $NLETS (and $TILES when o.tiles) and returns args. dev nil: the
--- host's count (params n, and chunk when o.chunk). dev a list of lets: a device count,
--- read from `ncount` (a u32 buffer, element 0) and bounded by `ncap` (the host's bound,
--- #buf); the lets ("(let n ...)", "(let chunk ...)") bind what the params did and may
--- use n1 = min(ncount[0], ncap). A tiled kernel whose lets bind no ntmax gets the bound
--- of the host's chunked geometry of ncap.
function U.with_count(args, dev, o)
  o = o or {}
  if not dev then
    args.NDECL = o.chunk and NDECL_CHUNK() or NDECL()
    args.NLETS = ""
    if o.tiles then args.TILES = F.TILES() end
    return args
  end
  local lets = {}
  for i, l in ipairs(dev) do lets[i] = "  " .. l end
  if o.tiles then
    args.TILES = TILES_DEV()
    if not table.concat(dev, " "):find("(let ntmax", 1, true) then
      lets[#lets + 1] = NTMAX({ CH = U.chunk_expr("ncap") })
    end
  end
  args.NDECL = NDECL_DEV()
  args.NLETS = NLETS_DEV({ LETS = lets })
  return args
end

--- The kernel for key from gen(dev) (dev nil), or (count given) its device-count variant
--- gen(lets) (U.with_count).
function U.kernel_n(be, key, gen, count, lets)
  if not count then return U.kernel(be, key, function() return gen(nil) end) end
  return U.kernel(be, key .. "#dev:" .. table.concat(lets, ";"), function()
    return gen(lets)
  end)
end

--- Common lets: n = the count, chunk = its chunked geometry.
U.N_ELEMS = { "(let n n1)", "(let chunk " .. U.chunk_expr("n1") .. ")" }

-- Running ---------------------------------------------------------------------------

--- The timing of a call that launched nothing.
function U.no_time()
  return { wall_ns = 0, device_ns = 0, enqueue_ns = 0, wait_ns = 0 }
end

--- Runs steps as one be:sequence (one synchronisation), reading back `readback`.
--- Returns the list of Arrays and (when timed) the timing.
function U.run(name, be, steps, readback, timed)
  if #steps == 0 then
    return {}, timed and U.no_time() or nil
  end
  local ok, res, t = pcall(be.sequence, be, steps, { readback = readback, timed = timed })
  if not ok then
    if E.code(res) == "backend" then
      U.raise(name, "a buffer passed belongs to another backend object than the one passed",
        "create every buffer with the backend you pass to vyre.lib", "backend")
    end
    error(E.wrap(("vyre.lib.%s: "):format(name), res), 0)
  end
  return res, t
end

--- The launch options {grid = {g}} for g workgroups, one table per g shared by every
--- step that launches that many (the binding only reads a step's options): the step
--- builders of vyre.lib and vyre.egraph then make no new tables for their grids (an
--- e-graph iteration has ~200 steps). Nothing may modify a table U.grid returns.
local GRIDS = {}
function U.grid(g)
  local o = GRIDS[g]
  if not o then
    o = { grid = { g } }
    GRIDS[g] = o
  end
  return o
end

--- ceil(a / b) for non-negative integers.
function U.cdiv(a, b)
  return (a + b - 1) // b
end

--- The chunked geometry of a pass over n elements: chunk (a multiple of TILE) and the
--- number of workgroups G = ceil(n / chunk) <= MAXG.
function U.chunks(n)
  local ntiles = U.cdiv(n, U.TILE)
  local chunk = U.TILE * U.cdiv(ntiles, U.MAXG)
  return chunk, U.cdiv(n, chunk)
end

return U
