-- 99: properties over what issues 20-25 added (issue 26 §6), on the reference backend
-- (and the fake CUDA driver, #fakecuda, for megakernel == sequence):
--   * optimised == unoptimised: p:optimize() gives bit-identical results, on
--     vyre.random_program programs and on generated worklist programs (len, load, push);
--   * fused == chain: vyre.fuse of a random elementwise chain equals the chain run as a
--     be:sequence, buffers bound as disjoint views of one allocation;
--   * megakernel == sequence: random step lists whose bindings include views of one
--     buffer (overlapping ones too: dependencies are by memory), and vyre.lib steps forms,
--     give the same buffers bit for bit; a worklist converging sequence gives the same
--     items and rounds through be:megakernel's converge = {worklist} form.
-- Every case is drawn from a seed; a failure names the seed and the list.
local vyre = require("vyre")
local lib = require("vyre.lib")
local H = require("spec.helpers")

local function rng(seed)
  local x = seed * 2654435761 + 12345
  return function(n)
    x = x ~ (x << 13)
    x = x ~ (x >> 7)
    x = x ~ (x << 17)
    return n and (x % n) or x
  end
end

local function bytes_of(out)
  local t = {}
  for name, arr in pairs(out) do t[#t + 1] = name .. "=" .. arr:bytes() end
  table.sort(t)
  return table.concat(t, "|")
end

-- ---- optimised == unoptimised ------------------------------------------------------

local SIZES = { bool = 4, i32 = 4, u32 = 4, f32 = 4, i64 = 8, u64 = 8, f64 = 8 }

local function args_for(p, r, n)
  local args = {}
  for _, d in ipairs(p:decls()) do
    if d.kind == "buffer" then
      local count = d.count ~= 0 and d.count or n
      local t = {}
      for i = 1, count * SIZES[d.type] do t[i] = string.char(r(256)) end
      args[d.name] = vyre.array(d.type, table.concat(t))
      if d.type == "bool" then
        local b = {}
        for i = 1, count do b[i] = r(2) == 1 end
        args[d.name] = vyre.array("bool", b)
      end
    elseif d.kind == "param" then
      local e = ({ bool = { true, false }, f32 = { 0.0, 1.5, -2.0 }, f64 = { 0.5, -1.0 } })[d.type]
        or { 0, 1, 3, 7, 255 }
      args[d.name] = e[r(#e) + 1]
    end
  end
  return args
end

-- A generated worklist program: items are transformed by a random chain of u32 ops and
-- pushed again (sometimes twice, sometimes under a condition), with an output buffer.
local OPS = { "add", "sub", "mul", "xor", "and", "or", "shl", "shr", "min", "max" }
local function worklist_program(seed)
  local r = rng(seed)
  local e = "(load q i)"
  for _ = 1, 1 + r(4) do
    e = ("(%s %s %du32)"):format(OPS[r(#OPS) + 1], e, r(40))
  end
  local cond = ({ "(lt v 1000u32)", "(eq (and v 1u32) 0u32)", "(ne v 0u32)" })[r(3) + 1]
  local body = ("(let v %s) (store out (rem i (len out)) v) (if %s (then (push q (rem v 97u32))))")
    :format(e, cond)
  if r(2) == 0 then body = body .. " (push q (add (len q) i))" end
  return vyre.parse(([[
(program wl%d (workgroup 32)
  (buffer out u32 read_write)
  (worklist q u32)
  (let i (gid x))
  (if (lt i (len q)) (then %s)))]]):format(seed, body)), r
end

describe("properties of the new code (reference backend)", function()
  local be = vyre.backend("reference")

  it("optimised == unoptimised on random programs", function()
    for seed = 1, 120 do
      local p = vyre.random_program(seed, { allow_barriers = seed % 2 == 1, max_stmts = 10 })
      local q = p:optimize()
      local r1, r2 = rng(seed), rng(seed)
      local n = 1 + r1(48)
      r2(48)
      local a = be:run(p, args_for(p, r1, n), { n = n })
      local b = be:run(q, args_for(q, r2, n), { n = n })
      if bytes_of(a) ~= bytes_of(b) then
        error(("seed %d: the optimised program differs\n%s\n--- optimised ---\n%s"):format(
          seed, p:text(), q:text()), 0)
      end
    end
  end)

  it("optimised == unoptimised on generated worklist programs", function()
    for seed = 1, 60 do
      local p, r = worklist_program(seed)
      local q = p:optimize()
      local items = {}
      for i = 1, 1 + r(20) do items[i] = r(200) end
      local got = {}
      for _, prog in ipairs({ p, q }) do
        local k = be:compile(prog)
        local out = be:buffer("u32", 16)
        local wl = be:worklist("u32", 64):push(items)
        k:launch({ out = out, q = wl }, { n = wl })
        wl:advance()
        local its = wl:items():totable()
        table.sort(its) -- the order within a round is not defined
        got[#got + 1] = table.concat(out:download():totable(), ",") .. " / "
          .. table.concat(its, ",")
        k:free()
        out:free()
        wl:free()
      end
      if got[1] ~= got[2] then
        error(("seed %d: %s vs %s\n%s"):format(seed, got[1], got[2], p:text()), 0)
      end
    end
  end)

  it("fused == chain on random elementwise chains over views of one buffer", function()
    for seed = 1, 40 do
      local r = rng(seed * 31)
      local n = 8 + r(40)
      local len = 2 + r(4)
      -- buffers a, b, c: disjoint views of one allocation of 3n elements
      local progs = {}
      local names = { "a", "b", "c" }
      for s = 1, len do
        local src, dst = names[r(3) + 1], names[r(3) + 1]
        local op = OPS[r(#OPS) + 1]
        local decl = src == dst and ("(buffer %s u32 read_write)"):format(src)
          or ("(buffer %s u32 read) (buffer %s u32 write)"):format(src, dst)
        progs[s] = vyre.parse(([[
(program s%d (workgroup 32) %s
  (let i (gid x))
  (if (lt i (len %s)) (then (store %s i (%s (load %s i) %du32)))))]]):format(
          s, decl, dst, dst, op, src, r(50)))
      end
      local init = {}
      for i = 1, 3 * n do init[i] = r(1 << 32) end
      local outs = {}
      for variant = 1, 2 do
        local whole = be:buffer("u32", init)
        local bind = { a = whole:view(1, n), b = whole:view(n + 1, n),
          c = whole:view(2 * n + 1, n) }
        local function args_of(p)
          local t = {}
          for _, d in ipairs(p:decls()) do t[d.name] = bind[d.name] end
          return t
        end
        if variant == 1 then
          local steps = {}
          for s, p in ipairs(progs) do steps[s] = { be:compile(p), args_of(p), { n = n } } end
          be:sequence(steps)
        else
          local f = vyre.fuse(progs)
          be:compile(f):launch(args_of(f), { n = n })
        end
        outs[variant] = table.concat(whole:download():totable(), ",")
        whole:free()
      end
      if outs[1] ~= outs[2] then
        local t = {}
        for s, p in ipairs(progs) do t[s] = p:text() end
        error(("seed %d: fused differs from the chain\n%s"):format(seed, table.concat(t, "\n")), 0)
      end
    end
  end)
end)

-- ---- megakernel == sequence ----------------------------------------------------------

local T = {
  set = [[(program set (workgroup 32) (buffer x u32 write) (param k u32) (let i (gid x))
    (if (lt i (len x)) (then (store x i (add k i)))))]],
  map = [[(program map (workgroup 32) (buffer src u32 read) (buffer dst u32 write) (param k u32)
    (let i (gid x)) (if (lt i (len dst)) (then (store dst i (xor (load src i) k)))))]],
  inc = [[(program inc (workgroup 64) (buffer x u32 read_write) (param k u32) (let i (gid x))
    (if (lt i (len x)) (then (store x i (add (load x i) k)))))]],
}

-- The buffers of a list: P (128 elements), its views V1 = P[1..64], V2 = P[33..96]
-- (overlapping V1), V3 = P[97..128] and Q (64), O (64).
local function world(be, seed)
  local r = rng(seed * 977)
  local init = {}
  for i = 1, 128 do init[i] = r(1 << 32) end
  local P = be:buffer("u32", init)
  local q = {}
  for i = 1, 64 do q[i] = r(1000) end
  local w = { P = P, Q = be:buffer("u32", q), O = be:buffer("u32", 64) }
  w.V1, w.V2, w.V3 = P:view(1, 64), P:view(33, 64), P:view(97, 32)
  return w
end
local BUFS = { "P", "V1", "V2", "V3", "Q", "O" }
-- Element ranges within P (Q and O are allocations of their own).
local RANGE = { P = { 1, 128 }, V1 = { 1, 64 }, V2 = { 33, 96 }, V3 = { 97, 128 } }

local function random_steps(be, w, seed, kernels, with_lib)
  local r = rng(seed)
  local steps, desc = {}, {}
  local sc = with_lib and lib.scratch(be) or nil
  for _ = 1, 2 + r(5) do
    local kind = r(with_lib and 5 or 4)
    local a, b = BUFS[r(#BUFS) + 1], BUFS[r(#BUFS) + 1]
    local k = r(1000)
    if kind == 0 then
      steps[#steps + 1] = { kernels(T.set), { x = w[a], k = k }, { n = w[a].count } }
      desc[#desc + 1] = ("set %s %d"):format(a, k)
    elseif kind == 1 and a ~= b then
      -- map reads a, writes b; skip overlapping pairs within one step (a race)
      local ra, rb = RANGE[a], RANGE[b]
      local over = ra and rb and ra[1] <= rb[2] and rb[1] <= ra[2]
      if not over then
        steps[#steps + 1] = { kernels(T.map), { src = w[a], dst = w[b], k = k },
          { n = w[b].count } }
        desc[#desc + 1] = ("map %s->%s %d"):format(a, b, k)
      end
    elseif kind == 2 or kind == 3 then
      steps[#steps + 1] = { kernels(T.inc), { x = w[a], k = k }, { n = w[a].count } }
      desc[#desc + 1] = ("inc %s %d"):format(a, k)
    elseif with_lib then
      local which = r(3)
      local list
      if which == 0 then
        list = lib.steps.fill(be, w[a], k, { scratch = sc })
        desc[#desc + 1] = ("lib.fill %s %d"):format(a, k)
      elseif which == 1 then
        list = lib.steps.iota(be, w[a], k, 3, { scratch = sc })
        desc[#desc + 1] = ("lib.iota %s %d"):format(a, k)
      else
        list = lib.steps.reduce(be, w.Q, "add", { out = w.O:view(1 + r(8), 1), scratch = sc })
        desc[#desc + 1] = "lib.reduce Q -> O[.]"
      end
      for _, s in ipairs(list) do steps[#steps + 1] = s end
    end
  end
  return steps, table.concat(desc, "; ")
end

local function contents(w)
  local t = {}
  for _, name in ipairs({ "P", "Q", "O" }) do
    t[#t + 1] = table.concat(w[name]:download():totable(), ",")
  end
  return t
end

local function kernel_cache(be)
  local cache = {}
  return function(text)
    if not cache[text] then cache[text] = be:compile(vyre.parse(text)) end
    return cache[text]
  end
end

local KINDS = H.only_loaded({
  { name = "reference", tag = "", open = function() return vyre.backend("reference") end,
    seeds = 60 },
  { name = "fake CUDA driver", tag = " #fakecuda", open = H.fake_backend, seeds = 12 },
})

for _, kind in ipairs(KINDS) do
  describe("megakernel == sequence on the " .. kind.name .. " backend" .. kind.tag, function()
    local be
    setup(function() be = kind.open() end)

    local function check(with_lib, seeds)
      local kernels = kernel_cache(be)
      local composed = 0
      for seed = 1, seeds do
        local times = 1 + seed % 3
        local w1, w2 = world(be, seed), world(be, seed)
        local s1, desc = random_steps(be, w1, seed, kernels, with_lib)
        local s2 = random_steps(be, w2, seed, kernels, with_lib)
        if #s1 > 0 then
          be:sequence(s1, { times = times })
          local ok, err = pcall(be.megakernel, be, s2, { times = times })
          if ok then
            composed = composed + 1
            local a, b = contents(w1), contents(w2)
            for i = 1, #a do
              if a[i] ~= b[i] then
                error(("seed %d (times %d): %s: buffer %d differs:\nsequence   %s\nmegakernel %s")
                  :format(seed, times, desc, i, a[i], b[i]), 0)
              end
            end
          elseif not tostring(err):find("Fix:", 1, true) then
            error(("seed %d: %s: be:megakernel refused without a Fix: %s"):format(seed, desc,
              tostring(err)), 0)
          end
        end
      end
      if os.getenv("VYRE_PROPS_VERBOSE") then
        io.stderr:write(("megakernel == sequence: %d of %d lists composed\n"):format(composed,
          seeds))
      end
      -- Most lists compose; a refusal (with its Fix) must stay the exception.
      assert.is_true(composed >= seeds // 2,
        ("only %d of %d lists composed"):format(composed, seeds))
    end

    it("on random step lists over a buffer and its (overlapping) views", function()
      check(false, kind.seeds)
    end)

    it("on random step lists with vyre.lib steps forms", function()
      check(true, kind.seeds)
    end)

    it("a worklist converging sequence and megakernel give the same items and rounds", function()
      for seed = 1, 6 do
        local p = worklist_program(seed)
        local k = be:compile(p)
        local res = {}
        for variant = 1, 2 do
          local out = be:buffer("u32", 16)
          local wl = be:worklist("u32", 4096):push({ seed, seed * 7 })
          local steps = { { k, { out = out, q = wl }, { n = wl } } }
          local opts = { converge = { worklist = wl, max = 20 } }
          local ok, rounds = pcall(variant == 1 and be.sequence or be.megakernel, be, steps, opts)
          if not ok then
            res[variant] = "refused: " .. tostring(rounds):match("^[^.]*")
          else
            rounds = type(rounds) == "table" and rounds.rounds or rounds
            local its = wl:items():totable()
            table.sort(its)
            res[variant] = rounds .. " / " .. table.concat(its, ",")
          end
          out:free()
          wl:free()
        end
        assert.are.equal(res[1], res[2], "seed " .. seed .. "\n" .. p:text())
      end
    end)
  end)
end
