-- egraph-kernel-texts.lua — a busted helper that records every e-graph kernel text the
-- kernel cache compiles (keys egraph*/eqsat*), each once, into the file $EGRAPH_TEXTS,
-- separated by form-feed lines. It proved the column-schema migration (schema.lua:
-- the columns declared in one place instead of in every kernel): the texts recorded
-- before and after, over the same specs, are equal as sets, byte for byte.
--   EGRAPH_TEXTS=/tmp/after.txt busted --lua=lua5.4 --exclude-tags=gpu,fakecuda \
--     --helper=scripts/egraph-kernel-texts.lua spec/40_egraph_spec.lua spec/43_eqsat_spec.lua ...
local out = assert(os.getenv("EGRAPH_TEXTS"), "set EGRAPH_TEXTS to the output file")
local seen = {}
local function wrap(t)
  local orig = t.kernel
  t.kernel = function(be, key, gen)
    return orig(be, key, function()
      local text = gen()
      if (key:match("^egraph") or key:match("^eqsat")) and not seen[text] then
        seen[text] = true
        local f = assert(io.open(out, "a"))
        f:write(text, "\n\f\n")
        f:close()
      end
      return text
    end)
  end
end
wrap(require("vyre.lib.util"))
wrap(require("vyre.lib.shared"))
