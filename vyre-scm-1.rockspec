-- LuaRocks spec: `luarocks --lua-version=5.4 make` builds libvyre and the vyre.core
-- module with CMake (build directory build.luarocks/) and installs, through CMake's
-- install rules (CMakeLists.txt):
--   * the Lua files and vyre/core.so: to $(LUADIR) and $(LIBDIR), which LuaRocks then
--     deploys to <tree>/share/lua/5.4 and <tree>/lib/lua/5.4;
--   * the `vyre` command (CLI and REPL): to $(BINDIR); LuaRocks deploys it to <tree>/bin
--     as a wrapper that sets the tree's package paths and runs bin/vyre;
--   * libvyre for C hosts: include/*.h, libvyre.so (SONAME libvyre.so.0.1, exporting the
--     public API only), libvyre.a, lib/pkgconfig/vyre.pc and lib/cmake/vyre (vyre::vyre)
--     under the prefix <rock dir>/c, inside the rock's own directory
--     (`luarocks show --rock-dir vyre`). Not under the tree's lib/: LuaRocks moves
--     everything in $(LIBDIR) to <tree>/lib/lua/5.4 as Lua modules, and a rock installs
--     nothing outside its directory that LuaRocks would not remove with it. A C host
--     builds with CMAKE_PREFIX_PATH=<rock dir>/c or PKG_CONFIG_PATH=<rock dir>/c/lib/pkgconfig
--     (docs/EMBED.md).
-- It builds RelWithDebInfo, the build type scripts/setup.sh builds and every test runs
-- (scripts/test.sh checks the two builds agree).
-- The build needs:
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
      -- The same build type as scripts/setup.sh (the tests' build): what is tested is
      -- what is installed.
      CMAKE_BUILD_TYPE = "RelWithDebInfo",
      -- libvyre's prefix, inside the rock's directory (see the top of this file).
      CMAKE_INSTALL_PREFIX = "$(PREFIX)/c",
      CMAKE_INSTALL_LIBDIR = "lib",
      CMAKE_INSTALL_INCLUDEDIR = "include",
      LUA_INCDIR = "$(LUA_INCDIR)",
      XXHASH_INCDIR = "$(XXHASH_INCDIR)",
      XXHASH_LIBDIR = "$(XXHASH_LIBDIR)",
      -- Install destinations (CMake names): the module, the Lua files and the command of
      -- this rock, in the directories LuaRocks deploys from.
      LUA_LIBDIR = "$(LIBDIR)",
      LUADIR = "$(LUADIR)",
      VYRE_BINDIR = "$(BINDIR)",
      VYRE_TESTS = "OFF",
   },
}
