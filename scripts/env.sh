# env.sh — source it to use vyre from the build tree:  . scripts/env.sh
# Sets LUA_PATH/LUA_CPATH so require("vyre") finds lua/vyre/*.lua and build/vyre/core.so.
_vyre_root=$(cd "$(dirname "${VYRE_ENV_SCRIPT:-scripts/env.sh}")/.." && pwd)
_vyre_build=${VYRE_BUILD_DIR:-build}
export LUA_PATH="$_vyre_root/lua/?.lua;$_vyre_root/lua/?/init.lua;${LUA_PATH:-;}"
export LUA_CPATH="$_vyre_root/$_vyre_build/?.so;${LUA_CPATH:-;}"
