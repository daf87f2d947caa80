-- LuaRocks spec: `luarocks --lua-version=5.4 make` builds libvyre and the vyre.core
-- module with CMake and installs lua/vyre/*.lua. The build needs:
--   * the Lua 5.4 headers: declared by the "lua" dependency. LuaRocks itself finds them
--     and checks that lua.h is 5.4 before every build, and passes $(LUA_INCDIR) to CMake
--     (override: LUA_INCDIR=...). They are deliberately not an external_dependencies
--     entry: LuaRocks checks those before it resolves LUA_INCDIR, so a LUA entry would
--     look for $(LUA_DIR)/include/lua.h, which fails on Debian (/usr/include/lua5.4) or
--     could find another Lua version's header.
--   * libxxhash, header and library (linked statically when libxxhash.a exists): the
--     external dependency XXHASH below; LuaRocks says when it is missing, and its
--     directories go to CMake (override: XXHASH_DIR=... or XXHASH_INCDIR/XXHASH_LIBDIR).
-- No CUDA toolkit, no GPU and no libcuda are needed to build: libcuda is loaded at run
-- time.
rockspec_format = "3.0"
package = "vyre"
version = "scm-1"
source = {
   url = "file://."
}
description = {
   summary = "GPU compute programs from Lua 5.4: IR, validator, reference interpreter, PTX and a CUDA runtime",
   detailed = [[
vyre.cuda builds compute programs from Lua, runs them on NVIDIA GPUs through the
CUDA driver API (loaded at run time), and runs the same programs bit-identically on a
built-in CPU reference interpreter when there is no GPU.]],
   license = "MIT",
}
dependencies = {
   "lua >= 5.4, < 5.5",
}
external_dependencies = {
   XXHASH = {
      header = "xxhash.h",
      library = "xxhash",
   },
}
build = {
   type = "cmake",
   variables = {
      CMAKE_BUILD_TYPE = "Release",
      CMAKE_INSTALL_PREFIX = "$(PREFIX)",
      LUA_INCDIR = "$(LUA_INCDIR)",
      XXHASH_INCDIR = "$(XXHASH_INCDIR)",
      XXHASH_LIBDIR = "$(XXHASH_LIBDIR)",
      -- Install destinations (CMake names): the module and the Lua files of this rock.
      LUA_LIBDIR = "$(LIBDIR)",
      LUADIR = "$(LUADIR)",
      VYRE_TESTS = "OFF",
   },
}
