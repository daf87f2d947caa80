#!/bin/sh
# fuzz.sh [SECONDS | -runs=N] — libFuzzer over the whole CPU pipeline (tests/fuzz/
# fuzz_pipeline.c: parse, round trip, validate, PTX for sm_70/80/90, a reference run
# under a step budget), built with clang, ASan and UBSan in ./build-fuzz, seeded from
# tests/fuzz/seeds (the spec programs, and worklist programs), with the text form's
# words as a dictionary (tests/fuzz/vyre.dict). New inputs go to build-fuzz/corpus; a
# crash leaves crash-* in build-fuzz and the exit status non-zero. Default: 60 seconds.
# Examples: `sh scripts/fuzz.sh 20` (the CI slice), `sh scripts/fuzz.sh -runs=1000000`.
set -eu
cd "$(dirname "$0")/.."
limit=${1:-60}
case $limit in
  -runs=*) budget="$limit" ;;
  *) budget="-max_total_time=$limit" ;;
esac
command -v clang >/dev/null 2>&1 || { echo "fuzz.sh: clang not found. Fix: apt-get install clang"; exit 77; }
CC=clang cmake -S . -B build-fuzz -DVYRE_FUZZ=ON -DVYRE_LUA_MODULE=OFF -DVYRE_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target vyre_fuzz >/dev/null
mkdir -p build-fuzz/corpus
cd build-fuzz
# -timeout: a valid program's run is bounded by the step budget; 10 s means a hang.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ./vyre_fuzz "$budget" -timeout=10 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 -dict=../tests/fuzz/vyre.dict \
  corpus ../tests/fuzz/seeds
