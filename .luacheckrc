-- .luacheckrc — luacheck's configuration (run from the repository root):
--   luacheck lua spec examples bench bin/vyre
-- scripts/test.sh runs exactly that and counts it as one test.
std = "lua54"
-- The code wraps at 100 columns (the C code's clang-format limit too).
max_line_length = 100
-- Build trees (and anything luarocks leaves there) are not sources.
exclude_files = { "build*/**", ".luabundle/**" }

-- busted defines describe/it/setup/teardown/pending/spy/stub/mock/insulate and
-- extends the global assert (assert.are.equal, assert.is_true, ...).
files["spec/"] = { std = "+busted" }
-- The configuration files are Lua too.
files[".busted"] = { std = "lua54" }
files[".luacheckrc"] = { std = "lua54+luacheckrc" }
