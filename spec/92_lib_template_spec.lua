-- 92: vyre.lib's kernels are written one way (issue 21 §7): with vyre.lib.template,
-- whose parameters are checked and whose fragments' locals are hygienic, and with their
-- geometry from vyre.lib.geometry. The migration is proved kernel by kernel: every
-- kernel that spec/lib_kernels.lua's matrix builds (each family over element types, ops,
-- sizes, device counts and the one-pass knobs) has the same alpha-normalised canonical
-- text as the hand-templated kernel had (spec/lib_kernels_fixture.lua, recorded from the
-- old code by scripts/gen-lib-fixture.lua).
local T = require("vyre.lib.template")
local G = require("vyre.lib.geometry")
local U = require("vyre.lib.util")
local vyre = require("vyre")

describe("92 vyre.lib.template", function()
  local function err_of(fn)
    local ok, e = pcall(fn)
    assert.is_false(ok)
    return tostring(e)
  end

  it("fills parameters and geometry", function()
    local k = T.new("k", "(program p_$T (workgroup $WG) (shared s $T ${TILEP}) (param n u32))")
    assert.equal("(program p_f32 (workgroup 256) (shared s f32 2112) (param n u32))",
      k:render({ T = "f32" }))
  end)

  it("refuses a missing parameter and an unused one", function()
    local k = T.new("k", "(let a $X) (let b $Y)")
    assert.matches("parameter %$Y is missing", err_of(function() return k({ X = "1u32" }) end))
    assert.matches("parameter %$Z is unused",
      err_of(function() return k({ X = "1u32", Y = "2u32", Z = "3u32" }) end))
  end)

  it("refuses to override geometry per kernel and values that are not text", function()
    local k = T.new("k", "(workgroup $WG) $X")
    assert.matches("geometry", err_of(function() return k({ WG = 128, X = "" }) end))
    assert.matches("is a boolean", err_of(function() return k({ X = true }) end))
  end)

  it("gives each use of a fragment fresh locals, and the root its plain names", function()
    local frag = T.new("acc", "(let @s $X) (set $OUT (add $OUT @s))")
    local root = T.new("root", "(let @s 0u32) (let o 0u32) $A $B (store d @s o)")
    local text = root:render({ A = frag({ X = "1u32", OUT = "o" }),
      B = frag({ X = "2u32", OUT = "o" }) })
    assert.equal("(let s 0u32) (let o 0u32) (let _acc_1_s 1u32) (set o (add o _acc_1_s)) "
      .. "(let _acc_2_s 2u32) (set o (add o _acc_2_s)) (store d s o)", text)
  end)

  it("lets a fragment name its own locals as a nested fragment's outputs", function()
    local inner = T.new("inner", "(let @t $X) (let $OUT (add @t 1u32))")
    local outer = T.new("outer", "$IN (store d 0u32 @r)")
    local root = T.new("root", "$A $B")
    local text = root:render({ A = outer({ IN = inner({ X = "2u32", OUT = "@r" }) }),
      B = outer({ IN = inner({ X = "3u32", OUT = "@r" }) }) })
    assert.equal("(let _inner_1_t 2u32) (let _outer_1_r (add _inner_1_t 1u32)) "
      .. "(store d 0u32 _outer_1_r) (let _inner_2_t 3u32) (let _outer_2_r (add _inner_2_t "
      .. "1u32)) (store d 0u32 _outer_2_r)", text)
  end)

  it("refuses plain names in the fragments' spelling", function()
    assert.matches("starts with _", err_of(function() return T.new("k", "(let _x 1u32)") end))
  end)

  it("keeps one geometry, the one vyre.lib.util and lib.geometry report", function()
    assert.equal(G.WG * G.ITEMS, G.TILE)
    assert.equal(G.TILE, U.TILE)
    assert.equal(G.WG, U.WG)
    assert.same({ workgroup = G.WG, items = G.ITEMS, tile = G.TILE, max_groups = G.MAXG },
      require("vyre.lib").geometry)
  end)

  it("makes a kernel's device-count variant from the same template (no text rewriting)",
    function()
    local k = T.new("k", "(program p (workgroup $WG)\n  (buffer b u32 write)\n$NDECL\n$NLETS\n"
      .. "  (let l (lid x))\n$TILES\n  (for t 0u32 ntiles 1u32 (store b t n)))")
    local host = k:render(U.with_count({}, nil, { tiles = true }))
    assert.matches("%(param n u32%)", host)
    assert.is_nil(host:find("ncount", 1, true))
    assert.matches("%(let ntiles %(div", host)
    local dev = k:render(U.with_count({}, { "(let n n1)" }, { tiles = true }))
    assert.is_nil(dev:find("(param n u32)", 1, true))
    assert.matches("%(buffer ncount u32 read%)%s+%(param ncap u32%)", dev)
    assert.matches("%(let n1 %(min %(load ncount 0u32%) ncap%)%)%s+%(let n n1%)%s+"
      .. "%(let ntmax %(div", dev)
    assert.matches("%(let ntiles ntmax%)", dev)
    vyre.parse(host)
    vyre.parse(dev)
    assert.is_nil(U.dev_text)
    -- a tiled template given no tiles option misses $TILES: refused, never half rendered
    assert.is_false(pcall(function() return k:render(U.with_count({}, nil)) end))
  end)

  it("leaves no hand-written geometry or unchecked substitution in the lib kernels", function()
    -- geometry.lua is where the numbers live
    local dir = "lua/vyre/lib/"
    local files = {}
    for name in io.popen("ls " .. dir):lines() do
      if name:find("%.lua$") and name ~= "geometry.lua" then
        files[#files + 1] = name
      end
    end
    assert.is_true(#files >= 15)
    assert.is_nil(U.fill)
    for _, name in ipairs(files) do
      local f = assert(io.open(dir .. name))
      local src = f:read("a")
      f:close()
      for _, lit in ipairs({ "256u32", "2048u32", "2047u32", "1024u32", "1023u32", "2112",
        "4096u32", "(workgroup 256)", "31u32", "255u32" }) do
        assert.is_nil(src:find(lit, 1, true), name .. " writes " .. lit .. " by hand")
      end
      -- (shared.lua keeps the unchecked substitution for vyre.egraph alone)
      if name ~= "shared.lua" then
        assert.is_nil(src:find("fill(template", 1, true), name .. " has an unchecked fill")
        assert.is_nil(src:find("U.fill(", 1, true), name .. " uses the unchecked U.fill")
      end
    end
  end)

  it("builds every kernel as the hand-templated code did (alpha-normalised text)", function()
    local K = require("spec.lib_kernels")
    local before = require("spec.lib_kernels_fixture")
    local now, texts = K.collect()
    local missing, changed, new, n = {}, {}, {}, 0
    for key, h in pairs(before) do
      n = n + 1
      if now[key] == nil then missing[#missing + 1] = key
      elseif now[key] ~= h then changed[#changed + 1] = key end
    end
    for key in pairs(now) do
      if before[key] == nil then new[#new + 1] = key end
    end
    table.sort(changed)
    if #changed > 0 then print("first changed kernel " .. changed[1] .. ":\n"
      .. K.normal_text(texts[changed[1]])) end
    assert.is_true(n > 800)
    assert.same({}, missing)
    assert.same({}, changed)
    assert.same({}, new)
    -- and every one of them is a program vyre accepts
    for _, text in pairs(texts) do vyre.parse(text) end
  end)
end)
