-- spec/lib_kernels.lua — every kernel vyre.lib builds, over a matrix of element types,
-- ops, sizes and options, as {key -> alpha-normalised canonical text hash}. Used by
-- scripts/gen-lib-fixture.lua (which recorded spec/lib_kernels_fixture.lua from the
-- hand-templated kernels) and by spec/92_lib_template_spec.lua (which checks that the
-- templated kernels of today hash the same).
--
-- The kernels are caught where vyre.lib compiles them (U.kernel / U.user_kernel), by
-- building the steps forms (and the plain calls' kernels) on the reference backend:
-- nothing runs. Each text goes through vyre's parser and printer (canonical text), then
-- its local names (let and for bindings) are renamed v1, v2, ... in binding order with
-- lexical scope, so hygienic prefixes may differ while any other change (an operation,
-- a constant, a statement's order, a buffer or param name) changes the hash.
local vyre = require("vyre")
local lib = require("vyre.lib")
local U = require("vyre.lib.util")
local onepass = require("vyre.lib.scan_onepass")
local seglb = require("vyre.lib.segmented_lb")

local K = {}

-- S-expressions -------------------------------------------------------------------------

local function parse_sexpr(text)
  local pos, stack, top = 1, {}, { {} }
  stack[1] = top[1]
  while true do
    local s, e = text:find("^%s+", pos)
    if s then pos = e + 1 end
    if pos > #text then break end
    local c = text:sub(pos, pos)
    if c == "(" then
      local l = {}
      local cur = stack[#stack]
      cur[#cur + 1] = l
      stack[#stack + 1] = l
      pos = pos + 1
    elseif c == ")" then
      stack[#stack] = nil
      pos = pos + 1
    elseif c == ";" then
      local _, e2 = text:find("^[^\n]*", pos)
      pos = e2 + 1
    else
      local _, e2 = text:find("^[^%s()]+", pos)
      local cur = stack[#stack]
      cur[#cur + 1] = text:sub(pos, e2)
      pos = e2 + 1
    end
  end
  return top[1][1]
end

local function print_sexpr(x, out)
  if type(x) == "string" then
    out[#out + 1] = x
    return
  end
  out[#out + 1] = "("
  for i, y in ipairs(x) do
    if i > 1 then out[#out + 1] = " " end
    print_sexpr(y, out)
  end
  out[#out + 1] = ")"
end

local BUILTIN = { gid = true, lid = true, wgid = true, wgsize = true, ngroups = true }

-- Renames the local names of program p (a parsed s-expression) in place.
local function alpha(p)
  local n = 0
  local function fresh()
    n = n + 1
    return "v" .. n
  end
  local function child(env) return setmetatable({}, { __index = env }) end
  local expr, block
  function expr(x, env)
    if type(x) == "string" then return env[x] or x end
    if BUILTIN[x[1]] then return x end
    for i = 2, #x do x[i] = expr(x[i], env) end
    return x
  end
  local function stmt(s, env)
    local h = s[1]
    if h == "let" then
      s[3] = expr(s[3], env)
      local v = fresh()
      env[s[2]] = v
      s[2] = v
    elseif h == "for" then
      for i = 3, 5 do s[i] = expr(s[i], env) end
      local inner = child(env)
      local v = fresh()
      inner[s[2]] = v
      s[2] = v
      block(s, 6, inner)
    elseif h == "if" then
      s[2] = expr(s[2], env)
      for i = 3, #s do block(s[i], 2, child(env)) end
    elseif h == "converge" then
      for i = 2, 3 do s[i] = expr(s[i], env) end
      block(s, 4, child(env))
    else
      for i = 2, #s do s[i] = expr(s[i], env) end
    end
  end
  function block(list, first, env)
    for i = first, #list do stmt(list[i], env) end
  end
  local env = {}
  for i = 4, #p do
    local h = p[i][1]
    if not (h == "buffer" or h == "shared" or h == "param" or h == "worklist") then
      stmt(p[i], env)
    end
  end
  return p
end

--- The alpha-normalised canonical text of kernel text (a string).
function K.normal_text(text)
  local canon = vyre.parse(text):text()
  local out = {}
  print_sexpr(alpha(parse_sexpr(canon)), out)
  return vyre.parse(table.concat(out)):text()
end

--- vyre's program hash (XXH3 of the canonical text) of K.normal_text(text).
function K.hash(text)
  return vyre.parse(K.normal_text(text)):hash()
end

-- The matrix --------------------------------------------------------------------------

local function with(cfg, values, fn)
  local old = {}
  for k, v in pairs(values) do old[k], cfg[k] = cfg[k], v end
  local ok, err = pcall(fn)
  for k in pairs(values) do cfg[k] = old[k] end
  if not ok then error(err, 0) end
end

local OPS = { "add", "min", "max" }
local PRED = { i32 = "(gt x 0i32)", u32 = "(gt x 3u32)", f32 = "(gt x 0x0p+0f32)",
  f64 = "(lt x 0x1p+0f64)", i64 = "(ne x 0i64)", u64 = "(gt x 1u64)", bool = "x" }

-- Builds every kernel of the matrix on be (a reference backend).
local function build_all(be)
  local S = lib.scratch(be)
  local cnt = be:buffer("u32", 1)
  local out1 = be:buffer("u32", 1)
  local SIZES = { 100, 40000 }
  local function counts(fn)
    fn(nil)
    fn(cnt)
  end
  for _, t in ipairs(U.ALL_TYPES) do
    local b = be:buffer(t, 100)
    counts(function(c)
      lib.steps.fill(be, b, t == "bool" and true or 1, { count = c, scratch = S })
      lib.steps.copy(be, b, be:buffer(t, 100), { count = c, scratch = S })
    end)
    lib.fill(be, b, t == "bool" and true or 1)
    -- compaction: by flags of each type and by a predicate
    for _, n in ipairs(SIZES) do
      local src, dst = be:buffer(t, n), be:buffer(t, n)
      local function all(ft_or_pred)
        local keep = ft_or_pred
        if ft_or_pred == "u32" or ft_or_pred == "i32" or ft_or_pred == "bool" then
          keep = be:buffer(ft_or_pred, n)
        end
        for _, enabled in ipairs({ true, false }) do
          with(onepass.config, { enabled = enabled }, function()
            counts(function(c)
              lib.steps.compact(be, src, keep, dst, { out = out1, count = c, scratch = S })
            end)
          end)
        end
      end
      all("u32")
      if n == 100 then
        all("i32")
        all("bool")
      end
      all(PRED[t])
    end
  end
  for _, t in ipairs(U.NUM_TYPES) do
    counts(function(c)
      lib.steps.iota(be, be:buffer(t, 100), 1, 2, { count = c, scratch = S })
    end)
    for _, n in ipairs({ 100, 5000, 40000 }) do
      local src, dst = be:buffer(t, n), be:buffer(t, n)
      local r = be:buffer(t, 1)
      for _, op in ipairs(OPS) do
        counts(function(c)
          lib.steps.reduce(be, src, op, { out = r, count = c, scratch = S })
        end)
        for _, excl in ipairs({ false, true }) do
          for _, enabled in ipairs({ true, false }) do
            with(onepass.config, { enabled = enabled }, function()
              counts(function(c)
                lib.steps.scan(be, src, dst, op, { exclusive = excl, count = c, scratch = S })
              end)
            end)
          end
        end
        -- runs: values of this type keyed by u32 keys
        local keys, kout = be:buffer("u32", n), be:buffer("u32", n)
        counts(function(c)
          lib.steps.reduce_by_key(be, keys, src, kout, dst, op,
            { out = out1, count = c, scratch = S })
        end)
      end
      counts(function(c)
        lib.steps.unique(be, src, dst, { out = out1, count = c, scratch = S })
        lib.steps.run_length(be, src, dst, be:buffer("u32", n),
          { out = out1, count = c, scratch = S })
      end)
      for _, bins in ipairs({ 16, 5000 }) do
        local lo, hi = 0, 100
        counts(function(c)
          lib.steps.histogram(be, src, bins, lo, hi, { out = be:buffer("u32", bins),
            count = c, scratch = S })
        end)
      end
      -- segmented: few long segments (the load-balanced long kernel) and the plain kernel
      local off = be:buffer("u32", { 0, 3, n // 2, n })
      for _, op in ipairs(OPS) do
        for _, enabled in ipairs({ true, false }) do
          with(seglb.config, { enabled = enabled }, function()
            lib.steps.segmented_reduce(be, src, off, be:buffer(t, 3), op, { scratch = S })
          end)
        end
        for _, excl in ipairs({ false, true }) do
          lib.steps.segmented_scan(be, src, off, dst, op, { exclusive = excl, scratch = S })
        end
      end
    end
    -- the one-pass knobs spec 86 turns
    local src, dst = be:buffer(t, 40000), be:buffer(t, 40000)
    for _, cfg in ipairs({ { lag = 3 }, { items = 4, window = 64 }, { small = 1 } }) do
      with(onepass.config, cfg, function()
        lib.steps.scan(be, src, dst, "add", { scratch = S })
        lib.steps.scan(be, src, dst, "max", { exclusive = true, scratch = S })
        lib.compact(be, src, be:buffer("u32", 40000), dst)
      end)
    end
  end
  -- sort: each key type, with values and without, a bits range and the numpy order
  for _, kt in ipairs({ "u32", "i32", "f32", "u64", "i64", "f64" }) do
    for _, n in ipairs({ 100, 40000 }) do
      local keys, vals = be:buffer(kt, n), be:buffer("u32", n)
      counts(function(c)
        lib.steps.sort(be, keys, vals, { count = c, scratch = S })
        lib.steps.sort(be, keys, nil, { count = c, scratch = S, bits = { 4, 20 } })
        if U.is_float(kt) then
          lib.steps.sort(be, keys, vals, { count = c, scratch = S, order = "numpy" })
          lib.steps.sort(be, keys, nil, { count = c, scratch = S, order = "numpy",
            bits = { 0, 16 } })
        end
      end)
    end
    -- the tile knob (an odd number of keys per invocation)
    local sortcfg = require("vyre.lib.sort").config
    with(sortcfg, { items = 5 }, function()
      lib.steps.sort(be, be:buffer(kt, 3000), be:buffer("i64", 3000), { scratch = S })
    end)
  end
end

--- {key -> hash} of every kernel the matrix builds (and {key -> text} as a second value).
function K.collect()
  local texts = {}
  local kernel, user_kernel = U.kernel, U.user_kernel
  local function note(key, text)
    if texts[key] and texts[key] ~= text then
      error("two texts for kernel key " .. key)
    end
    texts[key] = text
  end
  -- U.kernel's callers reach it through the module table (U.kernel_n too)
  U.kernel = function(be, key, gen)
    return kernel(be, key, function()
      local text = gen()
      note(key, text)
      return text
    end)
  end
  U.user_kernel = function(name, be, key, text, fix)
    note(key, text)
    return user_kernel(name, be, key, text, fix)
  end
  local be = vyre.backend("reference")
  -- from the knobs' defaults, whatever a spec run before this one left
  local saved, saved_lb = {}, seglb.config.enabled
  for k, v in pairs(onepass.config) do saved[k] = v end
  local c = onepass.config
  c.enabled, c.items, c.window, c.small, c.lag = true, nil, 256, 4, 0
  seglb.config.enabled = true
  local ok, err = pcall(build_all, be)
  for k in pairs(c) do c[k] = nil end
  for k, v in pairs(saved) do c[k] = v end
  seglb.config.enabled = saved_lb
  U.kernel, U.user_kernel = kernel, user_kernel
  lib.release(be)
  if not ok then error(err, 0) end
  local hashes = {}
  for key, text in pairs(texts) do hashes[key] = K.hash(text) end
  return hashes, texts
end

return K
