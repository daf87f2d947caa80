#!/bin/sh
# setup.sh — installs what vyre.cuda needs on Debian (if missing) and builds it in
# ./build. Sourced-free: run it as `sh scripts/setup.sh`. Idempotent.
# The CUDA toolkit is optional: the build declares the driver ABI itself and loads
# libcuda at run time. The tests use the toolkit's ptxas, and its cuda.h if present.
set -eu
cd "$(dirname "$0")/.."

need=""
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v cc >/dev/null 2>&1 || need="$need build-essential"
command -v lua5.4 >/dev/null 2>&1 || need="$need lua5.4"
[ -f /usr/include/lua5.4/lua.h ] || need="$need liblua5.4-dev"
command -v busted >/dev/null 2>&1 || need="$need lua-busted"
command -v luacheck >/dev/null 2>&1 || need="$need lua-check"
[ -f /usr/include/xxhash.h ] || need="$need libxxhash-dev"
command -v luarocks >/dev/null 2>&1 || need="$need luarocks"
# CI also runs a libFuzzer slice (scripts/fuzz.sh), which needs clang.
[ "${CI:-}" = true ] && ! command -v clang >/dev/null 2>&1 && need="$need clang"
# ...and the examples and binding specs under valgrind (scripts/valgrind.sh).
[ "${CI:-}" = true ] && ! command -v valgrind >/dev/null 2>&1 && need="$need valgrind"
# ...and renders the plan and program graphs with Graphviz (specs 38 and 59).
[ "${CI:-}" = true ] && ! command -v dot >/dev/null 2>&1 && need="$need graphviz"
if [ -n "$need" ]; then
  echo "setup: installing Debian packages:$need"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
# The CUDA toolkit is not needed to build; say what its absence costs the tests.
if [ ! -f /usr/local/cuda/include/cuda.h ] && [ ! -f /usr/include/cuda.h ]; then
  echo "setup: note: no cuda.h (CUDA toolkit): test_cuda_abi will be skipped." >&2
fi
if ! command -v ptxas >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/ptxas ]; then
  echo "setup: note: no ptxas (CUDA toolkit): the tests that assemble emitted PTX" \
       "(test_ptx, test_ptx_random, test_approx, spec 12) will fail. Fix: install the" \
       "CUDA toolkit." >&2
fi

BUILD=${VYRE_BUILD_DIR:-build}
# RelWithDebInfo: the build type vyre-scm-1.rockspec installs, so the tests run what
# users get (scripts/test.sh compares this build's with the rock's build.luarocks).
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${VYRE_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
echo "setup: built in $BUILD"
