-- vyre.egraph.store — the device-resident state of an e-graph (docs/EGRAPH.md): its
-- buffers and their growth, the op registry, single adds and unions staged on the host
-- and flushed in one batch, bulk appends and bulk unions that never touch the nodes on
-- the host, and the small sequence runner with its error wording.
--
-- Counts: `nids` e-class ids ever handed out (ids are 0 .. nids-1, one per added e-node),
-- `nrows` e-nodes, `nwords` words of the children column; `dev` holds how many of each
-- are already on the device (the rest are staged). Every buffer is u32.
local U = require("vyre.lib.shared")
local E = require("vyre.errors")
local basic = require("vyre.lib.shared").basic
local K = require("vyre.egraph.kernels")

local S = {}

S.WG = 256
S.MAXU32 = 0xffffffff
-- Ids, rows and words are u32 on the device; kernels add 1 to an id here and there.
S.LIMIT = 0xfffffff0

-- Errors -------------------------------------------------------------------------------

--- Raises "vyre.EGraph:<fname>: <what>. Fix: <fix>" (a vyre.Error with `code`, default
--- "arg") at the caller's line (fname may be a full name such as "vyre.egraph" or
--- "vyre.egraph.from_image").
function S.raise(fname, what, fix, code)
  local full = fname:find("^vyre%.") and fname or ("vyre.EGraph:" .. fname)
  E.raise_outside("egraph", code or "arg", E.format(full, what, fix))
end

local mt_name = U.mt_name
S.mt_name = mt_name

function S.is_buffer(v) return mt_name(v) == "vyre.Buffer" end
function S.is_array(v) return mt_name(v) == "vyre.Array" end

-- Running ------------------------------------------------------------------------------

--- Runs steps as one be:sequence; returns the readback Arrays. While eg.clock is set
--- (during a rebuild) the sequence is timed and its times are added to it.
function S.run(eg, fname, steps, readback)
  if #steps == 0 then return {} end
  local clock = eg.clock
  local ok, res, t = pcall(eg.be.sequence, eg.be, steps,
    { readback = readback, timed = clock and true or nil })
  if not ok then
    local full = fname:find("^vyre%.") and fname or ("vyre.EGraph:" .. fname)
    error(E.wrap(full .. ": ", res), 0) -- keeps the cause's code (oom, lost, driver)
  end
  if clock then S.tick(clock, t) end
  return res
end

--- Adds a sequence timing to a clock {wall_ns, device_ns, sequences}.
function S.tick(clock, t)
  clock.wall_ns = clock.wall_ns + t.wall_ns
  clock.device_ns = clock.device_ns + (t.device_ns or 0)
  clock.sequences = clock.sequences + 1
end

--- The launch grid for n invocations.
-- One options table per block count, shared by every step that launches that many
-- blocks (the binding only reads a step's options): an iteration's ~200 steps make no
-- new tables for their grids. Nothing may modify a table S.grid returns.
local GRIDS = {}
function S.grid(n)
  local WG = S.WG
  local b = n > WG and (n + WG - 1) // WG or 1
  local g = GRIDS[b]
  if not g then
    g = { grid = { b } }
    GRIDS[b] = g
  end
  return g
end

--- Appends the launches that zero stat[0 .. n).
function S.zero_stat(eg, n, steps)
  basic.fill_steps(eg.be, eg.stat, 0, n, steps)
end

--- The u32 values of stat[0 .. n) read back by `res` (the Arrays of S.run).
function S.stat_readback(eg, n) return { eg.stat, 1, n } end

-- Buffers ------------------------------------------------------------------------------

S.ROW_COLS = { "row_class", "row_op", "row_off", "row_len" }

-- The capacity a buffer of `old` elements grows to for `need`: doubling, so that a graph
-- that doubles per iteration reallocates rarely, but by a quarter past 2^26 elements,
-- where the slack of doubling is gigabytes per column (iteration 13 of the math
-- workload holds about 7·10^8 rows; pieces.lua).
S.BIG = 1 << 26
function S.grown(old, need)
  if old >= S.BIG then return math.max(need, old + old // 4) end
  return math.max(need, 2 * old)
end

--- Makes eg[name] a u32 buffer of at least `need` elements, keeping its first `used`.
--- With steps (a list), the copy is appended there and the old buffer is appended to
--- steps.old, for the caller to free after running them.
function S.ensure(eg, name, need, used, steps)
  local b = eg[name]
  if b and b.count >= need then return b end
  local cap = math.max(1024, S.grown(b and b.count or 0, need))
  if cap > S.MAXU32 then cap = S.MAXU32 end
  local nb = eg.be:buffer("u32", cap)
  if b then
    local copy = used and used > 0 and { K.copy_range(eg.be), { src = b, dst = nb, n = used,
      src0 = 0, dst0 = 0 }, S.grid(used) }
    if steps then
      if copy then steps[#steps + 1] = copy end
      steps.old[#steps.old + 1] = b
    else
      if copy then S.run(eg, "grow", { copy }) end
      b:free()
    end
  end
  eg[name] = nb
  return nb
end

--- Room for rows, words and ids up to the given totals (device content kept; the
--- columns that grow are copied in one sequence).
function S.reserve(eg, rows, words, ids)
  if rows > S.LIMIT or words > S.LIMIT or ids > S.LIMIT then
    S.raise("add", ("the e-graph would exceed %d e-nodes, ids or child words"):format(S.LIMIT),
      "split the work over several e-graphs (ids are u32 on the device)")
  end
  local steps = { old = {} }
  for _, c in ipairs(S.ROW_COLS) do S.ensure(eg, c, rows, eg.dev.nrows, steps) end
  -- the epoch column (rebuild.lua's R.epochs) grows with the rows in this sequence,
  -- not in one of its own at the next rebuild
  if eg.row_epoch then
    S.ensure(eg, "row_epoch", eg.row_class.count, eg.epoch_rows or 0, steps)
  end
  S.ensure(eg, "children", words, eg.dev.nwords, steps)
  S.ensure(eg, "parent", ids, eg.dev.nids, steps)
  local old = steps.old
  steps.old = nil
  S.run(eg, "grow", steps)
  for _, b in ipairs(old) do b:free() end
end

--- A scratch buffer of exactly n elements per role (vyre.lib's primitives work on
--- whole buffers). It is a view of a per-role buffer that only grows (doubling), so a
--- size that changes every iteration costs no cuMemAlloc/cuMemFree (each one tens of
--- microseconds, and a free waits for the device). A caller that replaced eg.x_<role>
--- itself (a swap) gets the old exact allocation for that role from then on, so two
--- roles never alias one buffer.
local XKEY = setmetatable({}, { __index = function(k, role)
  local v = "x_" .. role
  rawset(k, role, v)
  return v
end })
function S.exact(eg, role, n, t)
  t = t or "u32"
  local n1 = n > 1 and n or 1
  local key = XKEY[role]
  local b = eg[key]
  local caps = eg.xcap
  local c = caps and caps[role]
  -- The common cases are decided on the host's record of the role (c.n: the view's
  -- count, c.t its type, c.cap the allocation's count) without asking the Buffers (each
  -- field read is a C __index call, and an iteration makes ~90 of these requests, most
  -- with a new size). While eg[key] is still the role's own view, neither it nor its
  -- allocation can have been freed: both are freed only here or by S.free, which drops
  -- eg.xcap.
  if c and b == c.view then
    if c.n == n1 and c.t == t then return b end
    if c.t == t and c.cap >= n1 then
      b = c.vw(c.buf, 1, n1)
      c.view, c.n = b, n1
      eg[key] = b
      return b
    end
  end
  if b and not b.freed and b.count == n1 and b.type == t then return b end
  if not caps then
    caps = {}
    eg.xcap = caps
  end
  if c and (b ~= c.view or c.buf.freed) then
    caps[role] = false -- swapped by its user: exact allocations from here on
    c = false
  end
  if c == false then
    if b and not b.freed then b:free() end
    b = eg.be:buffer(t, n1)
    eg[key] = b
    return b
  end
  if not c or c.buf.type ~= t or c.buf.count < n1 then
    local old = c and c.buf.count or 0
    if c then c.buf:free() end
    -- on a device, the first allocation covers the small sizes (below ~10^4 e-nodes
    -- nothing grows); the reference backend's memory is host memory, kept small
    local floor = eg.be.name == "reference" and 256 or 16384
    local cap = math.max(S.grown(old, n1), floor)
    local buf = eg.be:buffer(t, cap)
    -- vw: the Buffer's view method, looked up once (a lookup is a C __index call)
    c = { buf = buf, cap = cap, vw = buf.view }
    caps[role] = c
  end
  b = c.buf:view(1, n1)
  c.view, c.n, c.t = b, n1, t
  eg[key] = b
  return b
end

--- Frees the per-role scratch buffer whose current view is buf (a big one no longer
--- needed until the next iteration asks for it again); anything else is left alone.
function S.drop_scratch(eg, buf)
  for role, c in pairs(eg.xcap or {}) do
    if c and c.view == buf then
      c.buf:free()
      eg.xcap[role] = nil
      eg[XKEY[role]] = nil
      return
    end
  end
end

--- Frees every buffer the e-graph holds.
function S.free(eg)
  for _, c in pairs(eg.xcap or {}) do
    if c and not c.buf.freed then c.buf:free() end
  end
  eg.xcap = nil
  for k, v in pairs(eg) do
    if S.is_buffer(v) and not v.freed then v:free() end
    if S.is_buffer(v) then eg[k] = nil end
  end
end

-- Ops ----------------------------------------------------------------------------------

--- Registers op `name` with `arity` (and, for a leaf op, the payload type ptype: "i64",
--- "f64" or "sym"; payload.lua); returns its id (the same id when re-registered alike).
function S.op(eg, name, arity, ptype)
  if type(name) ~= "string" or not name:match("^[%a_][%w_%-%.%+%*/<>=!?]*$") then
    S.raise("op", ("op name must be a symbol string, got %s"):format(
      type(name) == "string" and ("'" .. name .. "'") or type(name)),
      "use a name such as \"Add\" (letters, digits, _ - . + * / < > = ! ?; no spaces)")
  end
  if math.type(arity) ~= "integer" or arity < 0 or arity > 64 then
    S.raise("op", ("arity of '%s' must be an integer in [0, 64], got %s"):format(name,
      tostring(arity)), "pass the number of children, e.g. eg:op(\"Add\", 2); 0 for leaves")
  end
  if ptype ~= nil and (not require("vyre.egraph.payload").TYPES[ptype] or arity ~= 0) then
    S.raise("op", ("payload type of '%s' must be \"i64\", \"f64\" or \"sym\" and is only for "
      .. "leaf ops (arity 0), got %s with arity %d"):format(name, tostring(ptype), arity),
      "e.g. eg:op(\"Num\", 0, \"f64\") or eg:op(\"Sym\", 0, \"sym\")")
  end
  local ops = eg.reg
  ops.ptype = ops.ptype or {}
  local id = ops.byname[name]
  if id then
    if ops.arity[id + 1] ~= arity then
      S.raise("op", ("op '%s' is already registered with arity %d, not %d"):format(name,
        ops.arity[id + 1], arity), "register each op once, or use another name")
    end
    if ptype ~= nil and (ops.ptype[id + 1] or "i64") ~= ptype then
      S.raise("op", ("op '%s' is already registered with payload type %s, not %s"):format(
        name, ops.ptype[id + 1] or "i64", ptype), "register each op once, or use another name")
    end
    return id
  end
  id = #ops.names
  ops.names[id + 1] = name
  ops.arity[id + 1] = arity
  ops.ptype[id + 1] = ptype or "i64"
  ops.byname[name] = id
  eg.leaf_dirty = true
  return id
end

--- The op id of `op` (name or id), checked; raises in fname's name.
function S.opid(eg, fname, op)
  local ops = eg.reg
  if type(op) == "string" then
    local id = ops.byname[op]
    if not id then
      S.raise(fname, ("unknown op '%s'"):format(op),
        ("register it first with eg:op(\"%s\", arity)"):format(op))
    end
    return id
  end
  if math.type(op) == "integer" and op >= 0 and op < #ops.names then return op end
  S.raise(fname, ("op must be a registered op name or id, got %s"):format(tostring(op)),
    "register ops with eg:op(name, arity) and pass the name or the id it returns")
end

-- Staging ------------------------------------------------------------------------------

--- Checks that c is an existing e-class id; returns it.
function S.check_id(eg, fname, c, what)
  if math.type(c) ~= "integer" or c < 0 or c >= eg.nids then
    S.raise(fname, ("%s must be an e-class id in [0, %d), got %s"):format(what, eg.nids,
      tostring(c)), "pass an id returned by eg:add, eg:leaf or eg:add_many")
  end
  return c
end

--- Stages one e-node (op id, words) and returns its new e-class id.
function S.stage(eg, op, words)
  local p = eg.pend
  local i = #p.op + 1
  p.op[i] = op
  p.len[i] = #words
  p.off[i] = #p.words
  for k = 1, #words do p.words[#p.words + 1] = words[k] end
  local id = eg.nids
  eg.nids = eg.nids + 1
  eg.nrows = eg.nrows + 1
  eg.nwords = eg.nwords + #words
  S.changed(eg)
  return id
end

--- Marks the graph as changed: congruence may be broken, caches are stale.
function S.changed(eg)
  eg.clean = false
  eg.groups = nil
  eg.snap = nil
  eg.nclasses = nil
  eg.qidx = nil
end

local function upload_isleaf(eg)
  local n = math.max(#eg.reg.names, 1)
  local flags = {}
  for i = 1, n do flags[i] = (eg.reg.arity[i] == 0) and 1 or 0 end
  if eg.isleaf and eg.isleaf.count >= n then
    eg.isleaf:upload(flags)
  else
    if eg.isleaf then eg.isleaf:free() end
    eg.isleaf = eg.be:buffer("u32", flags)
  end
  eg.leaf_dirty = false
end

--- Moves staged adds and unions to the device (one sequence), so the device holds the
--- whole graph. Leaves parent uncompressed after unions (eg.uf_dirty).
function S.flush(eg)
  if eg.leaf_dirty then upload_isleaf(eg) end
  local p = eg.pend
  local n = #p.op
  local steps = {}
  if n > 0 then
    S.reserve(eg, eg.nrows, eg.nwords, eg.nids)
    local be = eg.be
    local pop = S.exact(eg, "pend_op", n)
    pop:upload(p.op)
    local plen = S.exact(eg, "pend_len", n)
    plen:upload(p.len)
    local poff = S.exact(eg, "pend_off", n)
    poff:upload(p.off)
    local pw = S.exact(eg, "pend_words", #p.words)
    if #p.words > 0 then pw:upload(p.words) end
    steps[#steps + 1] = { K.append_rows(be), { pop = pop, plen = plen, poff = poff,
      pwords = pw, children = eg.children, row_class = eg.row_class, row_op = eg.row_op,
      row_off = eg.row_off, row_len = eg.row_len, parent = eg.parent, n = n,
      row0 = eg.dev.nrows, id0 = eg.dev.nids, word0 = eg.dev.nwords }, S.grid(n) }
  end
  local u = eg.punion
  local nu = #u // 2
  if nu > 0 then
    local pairs_buf = S.exact(eg, "pend_pairs", 2 * nu)
    pairs_buf:upload(u)
    S.zero_stat(eg, 1, steps)
    steps[#steps + 1] = { K.union_pairs(eg.be), { parent = eg.parent, pairs = pairs_buf,
      stat = eg.stat, n = nu, slot = 0 }, S.grid(nu) }
  end
  if #steps == 0 then return end
  local res = S.run(eg, "flush", steps, nu > 0 and { S.stat_readback(eg, 1) } or nil)
  eg.dev.nrows, eg.dev.nwords, eg.dev.nids = eg.nrows, eg.nwords, eg.nids
  eg.pend = { op = {}, len = {}, off = {}, words = {} }
  if nu > 0 then
    if eg.xlog then
      require("vyre.egraph.explain").log_pairs(eg, "flush", eg.x_pend_pairs, nu, 0)
    end
    eg.punion = {}
    eg.uf_dirty = true
    eg.merges = eg.merges + res[1][1]
  end
end

--- Flushes, then compresses parent if unions left it uncompressed: afterwards parent[x]
--- is x's canonical id for every id.
function S.settle(eg)
  S.flush(eg)
  if eg.uf_dirty and eg.dev.nids > 0 then
    S.run(eg, "compress", { { K.compress(eg.be), { parent = eg.parent, n = eg.dev.nids },
      S.grid(eg.dev.nids) } })
  end
  eg.uf_dirty = false
end

-- Bulk input -------------------------------------------------------------------------

-- The same bits as a u32 Array (i32 ids: a negative one becomes a huge, rejected id).
local function vyre_u32(a)
  return require("vyre").array("u32", a:bytes())
end

-- The columns eg:buffers() hands out: the kernels that read a caller's buffer write
-- these (and may grow them, freeing the old storage).
local OWN = { "parent", "row_class", "row_op", "row_off", "row_len", "children", "isleaf" }

--- Raises when buf shares memory with one of eg's own columns (compared by memory, so a
--- view of a column counts): reading it while the same call appends to or unites in
--- the e-graph would race with those writes.
function S.check_not_own(eg, fname, buf, what)
  for _, name in ipairs(OWN) do
    local col = eg[name]
    if col and not col.freed and U.overlap(buf, col) then
      S.raise(fname, ("%s shares memory with the e-graph's own %s column (eg:buffers())")
        :format(what, name), "copy the ids into a buffer of your own first (vyre.lib.copy)")
    end
  end
end

--- A u32 device buffer holding `src` (a u32 Buffer of this backend is used as is; an
--- Array or a table is uploaded to a scratch buffer), and its element count.
function S.device_u32(eg, fname, src, what, role)
  if S.is_buffer(src) then
    if src.freed then S.raise(fname, what .. " was freed", "pass a live buffer", "freed") end
    if src.type ~= "u32" then
      S.raise(fname, ("%s is a %s buffer"):format(what, src.type), "pass a u32 buffer of ids",
        "type")
    end
    if src.backend.name ~= eg.be.name then
      S.raise(fname, what .. " belongs to another backend",
        "create it with the e-graph's backend", "backend")
    end
    S.check_not_own(eg, fname, src, what)
    return src, src.count
  end
  if S.is_array(src) then
    if src.type ~= "u32" and src.type ~= "i32" then
      S.raise(fname, ("%s is a %s Array"):format(what, src.type),
        "pass a u32 (or i32) vyre.Array of ids")
    end
    local b = S.exact(eg, role, #src)
    if #src > 0 then b:upload(src.type == "u32" and src or vyre_u32(src)) end
    return b, #src
  end
  if type(src) == "table" and not getmetatable(src) then
    local n = #src
    local b = S.exact(eg, role, n)
    if n > 0 then
      local ok, err = pcall(b.upload, b, src)
      if not ok then
        S.raise(fname, what .. " holds a value that is not a u32 id (" .. E.parts(err) .. ")",
          "pass integer e-class ids", E.code(err))
      end
    end
    return b, n
  end
  S.raise(fname, ("%s must be a table, a vyre.Array or a u32 vyre.Buffer, got %s"):format(
    what, mt_name(src) or type(src)), "pass the ids as a flat list")
end

--- eg:add_many for an op of arity >= 1: rows for every `arity` ids of src.
function S.add_many(eg, fname, op, src)
  local arity = eg.reg.arity[op + 1]
  local buf, nwords = S.device_u32(eg, fname, src, "argument 2 (children)", "bulk")
  if nwords % arity ~= 0 then
    S.raise(fname, ("%d children is not a multiple of the arity %d of '%s'"):format(nwords,
      arity, eg.reg.names[op + 1]), "pass arity ids per e-node, flat: {c1, c2, c1, c2, ...}")
  end
  local n = nwords // arity
  S.flush(eg)
  local id0 = eg.nids
  if n == 0 then return id0, 0 end
  S.reserve(eg, eg.nrows + n, eg.nwords + nwords, eg.nids + n)
  local steps = {}
  S.zero_stat(eg, 1, steps)
  steps[#steps + 1] = { K.append_many(eg.be), { src = buf, children = eg.children,
    row_class = eg.row_class, row_op = eg.row_op, row_off = eg.row_off, row_len = eg.row_len,
    parent = eg.parent, stat = eg.stat, n = n, arity = arity, op = op, row0 = eg.nrows,
    id0 = id0, word0 = eg.nwords }, S.grid(n) }
  local res = S.run(eg, fname, steps, { S.stat_readback(eg, 1) })
  local bad = res[1][1]
  if bad > 0 then
    S.raise(fname, ("%d of the children are not existing e-class ids (< %d)"):format(bad, id0),
      "pass ids returned by earlier adds; nothing was added")
  end
  eg.nrows, eg.nwords, eg.nids = eg.nrows + n, eg.nwords + nwords, eg.nids + n
  eg.dev.nrows, eg.dev.nwords, eg.dev.nids = eg.nrows, eg.nwords, eg.nids
  S.changed(eg)
  return id0, n
end

--- eg:add_many for a leaf op: one leaf per payload (integers; Array or Buffer of i64,
--- u64, i32 or u32).
function S.add_leaves(eg, fname, op, src)
  local be = eg.be
  local buf, n, t
  if S.is_buffer(src) or S.is_array(src) then
    if S.is_buffer(src) and src.freed then
      S.raise(fname, "argument 2 (payloads) was freed", "pass a live buffer")
    end
    t = src.type
    if not U.list_has(K.LEAF_TYPES, t) then
      S.raise(fname, ("payloads of type %s"):format(t), "pass i64, u64, i32 or u32 payloads")
    end
    n = #src
    if S.is_buffer(src) then
      if src.backend.name ~= be.name then
        S.raise(fname, "argument 2 (payloads) belongs to another backend",
          "create it with the e-graph's backend", "backend")
      end
      S.check_not_own(eg, fname, src, "argument 2 (payloads)")
      buf = src
    else
      buf = S.exact(eg, "bulk_leaf", n, t)
      if n > 0 then buf:upload(src) end
    end
  elseif type(src) == "table" and not getmetatable(src) then
    t, n = "i64", #src
    local P = require("vyre.egraph.payload")
    if P.type_of(eg, op) ~= "i64" then
      local bits = {}
      for i = 1, n do
        local b, want = P.encode(eg, op, src[i])
        if not b then
          S.raise(fname, ("payload %d is %s, not %s"):format(i, tostring(src[i]), want),
            ("pass payloads of the op's type (%s)"):format(P.type_of(eg, op)))
        end
        bits[i] = b
      end
      src = bits
    end
    for i = 1, n do
      if math.type(src[i]) ~= "integer" then
        S.raise(fname, ("payload %d is %s, not an integer"):format(i, tostring(src[i])),
          "pass integer payloads")
      end
    end
    buf = S.exact(eg, "bulk_leaf", n, t)
    if n > 0 then buf:upload(src) end
  else
    S.raise(fname, ("argument 2 (payloads) must be a table, a vyre.Array or a vyre.Buffer, "
      .. "got %s"):format(mt_name(src) or type(src)), "pass the payloads as a list of integers")
  end
  S.flush(eg)
  local id0 = eg.nids
  if n == 0 then return id0, 0 end
  S.reserve(eg, eg.nrows + n, eg.nwords + 2 * n, eg.nids + n)
  S.run(eg, fname, { { K.append_leaf(be, t), { src = buf, children = eg.children,
    row_class = eg.row_class, row_op = eg.row_op, row_off = eg.row_off, row_len = eg.row_len,
    parent = eg.parent, n = n, op = op, row0 = eg.nrows, id0 = id0, word0 = eg.nwords },
    S.grid(n) } })
  eg.nrows, eg.nwords, eg.nids = eg.nrows + n, eg.nwords + 2 * n, eg.nids + n
  eg.dev.nrows, eg.dev.nwords, eg.dev.nids = eg.nrows, eg.nwords, eg.nids
  S.changed(eg)
  return id0, n
end

--- eg:union_many: the pairs (flat ids a1, b1, a2, b2, ..., or a table of {a, b}) are
--- checked on the device, then united there.
function S.union_many(eg, fname, src)
  if type(src) == "table" and not getmetatable(src) and type(src[1]) == "table" then
    local flat = {}
    for i, pr in ipairs(src) do
      if type(pr) ~= "table" or #pr ~= 2 then
        S.raise(fname, ("pair %d is not a table {a, b}"):format(i),
          "pass {{a, b}, ...} or a flat list {a1, b1, a2, b2, ...}")
      end
      flat[2 * i - 1], flat[2 * i] = pr[1], pr[2]
    end
    src = flat
  end
  local buf, nw = S.device_u32(eg, fname, src, "argument 1 (pairs)", "bulk_pairs")
  if nw % 2 ~= 0 then
    S.raise(fname, ("%d ids is not a whole number of pairs"):format(nw),
      "pass pairs as a flat list a1, b1, a2, b2, ...")
  end
  S.flush(eg)
  if nw == 0 then return 0 end
  local steps = {}
  S.zero_stat(eg, 1, steps)
  steps[#steps + 1] = { K.bad_ids(eg.be), { src = buf, stat = eg.stat, n = nw,
    limit = eg.nids }, S.grid(nw) }
  local res = S.run(eg, fname, steps, { S.stat_readback(eg, 1) })
  if res[1][1] > 0 then
    S.raise(fname, ("%d of the ids are not existing e-class ids (< %d)"):format(res[1][1],
      eg.nids), "pass ids returned by adds; nothing was united")
  end
  steps = {}
  S.zero_stat(eg, 1, steps)
  steps[#steps + 1] = { K.union_pairs(eg.be), { parent = eg.parent, pairs = buf,
    stat = eg.stat, n = nw // 2, slot = 0 }, S.grid(nw // 2) }
  res = S.run(eg, fname, steps, { S.stat_readback(eg, 1) })
  if eg.xlog then require("vyre.egraph.explain").log_pairs(eg, fname, buf, nw // 2) end
  eg.uf_dirty = true
  S.changed(eg)
  eg.merges = eg.merges + res[1][1]
  return res[1][1]
end

return S
