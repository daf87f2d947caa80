#!/bin/sh
# tsan.sh — the multi-threaded embedding test (tests/binding/test_threads.c: four
# lua_States on four OS threads using vyre at once) built with ThreadSanitizer in
# ./build-tsan. Any data race report fails it. VYRE_TEST_THREADS_BACKEND=cuda (with
# VYRE_LIBCUDA naming the fake driver or a real libcuda) shares one device instead.
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -DVYRE_TSAN=ON -DVYRE_LUA_MODULE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-tsan -j"$(nproc)" --target test_threads >/dev/null
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./build-tsan/test_threads
