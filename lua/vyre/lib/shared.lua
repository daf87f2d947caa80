-- vyre.lib.shared — the helpers of vyre.lib that other layers (vyre.egraph) may use, and
-- the only way they reach inside vyre.lib: the rest of lua/vyre/lib is private to it, so
-- vyre.lib can change its helpers without breaking a caller it does not know. Besides
-- these, other layers call vyre.lib's public functions (require("vyre.lib")).
local U = require("vyre.lib.util")
local E = require("vyre.errors")
local basic = require("vyre.lib.basic")
local scan = require("vyre.lib.scan")

-- The unchecked substitution vyre.egraph's kernels still use (vyre.lib's own are all
-- vyre.lib.template's, docs/LIB.md): replaces $NAME (capitals and digits) with
-- vars[NAME]; a missing one is an error, an unused one is not.
local function fill(template, vars)
  return (template:gsub("%$(%u[%u%d]*)", function(k)
    local v = vars[k]
    if v == nil then
      E.raise("internal", "vyre.lib internal: template variable $" .. k .. " unset", 2)
    end
    return tostring(v)
  end))
end

return {
  fill = fill,           -- unchecked $NAME -> vars[NAME] (until egraph moves to templates)
  template = require("vyre.lib.template"), -- vyre.lib's kernel templates (docs/LIB.md)
  geometry = require("vyre.lib.geometry"), -- the one table of vyre.lib's kernel geometry
  kernel = U.kernel,     -- the per-backend cache of compiled kernels
  overlap = U.overlap,   -- how the memory of two buffers relates (nil, "same", "overlap")
  mt_name = U.mt_name,   -- the __name of a value's metatable
  list_has = U.list_has, -- membership in a list
  cdiv = U.cdiv,         -- ceil(a / b)
  -- launch builders that append to a be:sequence step list
  scan = { steps = scan.steps },
  basic = { fill_steps = basic.fill_steps },
}
