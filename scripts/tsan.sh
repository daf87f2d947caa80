#!/bin/sh
# tsan.sh — the multi-threaded embedding test (tests/binding/test_threads.c: four
# lua_States on four OS threads using vyre at once) built with ThreadSanitizer in
# ./build-tsan, with eight threads (VYRE_TEST_THREADS=8), twice: on the reference
# backend, and on one CUDA device shared by all
# four threads through the fake driver (tests/fakecuda, also built with TSan). Any data
# race report fails it. On a GPU machine, VYRE_TSAN_LIBCUDA=libcuda.so.1 runs the CUDA
# pass on the real driver instead.
set -eu
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -DVYRE_TSAN=ON -DVYRE_LUA_MODULE=OFF -DVYRE_EXAMPLES=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-tsan -j"$(nproc)" --target test_threads test_fake_compile_many \
  vyre_fakecuda >/dev/null
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export VYRE_TEST_THREADS=${VYRE_TEST_THREADS:-8}
echo "reference backend:"
./build-tsan/test_threads
echo "cuda backend, one device for $VYRE_TEST_THREADS threads (${VYRE_TSAN_LIBCUDA:-fake driver}):"
cache=$(mktemp -d)
VYRE_TEST_THREADS_BACKEND=cuda VYRE_CACHE_DIR="$cache" \
  VYRE_LIBCUDA="${VYRE_TSAN_LIBCUDA:-$(pwd)/build-tsan/fakecuda/libcuda.so.1}" ./build-tsan/test_threads
rm -rf "$cache"
# vyre_cuda_compile_many's JIT workers (one device, own link states) on the fake driver,
# whose ptxas check runs outside its lock with a simulated JIT latency.
echo "compile_many: parallel JIT workers on the fake driver:"
VYRE_FAKECUDA_JIT_US=2000 ./build-tsan/test_fake_compile_many
