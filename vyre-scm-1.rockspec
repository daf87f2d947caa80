-- LuaRocks spec: `luarocks --lua-version=5.4 make` builds libvyre and the vyre.core
-- module with CMake and installs lua/vyre/*.lua. Needs the CUDA toolkit's headers
-- (no GPU, no libcuda at build time) and libxxhash-dev.
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
build = {
   type = "cmake",
   variables = {
      CMAKE_BUILD_TYPE = "Release",
      CMAKE_INSTALL_PREFIX = "$(PREFIX)",
      LUA_INCDIR = "$(LUA_INCDIR)",
      LUA_LIBDIR = "$(LIBDIR)",
      LUADIR = "$(LUADIR)",
      VYRE_TESTS = "OFF",
   },
}
