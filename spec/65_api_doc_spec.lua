-- 65: docs/API.md is the API reference generated from the help texts (vyre.help) by
-- scripts/gen-api-doc.lua. It fails when the file differs from what the generator writes
-- now (a new or changed function whose doc was not regenerated), and, on its own, when
-- a public function or method of the live modules and types has no section in it.
local vyre = require("vyre")
local help = require("vyre.help")

local FIX = "Fix: run lua5.4 scripts/gen-api-doc.lua and commit docs/API.md"

local function read(path)
  local f = assert(io.open(path, "rb"), "cannot open " .. path .. " (run busted from the "
    .. "repository root)")
  local s = f:read("a")
  f:close()
  return s
end

local function render()
  local chunk = assert(loadfile("scripts/gen-api-doc.lua"))
  return chunk("--render")
end

-- Every "### `key`" heading of the file.
local function headings(doc)
  local set = {}
  for key in doc:gmatch("\n### `([^`\n]+)`\n") do set[key] = true end
  return set
end

describe("docs/API.md", function()
  local doc = read("docs/API.md")

  it("is what scripts/gen-api-doc.lua generates from the help texts now", function()
    local want = render()
    if want ~= doc then
      -- Name the first line that differs, so the failure says where.
      local n, wl, dl = 0
      local wi, di = want:gmatch("([^\n]*)\n"), doc:gmatch("([^\n]*)\n")
      repeat
        n = n + 1
        wl, dl = wi(), di()
      until wl ~= dl or (wl == nil and dl == nil)
      error(("docs/API.md is stale: line %d is %q, the generator writes %q. %s")
        :format(n, tostring(dl), tostring(wl), FIX), 0)
    end
  end)

  it("has a section for every help entry", function()
    local have = headings(doc)
    local entries = help.entries()
    local miss = {}
    for key in pairs(entries) do
      local is_group = doc:find("\n## `" .. key .. "`\n", 1, true)
        or key == "vyre" or key == "Builder" or key == "Expr"
      if not have[key] and not is_group then miss[#miss + 1] = key end
    end
    table.sort(miss)
    assert.are.same({}, miss, FIX)
  end)

  it("documents every public function and method", function()
    local have = headings(doc)
    local miss = {}
    local function check(tbl, prefix)
      for k, v in pairs(tbl or {}) do
        if type(v) == "function" and not have[prefix .. k] then miss[#miss + 1] = prefix .. k end
      end
    end
    check(vyre, "vyre.")
    for _, m in ipairs({ "cuda", "reference", "lib" }) do
      check(require("vyre." .. m), "vyre." .. m .. ".")
    end
    local types = 0
    for tname, key in pairs(help.TYPES) do
      local methods = help.methods_of(tname)
      if methods then
        types = types + 1
        check(methods, key .. ":")
      end
    end
    assert.is_true(types >= 7) -- Program Array Backend Buffer Kernel Launch Graph
    check(getmetatable(vyre.lit("u32", 0)).__index, "Expr:")
    for _, op in ipairs(vyre.core.ops()) do
      if not have["Expr:" .. op.method] then miss[#miss + 1] = "Expr:" .. op.method end
    end
    for _, m in ipairs({ "let", "var", "set", "when", "for_", "atomic", "barrier", "break_",
      "return_", "load", "store", "len" }) do
      if not have["Builder:" .. m] then miss[#miss + 1] = "Builder:" .. m end
    end
    table.sort(miss)
    assert.are.same({}, miss, "public functions missing from docs/API.md (give each a help "
      .. "entry in lua/vyre/help/, then regenerate). " .. FIX)
  end)

  it("names the DSL operators people look for", function()
    for _, m in ipairs({ "land", "lor", "lnot", "band", "min", "max", "sqrt", "cast", "eq",
      "lt" }) do
      assert.truthy(doc:find("\n### `Expr:" .. m .. "`\n", 1, true), "Expr:" .. m)
    end
  end)
end)
