-- spec/egraph_proofs.lua — proof replay for the e-graph specs (98, 110): a small
-- S-expression reader of our own (the replay must not lean on vyre's parser), a
-- matcher, and a check that a proof of t1 = t2 is a chain of steps, each the before-term
-- rewritten once by the named rule at the named position.
local P = {}

-- A small S-expression reader of our own (the replay must not lean on vyre's parser).
function P.read(text)
  local pos = 1
  local function skip() pos = text:find("[^%s]", pos) or #text + 1 end
  local function item()
    skip()
    if text:sub(pos, pos) == "(" then
      pos = pos + 1
      local out = {}
      while true do
        skip()
        if text:sub(pos, pos) == ")" then pos = pos + 1 return out end
        out[#out + 1] = item()
      end
    end
    local s, e = text:find("^[^%s()]+", pos)
    assert(s, "bad term text: " .. text)
    pos = e + 1
    return text:sub(s, e)
  end
  return item()
end

function P.show(t)
  if type(t) == "string" then return t end
  local parts = {}
  for i, x in ipairs(t) do parts[i] = P.show(x) end
  return "(" .. table.concat(parts, " ") .. ")"
end

function P.at(t, path)
  for _, k in ipairs(path) do
    assert(type(t) == "table" and t[k + 1], "position past the term")
    t = t[k + 1]
  end
  return t
end

function P.replace(t, path, i, sub)
  i = i or 1
  if i > #path then return sub end
  local out = {}
  for j, x in ipairs(t) do out[j] = x end
  out[path[i] + 1] = P.replace(t[path[i] + 1], path, i + 1, sub)
  return out
end

-- Matches pattern p (parsed: "?x" variables, payload variables under leaves too)
-- against term t, extending bindings b; false when it does not match.
function P.match(p, t, b)
  if type(p) == "string" then
    if p:sub(1, 1) == "?" then
      local s = P.show(t)
      if b[p] and b[p] ~= s then return false end
      b[p] = s
      return true
    end
    return type(t) == "string" and t == p
  end
  if type(t) ~= "table" or #t ~= #p then return false end
  for i = 1, #p do
    if not P.match(p[i], t[i], b) then return false end
  end
  return true
end

-- Replays one step: true when after = before with the subterm at step.at rewritten once
-- by rule {lhs, rhs} in step.direction.
function P.replay(step, rule)
  local before, after = P.read(step.before), P.read(step.after)
  local path = step.at
  if P.show(P.replace(before, path, 1, P.at(after, path))) ~= P.show(after) then
    return false, "the terms differ outside position " .. table.concat(path, ".")
  end
  local from, to = P.read(rule[2]), P.read(rule[3])
  if step.direction == "<=" then from, to = to, from end
  local b = {}
  if not P.match(from, P.at(before, path), b) then return false, "the rule does not match" end
  if not P.match(to, P.at(after, path), b) then return false, "the result is not the rule's" end
  return true
end

-- Checks a whole proof of t1 = t2: a chain from t1's text to t2's, every step a rule
-- of `rules` (name -> {name, lhs, rhs}) replayed; returns the number of steps, or nil and
-- what is wrong (the specs assert it: busted's assert is theirs, not this module's).
function P.check(proof, t1, t2, rules)
  local cur = P.show(P.read(t1))
  for i, st in ipairs(proof) do
    if cur ~= st.before then
      return nil, ("step %d does not start where the last ended:\n  %s\n  %s"):format(i, cur,
        st.before)
    end
    local rule = rules[st.rule]
    if not rule then return nil, ("step %d names no rule of the workload: %s"):format(i,
      tostring(st.rule)) end
    local ok, why = P.replay(st, rule)
    if not ok then
      return nil, ("step %d (%s %s at %s): %s\n  %s\n  %s"):format(i, st.rule, st.direction,
        table.concat(st.at, "."), tostring(why), st.before, st.after)
    end
    cur = st.after
  end
  if P.show(P.read(t2)) ~= cur then return nil, "the proof does not end at the second term" end
  return #proof
end

--- rules by name: {{name, lhs, rhs}, ...} -> name -> rule
function P.by_name(list)
  local t = {}
  for _, r in ipairs(list) do t[r[1]] = r end
  return t
end

return P
