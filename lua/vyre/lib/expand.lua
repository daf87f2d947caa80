-- vyre.lib.expand — lib.steps.expand: one worklist round over a CSR graph, in one of three
-- expansion layouts (issue 23 §3; docs/GRID.md "Expansion layouts"). The caller writes
-- what a round does per item (prologue) and per entry (visit) as text; the module writes
-- the walk around it.
--   "item"      an invocation per item walks its item's whole row. Cheap for rows of a
--               few entries; on a skewed graph (R-MAT) one hub's row keeps one lane busy
--               while its subgroup's other lanes wait.
--   "subgroup"  the same, except that items of degree >= WARP leave their lane: the
--               subgroup ballots its heavy items and walks each one's row together, lane l
--               taking entries l, l + WARP, ... (coalesced loads of col, the hub's work
--               spread over a subgroup). A hub of R-MAT scale 22 (320k entries) is still
--               10k steps of one subgroup, and the round waits.
--   "edges"     edge-balanced (merge-path style): the round first writes each item's
--               degree (expand_degrees), scans them inclusively on the device
--               (lib.steps.scan with the item count in a 1-element buffer: no readback),
--               then a fixed grid strides over the round's entries in chunks of at most
--               EDGE_CHUNK: a chunk finds the item holding its first entry by one binary
--               search in the scanned degrees and walks on from there, item by item.
--               Every invocation gets the same number of entries whatever the degrees;
--               the cost is the degree and scan launches (up to four more layers in a
--               megakernel) and one search per chunk.
-- Which one: opts.layout, else vyre.policy.choose_expansion(opts.stats or the degree
-- statistics of rowptr). Every step returned carries `expansion = {layout, reason}`; be:plan
-- copies it into the plan (lua/vyre/plan_view.lua) and tostring(plan) prints it.
local T = require("vyre.lib.template")
local U = require("vyre.lib.util")
local G = require("vyre.lib.geometry")

local M = {}

M.LAYOUTS = { "item", "subgroup", "edges" }

-- The most entries per chunk of the "edges" layout: one binary search (about log2(items)
-- loads of the scanned degrees, cached) is shared by up to this many entries; rounds with
-- fewer entries than invocations x EDGE_CHUNK take smaller chunks (EDGES below).
M.EDGE_CHUNK = 16

-- The layouts' kernels. $DECLS: the caller's declarations; $OK: the item test (the
-- caller's guard folded in); $PRO/$VIS: the caller's texts with the names bound (the
-- subgroup layout's heavy walk gets its own copy, with its own locals: _PH/_VH).
local ITEM = T.new("expitem", [[
(program $NAME (workgroup ${WG})
  (buffer rowptr u32 read)
  (buffer col u32 read)
$DECLS
  (worklist frontier u32)
  (let i (gid x))
  (if $OK
    (then
      (let v (load frontier i))
$PRO
      (for e (load rowptr v) (load rowptr (add v 1u32)) 1u32
        (let w (load col e))
$VIS))))]])

-- Light items as in ITEM; then, for each heavy item of the subgroup in lane order (the
-- ballot's set bits), the whole subgroup walks its row. The shuffles that hand the item
-- to every lane run for all lanes on every lane (a subgroup op must not sit under the
-- ballot's test: the validator cannot know the test is subgroup-uniform).
local SUBGROUP = T.new("expsub", [[
(program $NAME (workgroup ${WG})
  (buffer rowptr u32 read)
  (buffer col u32 read)
$DECLS
  (worklist frontier u32)
  (let i (gid x))
  (let n (len frontier))
  (let ok $OK)
  (let v (load frontier (select ok i 0u32)))
  (let rb (load rowptr v))
  (let re (load rowptr (add v 1u32)))
  (let heavy (land ok (ge (sub re rb) ${WARP}u32)))
  (if (land ok (lnot heavy))
    (then
$PRO
      (for e rb re 1u32
        (let w (load col e))
$VIS)))
  (let hm (ballot heavy))
  (let lane (subgroup_lane))
  (for j 0u32 ${WARP}u32 1u32
    (let vh (shuffle v j))
    (let ih (shuffle i j))
    (if (ne (and hm (shl 1u32 j)) 0u32)
      (then
$PH
        (for eh (add (load rowptr vh) lane) (load rowptr (add vh 1u32)) ${WARP}u32
          (let wh (load col eh))
$VH)))))]])

-- The edge-balanced round's last step. escan[i] = the inclusive scan of the round's
-- degrees (item i's entries are the round's entries escan[i-1] .. escan[i]), total =
-- escan[n-1]. The chunk size csz is total / invocations rounded up, at least 1 and at
-- most $CHUNK: a small round (the hub's, early on) spreads over every invocation, one or
-- two entries each, instead of leaving most idle while a few walk $CHUNK entries in a
-- row; a large one takes chunks of $CHUNK and strides. Chunk c holds the round's
-- entries k0 = c*csz .. k1 = min(k0 + csz, total); its first item is the first i with
-- escan[i] > k0 (binary search over [0, n-1]); it then walks items i, i+1, ... taking
-- each one's entries that fall inside the chunk (a row that spans chunks is walked
-- piecewise by several invocations, each running the item's prologue: it must only
-- read). ib is item i's first round entry; zero-degree items take no entry.
local EDGES = T.new("expedges", [[
(program $NAME (workgroup ${WG})
  (buffer rowptr u32 read)
  (buffer col u32 read)
$DECLS
  (buffer escan u32 read)
  (worklist frontier u32)
  (let n (len frontier))
  (if $OK
    (then
      (let total (load escan (sub n 1u32)))
      (let stride (mul (ngroups x) ${WG}u32))
      (let csz (max 1u32 (min ${CHUNK}u32 (div (add total (sub stride 1u32)) stride))))
      (for c (gid x) (div (add total (sub csz 1u32)) csz) stride
        (let k0 (mul c csz))
        (let k1 (min (add k0 csz) total))
        (let lo 0u32)
        (let hi (sub n 1u32))
        (for s 0u32 32u32 1u32
          (if (ge lo hi) (then (break)))
          (let mid (add lo (shr (sub hi lo) 1u32)))
          (if (gt (load escan mid) k0)
            (then (set hi mid))
            (else (set lo (add mid 1u32)))))
        (let k k0)
        (let ib (select (eq lo 0u32) 0u32 (load escan (sub (max lo 1u32) 1u32))))
        (for i lo n 1u32
          (if (ge k k1) (then (break)))
          (let v (load frontier i))
          (let ie (load escan i))
$PRO
          (let rb (sub (load rowptr v) ib))
          (for e (add rb k) (add rb (min ie k1)) 1u32
            (let w (load col e))
$VIS)
          (set k (min ie k1))
          (set ib ie))))))]])

-- The edge-balanced round's first step: item i's degree into escan[i], and the item count
-- into ecount[0] for the scan's device count (written by item 0: a round runs with at
-- least one item, and a stale count only rescans what the expansion then ignores, as
-- it reads (len frontier) itself).
local DEGREES = T.new("expdeg", [[
(program expand_degrees (workgroup ${WG})
  (buffer rowptr u32 read)
  (buffer escan u32 write)
  (buffer ecount u32 write)
  (worklist frontier u32)
  (let i (gid x))
  (let n (len frontier))
  (if (lt i n)
    (then
      (let v (load frontier i))
      (store escan i (sub (load rowptr (add v 1u32)) (load rowptr v)))
      (if (eq i 0u32) (then (store ecount 0u32 n))))))]])

local FNAME = "steps.expand"

local function fail(what, fix, code) U.raise(FNAME, what, fix, code) end

-- The caller's text with its names bound: $V the item, $I its index among the round's
-- items, $E the entry, $W the neighbour (prologue: $V and $I only); @name a local of
-- this copy (the subgroup layout puts the texts in twice, so a plain let would bind one
-- name twice). copy: the copy's number, part of its locals' names.
local function bind(field, text, names, copy)
  local bad
  local out = text:gsub("%$(%u[%u%d]*)", function(p)
    local n = names[p]
    if not n then bad = bad or p end
    return n
  end)
  if bad then
    local allowed = {}
    for _, p in ipairs({ "V", "I", "E", "W" }) do
      if names[p] then allowed[#allowed + 1] = "$" .. p end
    end
    fail(("opts.%s uses $%s, which it cannot name"):format(field, bad),
      ("write only %s there ($V the item, $I its index in the round, $E the entry of col, "
        .. "$W the neighbour col[$E])"):format(table.concat(allowed, ", ")))
  end
  return (out:gsub("@([%a_][%w_]*)", function(n) return ("_x%d_%s"):format(copy, n) end))
end

local function indent(text, pad)
  return (pad .. text:gsub("\n", "\n" .. pad))
end

-- The program text of the expansion step in layout lay (o: the checked options).
function M.text(lay, o)
  local function pro(v, i, copy)
    return o.prologue and indent(bind("prologue", o.prologue, { V = v, I = i }, copy), "      ")
      or ""
  end
  local function vis(v, i, e, w, copy)
    return indent(bind("visit", o.visit, { V = v, I = i, E = e, W = w }, copy), "        ")
  end
  local function ok(cond)
    return o.guard and ("(land %s %s)"):format(o.guard, cond) or cond
  end
  local name = ("%s_%s"):format(o.name, lay)
  local decls = o.decls and indent(o.decls, "  ") or ""
  if lay == "item" then
    return ITEM:render({ NAME = name, DECLS = decls, OK = ok("(lt i (len frontier))"),
      PRO = pro("v", "i", 1), VIS = vis("v", "i", "e", "w", 1) })
  elseif lay == "subgroup" then
    return SUBGROUP:render({ NAME = name, DECLS = decls, OK = ok("(lt i n)"),
      PRO = pro("v", "i", 1), VIS = vis("v", "i", "e", "w", 1),
      PH = pro("vh", "ih", 2), VH = vis("vh", "ih", "eh", "wh", 2) })
  end
  return EDGES:render({ NAME = name, DECLS = decls, OK = ok("(gt n 0u32)"),
    CHUNK = o.chunk, PRO = pro("v", "i", 1), VIS = vis("v", "i", "e", "w", 1) })
end

--- Invocations of the edge-balanced step: the device's resident threads (SMs x threads
--- per SM; they stride over the round's chunks), but no more than the chunks of the
--- whole graph's entries (a small graph on the reference runs a few workgroups).
function M.edge_threads(be, entries, chunk)
  local ok, p = pcall(be.profile, be)
  local resident = ok and type(p) == "table" and (p.sms or 0) * (p.max_threads_per_sm or 0) or 0
  if resident <= 0 then resident = 132 * 2048 end
  local chunks = (entries + chunk - 1) // chunk
  local n = math.max(1, math.min(resident, chunks))
  return (n + G.WG - 1) // G.WG * G.WG
end

local OPTS = { "rowptr", "col", "frontier", "visit", "prologue", "decls", "args", "guard",
  "layout", "stats", "name", "scratch", "threads", "chunk" }
local RESERVED = { rowptr = true, col = true, frontier = true, escan = true, ecount = true }

local function check(be, o)
  U.check_backend(FNAME, be)
  if type(o) ~= "table" then
    fail(("argument 2 must be an options table (got %s)"):format(type(o)),
      "pass {rowptr = Buffer, col = Buffer, frontier = Worklist, visit = \"text\"}", "type")
  end
  o = U.check_opts(FNAME, o, OPTS, 2)
  U.check_buffer(FNAME, be, o.rowptr, "opts.rowptr", { "u32" })
  U.check_buffer(FNAME, be, o.col, "opts.col", { "u32" })
  if U.mt_name(o.frontier) ~= "vyre.Worklist" or o.frontier.type ~= "u32" then
    fail(("opts.frontier must be a u32 vyre.Worklist (got %s)"):format(U.mt_name(o.frontier)
      or type(o.frontier)), "pass be:worklist(\"u32\", capacity): the round's items", "type")
  end
  if type(o.visit) ~= "string" then
    fail(("opts.visit must be text (got %s)"):format(type(o.visit)), "pass the statements run "
      .. "per entry, e.g. \"(atomic add hits $W 1u32)\" ($W the neighbour)", "type")
  end
  for _, k in ipairs({ "prologue", "decls", "guard", "name" }) do
    if o[k] ~= nil and type(o[k]) ~= "string" then
      fail(("opts.%s must be text (got %s)"):format(k, type(o[k])), "pass a string or leave "
        .. "it out", "type")
    end
  end
  if o.name and not o.name:find("^[%a_][%w_]*$") then
    fail(("opts.name '%s' is not a program name"):format(o.name), "use letters, digits and _")
  end
  if o.args ~= nil and type(o.args) ~= "table" then
    fail(("opts.args must be a table (got %s)"):format(type(o.args)),
      "pass {name = Buffer or value} for the names opts.decls declares", "type")
  end
  for k in pairs(o.args or {}) do
    if RESERVED[k] then
      fail(("opts.args binds '%s', a name the expansion binds itself"):format(tostring(k)),
        "pass rowptr, col and frontier as opts.rowptr, opts.col, opts.frontier; escan and "
        .. "ecount are the edges layout's own")
    end
  end
  if o.layout ~= nil and not U.list_has(M.LAYOUTS, o.layout) then
    fail(("opts.layout '%s' is not 'item', 'subgroup' or 'edges'"):format(tostring(o.layout)),
      "pass one of them, or leave it out for vyre.policy.choose_expansion(opts.stats)")
  end
  for _, k in ipairs({ "threads", "chunk" }) do
    local v = o[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
      fail(("opts.%s must be an integer >= 1 (got %s)"):format(k, tostring(v)),
        "leave it out for the default")
    end
  end
  return o
end

-- The kernel of text on be, compiled once per text; a text that does not compile names
-- the layout and the cause (most often a name the caller's texts use undeclared).
local function kernel(be, lay, text)
  return U.user_kernel(FNAME, be, "expand:" .. text, text, "declare in opts.decls every "
    .. "buffer and param the texts use (and bind it in opts.args); bind locals as @name",
    ("the %s layout's kernel"):format(lay))
end

--- impl("steps.expand", be, opts) -> steps (lib.steps.expand; help: vyre.lib.steps.expand).
function M.steps_form(_, be, o)
  o = check(be, o)
  local choice
  if o.layout then
    choice = { layout = o.layout, reason = "forced (opts.layout)" }
  else
    local policy = require("vyre.policy")
    choice = policy.choose_expansion(o.stats or policy.degree_stats(o.rowptr))
  end
  local lay = choice.layout
  local expansion = { layout = lay, reason = choice.reason }
  local t = { decls = o.decls, prologue = o.prologue, visit = o.visit, guard = o.guard,
    name = o.name or "expand", chunk = o.chunk or M.EDGE_CHUNK }
  local wl = o.frontier
  local args = { rowptr = o.rowptr, col = o.col, frontier = wl }
  for k, v in pairs(o.args or {}) do args[k] = v end
  local k = kernel(be, lay, M.text(lay, t))
  if lay ~= "edges" then return { { k, args, { n = wl }, expansion = expansion } } end
  local lib = require("vyre.lib")
  local escan, ecount = be:buffer("u32", math.max(wl.capacity, 1)), be:buffer("u32", 1)
  local S = U.scratch_of(FNAME, be, o.scratch)
  local steps = { { U.kernel(be, "expand_degrees", function() return DEGREES:render({}) end),
    { rowptr = o.rowptr, escan = escan, ecount = ecount, frontier = wl }, { n = wl },
    expansion = expansion } }
  for _, s in ipairs(lib.steps.scan(be, escan, escan, { count = ecount, scratch = S })) do
    s.expansion = expansion
    steps[#steps + 1] = s
  end
  args.escan = escan
  steps[#steps + 1] = { k, args, { n = o.threads or M.edge_threads(be, o.col.count, t.chunk) },
    expansion = expansion }
  return steps
end

return M
