#!/bin/sh
# setup.sh — installs what vyre.cuda needs on Debian (if missing) and builds it in
# ./build. Sourced-free: run it as `sh scripts/setup.sh`. Idempotent.
# Needs: the CUDA toolkit's headers (cuda.h) — libcuda itself is loaded at run time.
set -eu
cd "$(dirname "$0")/.."

need=""
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v cc >/dev/null 2>&1 || need="$need build-essential"
command -v lua5.4 >/dev/null 2>&1 || need="$need lua5.4"
[ -f /usr/include/lua5.4/lua.h ] || need="$need liblua5.4-dev"
command -v busted >/dev/null 2>&1 || need="$need lua-busted"
[ -f /usr/include/xxhash.h ] || need="$need libxxhash-dev"
command -v luarocks >/dev/null 2>&1 || need="$need luarocks"
if [ -n "$need" ]; then
  echo "setup: installing Debian packages:$need"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
if [ ! -f /usr/local/cuda/include/cuda.h ] && [ ! -f /usr/include/cuda.h ]; then
  echo "setup: cuda.h not found. Fix: install the CUDA toolkit (its headers are needed to build; no GPU is needed)." >&2
  exit 1
fi

BUILD=${VYRE_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${VYRE_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
echo "setup: built in $BUILD"
