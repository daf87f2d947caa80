-- vyre.egraph.image — e-class groups and the device image (docs/EGRAPH.md, "Image").
--
-- The image is the original system's layout (docs/EGRAPH.md "Image"), one u32 slab:
--   row e-class ids [R], row op ids [R], row children offsets [R], row children lengths
--   [R], row signatures [R], children [C], group e-class ids [G] (sorted, unique), group
--   offsets [G+1] (into group rows), group rows [R] (row indices grouped by e-class,
--   ascending within a group),
-- with a span table giving each part's byte offset, byte length and count, plus the op
-- registry. Class ids and children are canonical; children offsets are relative to the
-- children span. Leaf rows (ops of arity 0) hold their payload as two children words.
--
-- Format versions (spans.version): 1 (no field) had i64 payloads only; 2 adds each op's
-- payload type (spans.ops[i].ptype) and the interned strings (spans.symbols, symbol
-- number k at index k + 1), so f64 and sym leaves mean the same after from_image; 3 adds
-- the analyses' declarations (spans.analyses, image_analyses.lua), declared again by
-- from_image in their order.
local lib = require("vyre.lib")
local scan = require("vyre.lib.shared").scan
local S = require("vyre.egraph.store")
local SC = require("vyre.egraph.schema") -- column declarations (schema.lua)
local K = require("vyre.egraph.kernels")
local R = require("vyre.egraph.rebuild")
local P = require("vyre.egraph.payload")
local IA = require("vyre.egraph.image_analyses")

local M = {}

-- from_image's bound on spans.nids: ids per word of the image, plus a constant (see
-- check_spans).
M.IDS_PER_WORD, M.IDS_SLACK = 16, 4096

-- the span table's format version eg:image() writes; from_image reads 1 to 3
M.VERSION = 3

M.SPANS = { "row_eclass", "row_op", "row_children_offset", "row_children_len",
  "row_signature", "children", "group_eclass", "group_offset", "group_rows" }

--- Canonical rows (settled, dense children) and their groups by e-class:
--- eg.groups = {n, count, cls, off, rows} (exact-size buffers), cached until a change.
function M.groups(eg, fname)
  if eg.groups then return eg.groups end
  S.settle(eg)
  if eg.garbage then R.compact_children(eg, fname) end
  R.canon(eg, fname)
  local be, n = eg.be, eg.dev.nrows
  local keys = S.exact(eg, "gkeys", n)
  local rows = S.exact(eg, "grows", n)
  if n == 0 then
    eg.groups = { n = 0, count = 0, cls = S.exact(eg, "gcls", 0), off = S.exact(eg, "goff", 1),
      rows = rows }
    eg.groups.off:zero()
    return eg.groups
  end
  S.run(eg, fname, { { K.copy_range(be), { src = eg.row_class, dst = keys, n = n, src0 = 0,
    dst0 = 0 }, S.grid(n) } })
  lib.iota(be, rows)
  lib.sort(be, keys, rows)
  local flag = S.exact(eg, "gflag", n)
  local rank = S.exact(eg, "grank", n)
  local steps = { { K.flags(be), { keys = keys, flag = flag, n = n }, S.grid(n) } }
  scan.steps(be, "u32", "add", true, flag, rank, n, steps)
  local res = S.run(eg, fname, steps, { { rank, n, 1 }, { flag, n, 1 } })
  local g = res[1][1] + res[2][1]
  local cls = S.exact(eg, "gcls", g)
  local off = S.exact(eg, "goff", g + 1)
  S.run(eg, fname, { { K.groups(be), { keys = keys, flag = flag, rank = rank, gcls = cls,
    goff = off, n = n, ng = g }, S.grid(n) } })
  eg.groups = { n = n, count = g, cls = cls, off = off, rows = rows }
  eg.nclasses = g
  return eg.groups
end

local function ops_table(eg)
  local ops = {}
  for i, name in ipairs(eg.reg.names) do
    ops[i] = { name = name, arity = eg.reg.arity[i], ptype = P.type_of(eg, i - 1) }
  end
  return ops
end

--- eg:image([opts]) -> a new u32 Buffer holding the image, and its span table;
--- opts.analyses = false leaves the analyses' declarations out (spans.analyses = false).
function M.image(eg, fname, opts)
  if opts ~= nil and type(opts) ~= "table" then
    S.raise(fname, "argument 1 (opts) must be a table, got " .. type(opts),
      "pass {analyses = false} or nothing")
  end
  for k in pairs(opts or {}) do
    if k ~= "analyses" then
      S.raise(fname, ("unknown option '%s'"):format(tostring(k)),
        "the only option is analyses = false")
    end
  end
  if opts and opts.analyses ~= nil and opts.analyses ~= false then
    S.raise(fname, "analyses must be false or left out, got " .. tostring(opts.analyses),
      "pass {analyses = false} to leave the analyses out, or nothing to keep them")
  end
  -- refused before any device work: a declaration that is not data
  local analyses = IA.section(eg, fname, opts and opts.analyses)
  local g = M.groups(eg, fname)
  local be, n, c, ng = eg.be, eg.dev.nrows, eg.dev.nwords, g.count
  local keys = R.canon(eg, fname) -- signatures of the canonical rows
  local parts = {
    { "row_eclass", eg.row_class, n }, { "row_op", eg.row_op, n },
    { "row_children_offset", eg.row_off, n }, { "row_children_len", eg.row_len, n },
    { "row_signature", keys, n }, { "children", eg.children, c },
    { "group_eclass", g.cls, ng }, { "group_offset", g.off, ng + 1 },
    { "group_rows", g.rows, n },
  }
  local total = 0
  for _, p in ipairs(parts) do total = total + p[3] end
  local slab = be:buffer("u32", math.max(total, 1))
  local spans = { nrows = n, nwords = c, ngroups = ng, nids = eg.dev.nids,
    ops = ops_table(eg), bytes = 4 * total, version = M.VERSION, symbols = {},
    analyses = analyses, nanalyses = analyses and #analyses or 0 }
  -- the interned strings in symbol-number order (payload.lua), the leaves' sym words
  if eg.syms then
    for i, name in ipairs(eg.syms.names) do spans.symbols[i] = name end
  end
  local steps, at = {}, 0
  for _, p in ipairs(parts) do
    spans[p[1]] = { offset = 4 * at, bytes = 4 * p[3], count = p[3] }
    if p[3] > 0 then
      steps[#steps + 1] = { K.copy_range(be), { src = p[2], dst = slab, n = p[3], src0 = 0,
        dst0 = at }, S.grid(p[3]) }
    end
    at = at + p[3]
  end
  S.run(eg, fname, steps)
  return slab, spans
end

local CHECK = [[
(program eg_check_image (workgroup 256)
  (buffer arity u32 read)
  (buffer plim u32 read)
  (columns read children row_class row_op row_off row_len)
  (columns read_write stat)
  (param n u32)
  (param nops u32)
  (param nwords u32)
  (param nids u32)
  (let r (gid x))
  (let bad 0u32)
  (let mx 0u32)
  (if (lt r n)
    (then
      (let op (load row_op r))
      (let o (load row_off r))
      (let len (load row_len r))
      (let ar (load arity op))
      (set mx (add (load row_class r) 1u32))
      (if (lor (ge op nops) (lor (gt o nwords) (gt len (sub nwords o))))
        (then (set bad 1u32))
        (else
          (if (eq ar 0u32)
            (then
              (if (ne len 2u32)
                (then (set bad 1u32))
                (else
                  (let lim (load plim op))
                  (if (land (ne lim 0u32) (lor (ne (load children (add o 1u32)) 0u32)
                        (ge (load children o) (sub lim 1u32))))
                    (then (set bad 1u32))))))
            (else
              (if (ne len ar)
                (then (set bad 1u32))
                (else
                  (for k 0u32 len 1u32
                    (let ch (load children (add o k)))
                    (if (ge ch nids) (then (set bad 1u32)))
                    (set mx (max mx (add ch 1u32))))))))))
      (if (ge (load row_class r) nids) (then (set bad 1u32)))))
  (let sb (subgroup_reduce add bad))
  (let sm (subgroup_reduce max mx))
  (if (eq (subgroup_lane) 0u32)
    (then
      (if (ne sb 0u32) (then (atomic add stat 0u32 sb)))
      (if (ne sm 0u32) (then (atomic max stat 1u32 sm))))))
]]

-- plim[op]: 0, or for a sym leaf op the number of spans.symbols + 1: such a leaf's
-- payload (low, high) must be (k, 0) with k a symbol's number.
local function check_kernel(be)
  return require("vyre.lib.shared").kernel(be, "egraph:check_image",
    function() return SC.expand(CHECK) end)
end

local function check_spans(fname, spans, nbytes)
  if type(spans) ~= "table" then
    S.raise(fname, "argument 3 (spans) must be the span table eg:image() returned, got "
      .. type(spans), "pass both values of eg:image()")
  end
  local ver = spans.version
  if ver == nil then ver = 1 end
  if math.type(ver) ~= "integer" or ver < 1 then
    S.raise(fname, ("spans.version must be a format version (1 or %d), got %s"):format(
      M.VERSION, tostring(spans.version)), "pass the span table eg:image() returned")
  end
  if ver > M.VERSION then
    S.raise(fname, ("the image is format version %d; this vyre reads versions 1 to %d")
      :format(ver, M.VERSION), "load it with the vyre that made it, or make the image again "
      .. "with this vyre's eg:image()")
  end
  if ver == 1 and spans.symbols ~= nil then
    S.raise(fname, "spans.symbols is set but spans.version is not (a version 1 image has "
      .. "i64 payloads only)", "pass the span table eg:image() returned, unchanged")
  end
  if spans.symbols ~= nil and type(spans.symbols) ~= "table" then
    S.raise(fname, "spans.symbols must be a list of strings, got " .. type(spans.symbols),
      "pass the span table eg:image() returned")
  end
  if type(spans.ops) ~= "table" then
    S.raise(fname, "spans.ops is missing", "pass the span table eg:image() returned")
  end
  local n, c, g = spans.nrows, spans.nwords, spans.ngroups
  for _, k in ipairs({ "nrows", "nwords", "ngroups", "nids" }) do
    local v = spans[k]
    if math.type(v) ~= "integer" or v < 0 or v > S.LIMIT then
      S.raise(fname, ("spans.%s must be a count, got %s"):format(k, tostring(v)),
        "pass the span table eg:image() returned")
    end
  end
  local want = { row_eclass = n, row_op = n, row_children_offset = n, row_children_len = n,
    row_signature = n, children = c, group_eclass = g, group_offset = g + 1, group_rows = n }
  for _, k in ipairs(M.SPANS) do
    local s = spans[k]
    if type(s) ~= "table" or math.type(s.offset) ~= "integer" or s.offset < 0
      or s.offset % 4 ~= 0 or s.count ~= want[k] or s.offset + 4 * want[k] > nbytes then
      S.raise(fname, ("span %s does not fit the image (%d bytes) and the counts"):format(k,
        nbytes), "pass the image buffer with the span table eg:image() returned for it")
    end
  end
  -- The loaded graph allocates and fills per-id arrays (parent, the match indexes) of
  -- nids entries, so nids is bounded by the image's length: else a few crafted words
  -- could cost gigabytes and minutes. eg:image() writes about one id per 4 words.
  local words = nbytes // 4
  local most = M.IDS_PER_WORD * words + M.IDS_SLACK
  if spans.nids > most then
    S.raise(fname, ("spans.nids is %d for an image of %d words, more than the %d ids (%d "
      .. "per word + %d) an image of that length may declare"):format(spans.nids, words, most,
      M.IDS_PER_WORD, M.IDS_SLACK), "pass the image and span table eg:image() returned (an "
      .. "e-graph whose ids are that sparse can be rebuilt from eg:extract's terms instead)")
  end
  return ver
end

--- vyre.egraph.from_image(be, image, spans): a new e-graph holding the image's e-nodes.
--- image is a u32 Buffer of be, a u32 vyre.Array or a binary string.
function M.from_image(new, be, image, spans)
  local fname = "vyre.egraph.from_image"
  -- the image's length, and the span table (with its analyses' section) checked against
  -- it on the host, before anything is made
  local nbytes
  if type(image) == "string" then
    if #image % 4 ~= 0 then
      S.raise(fname, ("the image string has %d bytes, not a whole number of u32 words")
        :format(#image), "pass the bytes of eg:image()'s buffer (buf:download():bytes())")
    end
    nbytes = #image
  elseif S.is_array(image) then
    if image.type ~= "u32" then
      S.raise(fname, "argument 2 is a " .. image.type .. " Array", "pass a u32 image")
    end
    nbytes = 4 * #image
  elseif not S.is_buffer(image) or image.freed or image.type ~= "u32" then
    S.raise(fname, "argument 2 must be a live u32 vyre.Buffer, a u32 vyre.Array or a string",
      "pass the buffer eg:image() returned (on the same kind of backend)")
  else
    nbytes = image.bytes
  end
  local ver = check_spans(fname, spans, nbytes)
  local decls = IA.check(fname, spans, ver)
  local eg = new(be, fname)
  local slab = image
  if not S.is_buffer(image) then
    local arr = type(image) == "string" and require("vyre").array("u32", image) or image
    slab = be:buffer("u32", math.max(#arr, 1))
    if #arr > 0 then slab:upload(arr) end
  end
  for i, o in ipairs(spans.ops) do
    if type(o) ~= "table" then
      S.raise(fname, ("spans.ops[%d] is not {name =, arity =}"):format(i),
        "pass the span table eg:image() returned")
    end
    -- version 1 had no payload types: every leaf was i64
    if o.ptype ~= nil and (not P.TYPES[o.ptype] or (o.arity ~= 0 and o.ptype ~= "i64")
      or (ver == 1 and o.ptype ~= "i64")) then
      S.raise(fname, ("spans.ops[%d] ('%s') has payload type %s"):format(i, tostring(o.name),
        tostring(o.ptype)), "pass the span table eg:image() returned (types: i64, f64, sym; "
        .. "only leaf ops have f64 or sym)")
    end
    local id = S.op(eg, o.name, o.arity, o.arity == 0 and o.ptype or nil)
    if id ~= i - 1 then
      S.raise(fname, ("op '%s' appears twice in spans.ops"):format(tostring(o.name)),
        "pass the span table eg:image() returned")
    end
  end
  -- the strings again in their order, so each symbol keeps its number
  local syms = spans.symbols or {}
  for i = 1, #syms do
    if type(syms[i]) ~= "string" then
      S.raise(fname, ("spans.symbols[%d] is a %s, not a string"):format(i, type(syms[i])),
        "pass the span table eg:image() returned")
    end
    if P.intern(eg, syms[i]) ~= i - 1 then
      S.raise(fname, ("spans.symbols[%d] ('%s') appears twice"):format(i, syms[i]),
        "pass the span table eg:image() returned")
    end
  end
  -- the analyses, declared again in their order before the columns are allocated (a
  -- declaration refused here frees what this call made)
  IA.load(eg, fname, decls, function()
    if not rawequal(slab, image) then slab:free() end
    S.free(eg)
  end)
  local n, c = spans.nrows, spans.nwords
  S.reserve(eg, n, c, 0)
  local steps = {}
  local function copy(span, dst, count)
    if count > 0 then
      steps[#steps + 1] = { K.copy_range(be), { src = slab, dst = dst, n = count,
        src0 = spans[span].offset // 4, dst0 = 0 }, S.grid(count) }
    end
  end
  copy("row_eclass", eg.row_class, n)
  copy("row_op", eg.row_op, n)
  copy("row_children_offset", eg.row_off, n)
  copy("row_children_len", eg.row_len, n)
  copy("children", eg.children, c)
  local nops = #eg.reg.names
  local arity = S.exact(eg, "arity", math.max(nops, 1))
  local ar = {}
  for i = 1, math.max(nops, 1) do ar[i] = eg.reg.arity[i] or 0 end
  arity:upload(ar)
  local plim = S.exact(eg, "plim", math.max(nops, 1))
  local pl = {}
  for i = 1, math.max(nops, 1) do
    pl[i] = (i <= nops and P.type_of(eg, i - 1) == "sym") and #syms + 1 or 0
  end
  plim:upload(pl)
  S.zero_stat(eg, 2, steps)
  if n > 0 then
    steps[#steps + 1] = { check_kernel(be), { arity = arity, plim = plim, children = eg.children,
      row_class = eg.row_class, row_op = eg.row_op, row_off = eg.row_off, row_len = eg.row_len,
      stat = eg.stat, n = n, nops = nops, nwords = c, nids = spans.nids }, S.grid(n) }
  end
  local res = S.run(eg, fname, steps, { S.stat_readback(eg, 2) })
  if not rawequal(slab, image) then slab:free() end
  if res[1][1] > 0 then
    S.free(eg)
    S.raise(fname, ("%d e-node rows of the image are malformed (op, children range, "
      .. "arity, or an e-class id not below spans.nids = %d), or name a symbol payload not "
      .. "in spans.symbols"):format(res[1][1], spans.nids),
      "pass an image made by eg:image()")
  end
  -- the saved id count (ids past the last referenced one stay unused, as on the saved
  -- graph), so that ids made after loading are those the saved graph would make
  local nids = math.max(res[1][2], spans.nids)
  eg.dev.nrows, eg.dev.nwords = n, c
  eg.nrows, eg.nwords = n, c
  S.ensure(eg, "parent", math.max(nids, 1), 0)
  if nids > 0 then lib.iota(be, eg.parent) end
  eg.dev.nids, eg.nids = nids, nids
  S.changed(eg)
  return eg
end

return M
