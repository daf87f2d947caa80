-- spec/egraph_oracle.lua — a pure-Lua e-graph used as the oracle of specs 40-43: a
-- union-find (the minimum id represents its set), a list of e-nodes, and a rebuild in
-- rounds that canonicalises every node against the union-find as it was at the start of
-- the round, keys each node by (op, words), unites each node with the first node of its
-- key and drops it. It is slow and obviously right; it follows the same round structure
-- as the device rebuild, so rounds, unions and the surviving nodes can be compared too.
-- Also: a random workload generator and a Lua extraction (least cost to a fixed point).
local O = {}
O.__index = O

function O.new()
  return setmetatable({ parent = {}, nodes = {}, nids = 0, ops = {} }, O)
end

--- Registers op name (arity) in the same order as the e-graph: returns its id.
function O:op(name, arity)
  self.ops[#self.ops + 1] = { name = name, arity = arity }
  return #self.ops - 1
end

function O:find(x)
  local p = self.parent
  local r = x
  while p[r] ~= r do r = p[r] end
  while p[x] ~= r do
    local nx = p[x]
    p[x] = r
    x = nx
  end
  return r
end

--- Unites a and b; true when two sets became one.
function O:union(a, b)
  local ra, rb = self:find(a), self:find(b)
  if ra == rb then return false end
  if ra < rb then self.parent[rb] = ra else self.parent[ra] = rb end
  return true
end

--- Adds a node (op id, words: child ids, or the payload's two words for a leaf).
function O:add(op, words)
  local id = self.nids
  self.nids = id + 1
  self.parent[id] = id
  self.nodes[#self.nodes + 1] = { op = op, cls = id, words = words }
  return id
end

function O:leaf(op, payload)
  return self:add(op, { payload & 0xffffffff, (payload >> 32) & 0xffffffff })
end

function O:is_leaf(op) return self.ops[op + 1].arity == 0 end

--- Rounds until nothing is united; returns rounds, unions.
function O:rebuild()
  local rounds, unions = 0, 0
  while #self.nodes > 0 do
    rounds = rounds + 1
    -- canonicalise against the union-find of the round's start
    local snap = {}
    for i = 0, self.nids - 1 do snap[i] = self:find(i) end
    for _, nd in ipairs(self.nodes) do
      nd.cls = snap[nd.cls]
      if not self:is_leaf(nd.op) then
        for k = 1, #nd.words do nd.words[k] = snap[nd.words[k]] end
      end
    end
    local first, kept, merged = {}, {}, 0
    for _, nd in ipairs(self.nodes) do
      local key = nd.op .. ":" .. table.concat(nd.words, ",")
      local f = first[key]
      if f then
        if self:union(nd.cls, f.cls) then merged = merged + 1 end
      else
        first[key] = nd
        kept[#kept + 1] = nd
      end
    end
    self.nodes = kept
    unions = unions + merged
    if merged == 0 then break end
  end
  for _, nd in ipairs(self.nodes) do nd.cls = self:find(nd.cls) end
  return rounds, unions
end

--- Number of e-classes that have nodes.
function O:classes()
  local seen, n = {}, 0
  for _, nd in ipairs(self.nodes) do
    local c = self:find(nd.cls)
    if not seen[c] then
      seen[c] = true
      n = n + 1
    end
  end
  return n
end

--- Least cost per class (op costs positive), best node per class = the first node of
--- least cost; returns the text of root's term and its cost.
function O:extract(root, cost)
  local cc = {}
  local changed = true
  local function node_cost(nd)
    local s = cost[self.ops[nd.op + 1].name]
    if not self:is_leaf(nd.op) then
      for _, ch in ipairs(nd.words) do
        local c = cc[self:find(ch)]
        if not c then return nil end
        s = s + c
      end
    end
    return s
  end
  while changed do
    changed = false
    for _, nd in ipairs(self.nodes) do
      local s = node_cost(nd)
      local c = self:find(nd.cls)
      if s and (not cc[c] or s < cc[c]) then
        cc[c] = s
        changed = true
      end
    end
  end
  local best = {}
  for _, nd in ipairs(self.nodes) do
    local c = self:find(nd.cls)
    if not best[c] and node_cost(nd) == cc[c] then best[c] = nd end
  end
  local function text(c)
    local nd = best[c]
    local name = self.ops[nd.op + 1].name
    if self:is_leaf(nd.op) then
      return ("(%s %d)"):format(name, nd.words[1] | (nd.words[2] << 32))
    end
    local parts = { "(" .. name }
    for _, ch in ipairs(nd.words) do parts[#parts + 1] = text(self:find(ch)) end
    return table.concat(parts, " ") .. ")"
  end
  local r = self:find(root)
  return text(r), cc[r]
end

-- Random workloads ---------------------------------------------------------------------

--- A deterministic xorshift generator: rand(n) in [0, n).
function O.rng(seed)
  local s = seed * 2654435761 + 1
  return function(n)
    s = s ~ (s << 13)
    s = s ~ (s >> 7)
    s = s ~ (s << 17)
    return (s & 0x7fffffff) % n
  end
end

O.OPS = { { "L", 0 }, { "f", 1 }, { "g", 2 }, { "h", 3 } }

--- A random workload of about n e-nodes: batches of leaves with few distinct payloads,
--- bulk adds with random children, single adds, and unions (bulk and single) between
--- batches. Returns the list of steps.
function O.workload(seed, n, opts)
  opts = opts or {}
  local rand = O.rng(seed)
  local steps, nids = {}, 0
  local payloads = opts.payloads or math.max(2, n // 20)
  local nleaf = math.max(2, n // 10)
  local leaves = {}
  for i = 1, nleaf do leaves[i] = rand(payloads) - (payloads // 2) end
  steps[#steps + 1] = { kind = "leaves", op = "L", payloads = leaves }
  nids = nids + nleaf
  while nids < n do
    local which = rand(3) + 2
    local arity = O.OPS[which][2]
    local m = math.min(n - nids, 1 + rand(math.max(1, n // 8)))
    local kids = {}
    for i = 1, m * arity do kids[i] = rand(nids) end
    steps[#steps + 1] = { kind = "nodes", op = O.OPS[which][1], children = kids }
    nids = nids + m
    local singles = rand(4)
    for _ = 1, singles do
      local w = rand(3) + 2
      local ch = {}
      for k = 1, O.OPS[w][2] do ch[k] = rand(nids) end
      steps[#steps + 1] = { kind = "add", op = O.OPS[w][1], children = ch }
      nids = nids + 1
    end
    local nu = rand(math.max(1, m // (opts.union_every or 15)) + 1)
    local pairs = {}
    for i = 1, 2 * nu do pairs[i] = rand(nids) end
    steps[#steps + 1] = { kind = "unions", pairs = pairs }
    if rand(2) == 0 then
      steps[#steps + 1] = { kind = "union", a = rand(nids), b = rand(nids) }
    end
  end
  return steps
end

--- Applies steps to an oracle.
function O:apply(steps)
  local ids = {}
  for i, o in ipairs(O.OPS) do ids[o[1]] = i - 1 end
  for _, st in ipairs(steps) do
    if st.kind == "leaves" then
      for _, p in ipairs(st.payloads) do self:leaf(ids[st.op], p) end
    elseif st.kind == "nodes" then
      local ar = self.ops[ids[st.op] + 1].arity
      for i = 0, #st.children // ar - 1 do
        local w = {}
        for k = 1, ar do w[k] = st.children[i * ar + k] end
        self:add(ids[st.op], w)
      end
    elseif st.kind == "add" then
      local w = {}
      for k, c in ipairs(st.children) do w[k] = c end
      self:add(ids[st.op], w)
    elseif st.kind == "unions" then
      for i = 1, #st.pairs, 2 do self:union(st.pairs[i], st.pairs[i + 1]) end
    else
      self:union(st.a, st.b)
    end
  end
end

--- Applies steps to a vyre e-graph (bulk steps through add_many / union_many, each in
--- the form given by `form`: "table", "array" or "buffer").
function O.apply_egraph(eg, steps, form)
  local vyre = require("vyre")
  local function conv(list, t)
    if form == "array" then return vyre.array(t or "u32", list) end
    if form == "buffer" then return eg.be:buffer(t or "u32", list) end
    return list
  end
  for _, st in ipairs(steps) do
    if st.kind == "leaves" then
      eg:add_many(st.op, conv(st.payloads, "i64"))
    elseif st.kind == "nodes" then
      eg:add_many(st.op, conv(st.children))
    elseif st.kind == "add" then
      eg:add(st.op, table.unpack(st.children))
    elseif st.kind == "unions" then
      eg:union_many(conv(st.pairs))
    else
      eg:union(st.a, st.b)
    end
  end
end

function O:register_ops()
  for _, o in ipairs(O.OPS) do self:op(o[1], o[2]) end
end

--- nil when the e-graph (rebuilt) holds exactly the oracle's nodes, in order, with the
--- same canonical ids, and every id has the same canonical id; else the first difference.
function O:diff(eg)
  local img, spans = eg:image()
  local a = img:download()
  img:free()
  if spans.nrows ~= #self.nodes then
    return ("e-nodes: e-graph %d, oracle %d"):format(spans.nrows, #self.nodes)
  end
  local base = {}
  for _, k in ipairs({ "row_eclass", "row_op", "row_children_offset", "row_children_len",
    "children" }) do
    base[k] = spans[k].offset // 4
  end
  for i, nd in ipairs(self.nodes) do
    local cls = a[base.row_eclass + i]
    local op = a[base.row_op + i]
    local off, len = a[base.row_children_offset + i], a[base.row_children_len + i]
    if cls ~= nd.cls or op ~= nd.op or len ~= #nd.words then
      return ("row %d: e-graph class %d op %d len %d, oracle class %d op %d len %d"):format(
        i - 1, cls, op, len, nd.cls, nd.op, #nd.words)
    end
    for k = 1, len do
      if a[base.children + off + k] ~= nd.words[k] then
        return ("row %d word %d: e-graph %d, oracle %d"):format(i - 1, k,
          a[base.children + off + k], nd.words[k])
      end
    end
  end
  local bufs, counts = eg:buffers()
  local parent = counts.ids > 0 and bufs.parent:download({ count = counts.ids }) or {}
  for x = 0, self.nids - 1 do
    if parent[x + 1] ~= self:find(x) then
      return ("find(%d): e-graph %d, oracle %d"):format(x, parent[x + 1], self:find(x))
    end
  end
  return nil
end

-- Rules (spec 43/44) ---------------------------------------------------------------------
-- A naive matcher and apply over the oracle, for rule records made by eg:rule (the
-- parser is shared; matching, guards, payload arithmetic and apply are this code's own).

local rules_mod = require("vyre.egraph.rules")

--- Every substitution of pattern t (a term of a rule record) rooted anywhere, as envs
--- {[0] = root class, var = class id | payload}; the graph must be rebuilt.
function O:matches(pat)
  local byclass = {}
  for _, nd in ipairs(self.nodes) do
    local c = self:find(nd.cls)
    byclass[c] = byclass[c] or {}
    table.insert(byclass[c], nd)
  end
  local match_class
  local function match_node(t, nd, env, out)
    if nd.op ~= t.op then return end
    if t.kind == "leaf" then
      local v = nd.words[1] | (nd.words[2] << 32)
      local p = t.payload
      if p.kind == "int" then
        if p.value == v then out[#out + 1] = env end
      elseif env[p.name] == nil then
        local e = setmetatable({ [p.name] = v }, { __index = env })
        out[#out + 1] = e
      elseif env[p.name] == v then
        out[#out + 1] = env
      end
      return
    end
    local envs = { env }
    for k, a in ipairs(t.args) do
      local nxt = {}
      for _, e in ipairs(envs) do match_class(a, self:find(nd.words[k]), e, nxt) end
      envs = nxt
    end
    for _, e in ipairs(envs) do out[#out + 1] = e end
  end
  match_class = function(t, c, env, out)
    if t.kind == "var" then
      if env[t.name] == nil then
        out[#out + 1] = setmetatable({ [t.name] = c }, { __index = env })
      elseif env[t.name] == c then
        out[#out + 1] = env
      end
      return
    end
    for _, nd in ipairs(byclass[c] or {}) do match_node(t, nd, env, out) end
  end
  local out = {}
  for _, nd in ipairs(self.nodes) do
    if nd.op == pat.op then
      local found = {}
      match_node(pat, nd, {}, found)
      for _, e in ipairs(found) do
        local flat = { [0] = self:find(nd.cls) }
        local x = e
        while x do
          for k, v in pairs(x) do if flat[k] == nil then flat[k] = v end end
          local mt = getmetatable(x)
          x = mt and mt.__index or nil
        end
        out[#out + 1] = flat
      end
    end
  end
  return out
end

--- The substitutions of a rule record: multi-pattern joins, `when` and `guard` applied.
function O:rule_matches(rule)
  local rows
  for k, pat in ipairs(rule.pats) do
    local mine = self:matches(pat)
    if k == 1 then
      rows = mine
    else
      local out = {}
      for _, r in ipairs(rows) do
        for _, q in ipairs(mine) do
          local ok = true
          for x, v in pairs(q) do
            if x ~= 0 and r[x] ~= nil and r[x] ~= v then ok = false end
          end
          if ok then
            local j = {}
            for x, v in pairs(r) do j[x] = v end
            for x, v in pairs(q) do if x ~= 0 then j[x] = v end end
            out[#out + 1] = j
          end
        end
      end
      rows = out
    end
  end
  local kept = {}
  for _, r in ipairs(rows) do
    local ok = not rule.when or rules_mod.eval(rule.when, r)
    if ok and rule.guard then
      local env = {}
      for x, v in pairs(r) do if x ~= 0 then env[x] = v end end
      ok = rule.guard(env)
    end
    if ok then kept[#kept + 1] = r end
  end
  return kept
end

--- Adds right-hand term t for env; returns its id.
function O:instantiate(t, env)
  if t.kind == "root" then return env[0] end
  if t.kind == "var" then return env[t.name] end
  if t.kind == "leaf" then return self:leaf(t.op, rules_mod.eval(t.payload, env)) end
  local w = {}
  for k, a in ipairs(t.args) do w[k] = self:instantiate(a, env) end
  return self:add(t.op, w)
end

--- Equality saturation with every rule every iteration: search all on the rebuilt graph,
--- apply all, rebuild. Returns per iteration {matches = {name = n}, nodes, classes}.
function O:saturate(rule_list, iterations)
  self:rebuild()
  local out = {}
  for it = 1, iterations do
    local found = {}
    local rec = { matches = {} }
    for i, rule in ipairs(rule_list) do
      found[i] = self:rule_matches(rule)
      rec.matches[rule.name] = #found[i]
    end
    for i, rule in ipairs(rule_list) do
      for _, env in ipairs(found[i]) do
        for _, pr in ipairs(rule.unions) do
          self:union(self:instantiate(pr[1], env), self:instantiate(pr[2], env))
        end
      end
    end
    self:rebuild()
    rec.nodes, rec.classes = #self.nodes, self:classes()
    out[it] = rec
  end
  return out
end

--- nil when the e-graph and the oracle hold the same partition of terms (an isomorphism
--- of their rebuilt e-graphs: same e-nodes up to renaming of e-classes); else the first
--- difference.
function O:same_partition(eg)
  local img, spans = eg:image()
  local a = img:download()
  img:free()
  local base = {}
  for _, k in ipairs({ "row_eclass", "row_op", "row_children_offset", "row_children_len",
    "children" }) do
    base[k] = spans[k].offset // 4
  end
  local nrows = spans.nrows
  if nrows ~= #self.nodes then
    return ("e-nodes: e-graph %d, oracle %d"):format(nrows, #self.nodes)
  end
  local hc = {}
  for _, nd in ipairs(self.nodes) do
    local w = {}
    for k, x in ipairs(nd.words) do w[k] = self:is_leaf(nd.op) and x or self:find(x) end
    hc[nd.op .. ":" .. table.concat(w, ",")] = self:find(nd.cls)
  end
  local map, back, done, ndone = {}, {}, {}, 0
  local progress = true
  while progress do
    progress = false
    for i = 1, nrows do
      if not done[i] then
        local op, off = a[base.row_op + i], a[base.row_children_offset + i]
        local len = a[base.row_children_len + i]
        local w, ok = {}, true
        for k = 1, len do
          local x = a[base.children + off + k]
          if self:is_leaf(op) then
            w[k] = x
          elseif map[x] then
            w[k] = map[x]
          else
            ok = false
            break
          end
        end
        if ok then
          local oc = hc[op .. ":" .. table.concat(w, ",")]
          if not oc then
            return ("row %d (op %d, words %s) has no oracle node"):format(i - 1, op,
              table.concat(w, ","))
          end
          local vc = a[base.row_eclass + i]
          if map[vc] and map[vc] ~= oc or back[oc] and back[oc] ~= vc then
            return ("e-class %d maps to oracle classes %s and %d"):format(vc,
              tostring(map[vc]), oc)
          end
          map[vc], back[oc] = oc, vc
          done[i] = true
          ndone = ndone + 1
          progress = true
        end
      end
    end
  end
  if ndone ~= nrows then
    return ("%d rows could not be mapped bottom-up"):format(nrows - ndone)
  end
  local _, classes = eg:size()
  if classes ~= self:classes() then
    return ("e-classes: e-graph %d, oracle %d"):format(classes, self:classes())
  end
  return nil
end

--- Two analysis values are equal: numbers and booleans, or the word lists of a "set"
--- analysis (missing words count as 0: a set that grew has more of them).
function O.same_value(a, b)
  if type(a) ~= "table" then return a == b end
  for i = 1, math.max(#a, #b) do if (a[i] or 0) ~= (b[i] or 0) then return false end end
  return true
end

--- The Lua fixed point of analysis name of e-graph eg (specs 112, 113): Kleene iteration
--- from bottom with the analysis's Lua closures (a "const" analysis joins its previous
--- value in, as its sweep does), the analyses it reads first; memo[name][class] = value.
function O.analysis_values(eg, name, memo)
  memo = memo or {}
  if memo[name] then return memo[name] end
  local an = eg.analyses[name]
  for _, dn in ipairs(an.deps) do O.analysis_values(eg, dn, memo) end
  local classes = eg:classes()
  local nodes, cur = {}, {}
  for _, c in ipairs(classes) do
    nodes[c] = eg:nodes(c)
    cur[c] = an.bottom
  end
  local opid = {}
  for i, o in ipairs(eg:ops()) do opid[o.name] = i - 1 end
  for _ = 1, 4 * #classes + 70 do
    local nxt, changed = {}, false
    for _, c in ipairs(classes) do
      local v = an.ty == "const" and cur[c] or an.bottom
      for _, n in ipairs(nodes[c]) do
        local f = an.makefn[opid[n.op]]
        if f then
          local kids = {}
          for k, ch in ipairs(n) do kids[k] = cur[eg:find(ch)] end
          local bits = n.payload
          if type(bits) == "string" then bits = eg:symbol(bits) end
          v = an.merge(v, f(bits, kids, function(dn, k)
            return memo[dn][k == "self" and c or eg:find(n[k + 1])]
          end))
        end
      end
      nxt[c] = v
      if not O.same_value(v, cur[c]) then changed = true end
    end
    cur = nxt
    if not changed then
      memo[name] = cur
      return cur
    end
  end
  error("the oracle did not settle")
end

return O
