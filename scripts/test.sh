#!/bin/sh
# test.sh — README command 2: install what is missing, build with -Werror, then run every
# test: C unit tests (ctest), busted specs (Lua 5.4), the C tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the examples and the embedding hosts
# (examples/embed), the LuaRocks build and `bin/vyre info`. Ends with one line "N passed,
# N failed, N skipped" over all of it.
# GPU specs (busted tag `gpu`) run only where CUDA is usable; elsewhere they are counted
# as skipped and the reason is printed — never as passed.
# After the build, the independent parts run as jobs on $VYRE_TEST_JOBS lanes (default:
# the CPU count, CI has 2): each spec file is its own busted process, and a free lane
# takes the next job of the list (the long ones are listed first). Each job writes its
# own output; the report prints them in the list's order and sums their counts, so the
# totals are those of running everything one after the other.
# The fake-driver specs run trimmed (fewer seeds, smaller inputs; each spec's header says
# what); VYRE_FULL=1 runs them untrimmed (the sizes and counts they had before).
# POSIX sh on purpose: the README runs it as `sh scripts/test.sh` (dash on Debian).
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
passed=0; failed=0; skipped=0
note() { printf '\n== %s\n' "$*"; }

VYRE_CMAKE_ARGS="-DVYRE_WERROR=ON" sh scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
. scripts/env.sh
JOBS=${VYRE_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM

# ---- the job list ------------------------------------------------------------------
# job NAME KIND TITLE FN ARGS...: FN ARGS runs in a lane, its output in $T/NAME.out.
# KIND says how the report counts it: busted (its totals line), ctest (its totals, the
# skipped tests listed with their reason), marks (one @pass/@fail/@skip line per test).
# TITLE, unless empty, is a section header the report prints before the job.
: >"$T/queue"
job() {
  jname=$1 jkind=$2; printf '%s' "$3" >"$T/$1.title"; shift 3
  echo "$jname $jkind $*" >>"$T/queue"
}
pass() { echo "@pass $*"; }
fail() { echo "@fail $*"; }
skip() { echo "@skip $*"; }

# lane: takes each job nobody has taken yet (mkdir is atomic), in list order.
lane() {
  while read -r name kind fn args; do
    mkdir "$T/$name.claim" 2>/dev/null || continue
    # shellcheck disable=SC2086
    $fn $args >"$T/$name.out" 2>&1 </dev/null
  done <"$T/queue"
}

# ref_spec SPEC: one spec file of the main pass (not the fake driver's, not a GPU's).
ref_spec() { busted --lua=lua5.4 -o utfTerminal "$exclude" "$1"; }
# fake_spec ENV SPEC...: specs tagged fakecuda on the fake CUDA driver (ENV: one
# assignment, or - for none), with their own cubin cache.
fake_spec() {
  fenv=$1; shift
  fc=$(mktemp -d)
  if [ "$fenv" = - ]; then
    VYRE_LIBCUDA="$ROOT/build/fakecuda/libcuda.so.1" VYRE_CACHE_DIR="$fc" \
      busted --lua=lua5.4 -o utfTerminal --tags=fakecuda "$@"
  else
    env "$fenv" VYRE_LIBCUDA="$ROOT/build/fakecuda/libcuda.so.1" VYRE_CACHE_DIR="$fc" \
      busted --lua=lua5.4 -o utfTerminal --tags=fakecuda "$@"
  fi
  r=$?; rm -rf "$fc"; return $r
}
ctest_in() { ctest --test-dir "$1" --output-on-failure -j"$2"; }

# ---- what the jobs run -------------------------------------------------------------
asan_job() {
  cmake -S . -B build-asan -DVYRE_SANITIZE=ON -DVYRE_WERROR=ON -DVYRE_LUA_MODULE=OFF \
    -DCMAKE_BUILD_TYPE=Debug >/dev/null && cmake --build build-asan -j"$(nproc)" >/dev/null ||
    { echo "sanitizer build failed"; return 1; }
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest_in build-asan 2
}

# Its own process: 4 fake devices and build/fakenccl/libnccl.so.2 (the specs above use 1).
nccl_job() {
  nc=$(mktemp -d)
  VYRE_LIBCUDA="$ROOT/build/fakecuda/libcuda.so.1" VYRE_FAKECUDA_DEVICES=4 \
    VYRE_LIBNCCL="$ROOT/build/fakenccl/libnccl.so.2" VYRE_CACHE_DIR="$nc" \
    busted --lua=lua5.4 -o utfTerminal --tags=fakecuda spec/89_nccl_fake_spec.lua \
    spec/101_nccl_fault_sweep_spec.lua
  r=$?; rm -rf "$nc"; return $r
}

luacheck_job() {
  if lout=$(luacheck --no-color --codes -q lua spec examples bench bin/vyre tests/fakecuda 2>&1); then
    pass "luacheck: $(echo "$lout" | tail -n1)"
  else fail "luacheck"; echo "$lout"; fi
}

# The seed corpus runs in both ctest passes (fuzz_seed_corpus). The libFuzzer slice
# needs clang; without it the slice is counted as skipped with the reason.
fuzz_job() {
  fout=$(sh scripts/fuzz.sh 20 2>&1); frc=$?
  if [ $frc -eq 0 ]; then pass "$(echo "$fout" | grep -aE '^Done [0-9]+ runs' | tail -n1)"
  elif [ $frc -eq 77 ]; then skip "fuzz slice: $fout"
  else fail "fuzz slice"; echo "$fout" | tail -n 40; fi
}

# Mutation fuzzing of the Lua-side parsers (they read user text), a fixed seed per day
# of the year so the slice keeps moving; a finding prints the input and fails.
fuzz_lua_job() {
  fseed=$(date +%j | sed 's/^0*//')
  if fout=$(lua5.4 tests/fuzz/fuzz_lua.lua cli 3000 "${fseed:-1}" 2>&1 &&
            lua5.4 tests/fuzz/fuzz_lua.lua egraph 200 "${fseed:-1}" 2>&1); then
    pass "$(echo "$fout" | grep -E '^(cli|egraph):' | tr '\n' ' ')"
  else fail "fuzz_lua (seed ${fseed:-1})"; echo "$fout" | tail -n 40; fi
}

# A slow leak shows only over many cycles: flat RSS and flat fake-driver live counts;
# the 10^5-cycle run is recorded in bench/results.
soak_job() {
  sc=$(mktemp -d)
  if sout=$(VYRE_LIBCUDA="$ROOT/build/fakecuda/libcuda.so.1" VYRE_CACHE_DIR="$sc" \
            lua5.4 scripts/soak.lua 3000 30 2>&1); then
    pass "$(echo "$sout" | tail -n1)"
  else fail "soak"; echo "$sout" | grep -v '^vyre fakecuda' | tail -n 30; fi
  rm -rf "$sc"
}

# tests/c/gen_hashes.txt holds the generator's digests; ./build (cc) checks them in ctest.
clang_job() {
  command -v clang >/dev/null 2>&1 ||
    { skip "clang comparison: clang not found. Fix: apt-get install clang"; return; }
  if CC=clang cmake -S . -B build-clang -DVYRE_LUA_MODULE=OFF -DVYRE_EXAMPLES=OFF \
       -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null &&
     cmake --build build-clang -j"$(nproc)" --target test_gen_options test_race >/dev/null &&
     cout=$(./build-clang/test_gen_options 2>&1 && ./build-clang/test_race 2>&1); then
    pass "clang: test_gen_options and test_race: $(echo "$cout" | tail -n1)"
  else fail "clang build of test_gen_options/test_race"; echo "${cout:-}" | tail -n 30; fi
}

tsan_job() {
  if tout=$(sh scripts/tsan.sh 2>&1); then pass "tsan test_threads: $(echo "$tout" | tail -n1)"
  else fail "tsan test_threads"; echo "$tout" | tail -n 60; fi
}

valgrind_job() {
  vout=$(sh scripts/valgrind.sh 2>&1); vrc=$?
  if [ $vrc -eq 0 ]; then pass "valgrind: $(echo "$vout" | tail -n1)"
  elif [ $vrc -eq 77 ]; then skip "valgrind: $vout"
  else fail "valgrind"; echo "$vout" | tail -n 60; fi
}

examples_job() {
  for ex in examples/*.lua; do
    if out=$(lua5.4 "$ex" 2>&1); then pass "$ex: $(echo "$out" | tail -n1)"
    else fail "$ex"; echo "$out"; fi
  done
}

# The rock as a user installs it (luarocks --tree): the Lua module, the `vyre` command
# run from the tree's bin/ with no LUA_PATH, libvyre (SONAME, exports = what include/*.h
# declares), the same build type as ./build, whose ctest ran above, and the embedding
# hosts built by CMake (find_package) and by pkg-config against the installed package.
rock_ok() { pass "$1"; }
rock_fail() { fail "$1"; [ -z "${2:-}" ] || echo "$2" | tail -n 30; }
rock_job() {
  tree=$(mktemp -d); rlog="$tree.log"; rbuild=$(mktemp -d)
  if luarocks --lua-version=5.4 make --tree "$tree" vyre-scm-1.rockspec >"$rlog" 2>&1; then
    rock_ok "luarocks make --tree $tree"
    rock=$(luarocks --lua-version=5.4 --tree "$tree" show --rock-dir vyre)
    if out=$(env -u LUA_PATH -u LUA_CPATH lua5.4 -e "package.path='$tree/share/lua/5.4/?.lua;$tree/share/lua/5.4/?/init.lua;'..package.path
         package.cpath='$tree/lib/lua/5.4/?.so;'..package.cpath
         local v = require('vyre'); assert(v.parse('(program p (workgroup 1))'):text())" 2>&1); then
      rock_ok "require('vyre') from the tree"
    else rock_fail "require('vyre') from the tree" "$out"; fi
    # The installed command, from another directory, without LUA_PATH/LUA_CPATH.
    if out=$(cd / && env -u LUA_PATH -u LUA_CPATH "$tree/bin/vyre" info 2>&1) &&
       echo "$out" | grep -q '^vyre [0-9]' &&
       out2=$(cd / && env -u LUA_PATH -u LUA_CPATH "$tree/bin/vyre" check "$ROOT/examples/embed/particles.vyre" 2>&1) &&
       echo "$out2" | grep -q ': ok: program particles'; then
      rock_ok "$tree/bin/vyre info and check: $(echo "$out" | head -n1); $(echo "$out2" | tail -n1)"
    else rock_fail "the installed vyre command" "$out ${out2:-}"; fi
    # libvyre.so: a SONAME, and exactly the functions the installed headers declare
    # (the preprocessed headers: no comments, no macros); libvyre.a defines each of them.
    so="$rock/c/lib/libvyre.so"
    soname=$(readelf -d "$so" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    for h in "$rock"/c/include/*.h; do cc -E -P -I"$rock/c/include" "$h"; done |
      grep -oE '\bvyre_[A-Za-z0-9_]+[[:space:]]*\([^*]' | sed 's/[[:space:]]*(.$//' | sort -u >"$rbuild/decl"
    nm -D --defined-only "$so" 2>&1 | awk 'NF >= 3 { print $3 }' | sort -u >"$rbuild/exported"
    nm -g --defined-only "$rock/c/lib/libvyre.a" 2>&1 | awk 'NF >= 3 { print $3 }' | sort -u >"$rbuild/static"
    extra=$(comm -23 "$rbuild/exported" "$rbuild/decl"); unexported=$(comm -13 "$rbuild/exported" "$rbuild/decl")
    not_static=$(comm -13 "$rbuild/static" "$rbuild/decl")
    if [ -n "$soname" ] && [ -s "$rbuild/decl" ] && [ -z "$extra$unexported$not_static" ]; then
      rock_ok "libvyre.so (SONAME $soname) exports the $(wc -l <"$rbuild/decl") functions include/*.h declare and nothing else; libvyre.a defines each"
    else
      rock_fail "libvyre: SONAME '$soname'; exported, not declared: $extra; declared, not exported: $unexported; not in libvyre.a: $not_static"
    fi
    # One build type: the rock's build (build.luarocks) compiles as ./build, which ctest ran.
    cache_of() { sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt"; }
    bt=$(cache_of build CMAKE_BUILD_TYPE); rbt=$(cache_of build.luarocks CMAKE_BUILD_TYPE)
    flags=$(cache_of build CMAKE_C_FLAGS)/$(cache_of build "CMAKE_C_FLAGS_$(echo "$bt" | tr a-z A-Z)")
    rflags=$(cache_of build.luarocks CMAKE_C_FLAGS)/$(cache_of build.luarocks "CMAKE_C_FLAGS_$(echo "$rbt" | tr a-z A-Z)")
    if [ -n "$bt" ] && [ "$bt" = "$rbt" ] && [ "$flags" = "$rflags" ]; then
      rock_ok "the rock builds $rbt ($rflags), as the tested ./build"
    else rock_fail "the rock builds '$rbt' ($rflags), the tests ran '$bt' ($flags): make them one"; fi
    # examples/embed standalone, against the rock's CMake package; the Lua host loads the
    # installed core.so and Lua files through the tree's paths (luarocks path).
    if out=$(cmake -S examples/embed -B "$rbuild/embed" -DCMAKE_PREFIX_PATH="$rock/c" 2>&1 &&
             cmake --build "$rbuild/embed" -j"$(nproc)" 2>&1); then
      rock_ok "examples/embed configured and built with find_package(vyre) against $rock/c"
      for h in vyre_embed_c vyre_embed_lua; do
        if out=$(cd / && env -u LUA_PATH -u LUA_CPATH sh -c 'eval "$(luarocks --lua-version=5.4 --tree "$1" path)" && "$2" --backend reference' \
                   sh "$tree" "$rbuild/embed/$h" 2>&1) &&
           echo "$out" | grep -q "match the C simulation bit for bit"; then
          rock_ok "$h (installed vyre): $(echo "$out" | tail -n1)"
        else rock_fail "$h built against the rock" "$out"; fi
      done
    else rock_fail "examples/embed against the rock (cmake)" "$out"; fi
    # The C host through pkg-config: vyre.pc (libvyre.so) and vyre-static.pc (libvyre.a).
    for pc in vyre vyre-static; do
      if out=$(PKG_CONFIG_PATH="$rock/c/lib/pkgconfig" sh -c 'cc -std=c11 -D_POSIX_C_SOURCE=200809L \
                 -DVYRE_EMBED_DIR="\"$1/examples/embed\"" "$1/examples/embed/host_c.c" -o "$2" \
                 $(pkg-config --cflags --libs "$3") -ldl -Wl,-rpath,"$(pkg-config --variable=libdir "$3")"' \
                 sh "$ROOT" "$rbuild/host_c_$pc" "$pc" 2>&1) &&
         out=$("$rbuild/host_c_$pc" --backend reference 2>&1) &&
         echo "$out" | grep -q "match the C simulation bit for bit"; then
        rock_ok "host_c.c built with pkg-config $pc: $(echo "$out" | tail -n1)"
      else rock_fail "host_c.c built with pkg-config $pc" "$out"; fi
    done
  else
    rock_fail "luarocks make" "$(tail -n 30 "$rlog")"
  fi
  rm -rf "$tree" "$rlog" "$rbuild"
}

# ---- the jobs, longest first -------------------------------------------------------
gpu_reason=$(lua5.4 -e 'local ok, c = pcall(require, "vyre.cuda"); if not ok then print(c) return end
  local a, why = c.available(); print(a and "yes" or why)' 2>&1)
# Specs tagged fakecuda run in their own pass below, against the fake driver.
exclude="--exclude-tags=fakecuda"
ngpu=0
if [ "$gpu_reason" != "yes" ]; then
  ngpu=$(busted --lua=lua5.4 --tags=gpu --list spec 2>/dev/null | grep -c . || true)
  exclude="--exclude-tags=gpu,fakecuda"
fi

# The runtime specs on the fake CUDA driver (build/fakecuda/libcuda.so.1), each with its
# own cubin cache. The fake computes every kernel vyre emits on the reference interpreter
# (the PTX carries the program; docs/RUNTIME.md "Fake driver"), so besides buffers,
# caches, dispatch, graphs, device loss and a fault sweep of every driver call (specs
# 50-54) the #fakecuda parts of the CUDA parity specs run here, values checked against
# the reference at trimmed sizes (each spec's header says which): 17 vyre.lib, 30 grid
# barriers, 31 megakernels, 32 grid sync "graph", 42/44 the e-graph and equality
# saturation; and 69 k:occupancy, 71 buffer views, 74 the debug mode's out-of-bounds counts,
# 82 worklists, 91 the runtime's grids and refusals against the planners.
# Listed longest first (CPU seconds measured on the fake pass); a new spec goes anywhere.
FAKE_SPECS="spec/17_lib_spec.lua spec/114_egraph_pieces_spec.lua spec/97_egraph_analysis_spec.lua spec/85_lib_steps_spec.lua
  spec/98_egraph_extract_explain_spec.lua spec/87_egraph_v2_spec.lua
  spec/86_scan_onepass_spec.lua spec/96_workloads_spec.lua spec/44_eqsat_gpu_spec.lua
  spec/42_egraph_gpu_spec.lua spec/30_grid_spec.lua spec/31_megakernel_spec.lua
  spec/99_properties_new_spec.lua spec/109_compile_all_spec.lua
  spec/95_device_converge_spec.lua spec/94_segscan_lb_spec.lua spec/93_match_op_spec.lua
  spec/50_fakecuda_runtime_spec.lua spec/51_fakecuda_driver_spec.lua
  spec/52_fakecuda_faults_memory_spec.lua spec/53_fakecuda_faults_compile_spec.lua
  spec/54_fakecuda_faults_dispatch_spec.lua spec/32_grid_graph_spec.lua
  spec/33_megakernel_alias_plans_spec.lua spec/69_occupancy_driver_spec.lua
  spec/71_buffer_views_spec.lua spec/74_debug_oob_cuda_spec.lua spec/75_targets_spec.lua
  spec/76_cuda_library_spec.lua spec/80_backends_spec.lua spec/81_lib_aliasing_spec.lua
  spec/82_worklist_spec.lua spec/88_errors_spec.lua spec/91_planners_runtime_spec.lua
  spec/103_expand_steps_spec.lua spec/104_launch_paths_spec.lua
  spec/105_interface_costs_spec.lua spec/106_eqsat_speed_spec.lua
  spec/107_worklist_syncs_spec.lua spec/110_egraph_image_rollback_spec.lua
  spec/112_egraph_analysis_deps_spec.lua spec/111_lib_cache_bound_spec.lua
  spec/115_egraph_image_analyses_spec.lua spec/116_cold_cache_spec.lua
  spec/113_egraph_sets_spec.lua"
# The specs of the main pass, longest first; every other spec/*_spec.lua follows.
REF_FIRST="spec/17_lib_spec.lua spec/85_lib_steps_spec.lua spec/97_egraph_analysis_spec.lua
  spec/96_workloads_spec.lua spec/99_properties_new_spec.lua spec/98_egraph_extract_explain_spec.lua
  spec/43_eqsat_spec.lua spec/41_egraph_oracle_spec.lua spec/87_egraph_v2_spec.lua
  spec/40_egraph_spec.lua"

job asan ctest "C unit tests under AddressSanitizer + UndefinedBehaviorSanitizer" asan_job
job ctest ctest "C unit tests (ctest, -Werror)" ctest_in build 2
job valgrind marks "valgrind: the examples and the binding specs (scripts/valgrind.sh)" valgrind_job
note_fake="runtime specs on the fake CUDA driver (build/fakecuda/libcuda.so.1; no GPU needed)"
# The fault sweep of the new paths (spec 100), a slice: every 6th call of a kind past its
# first (VYRE_SWEEP_STRIDE; the e-graph's every 48th); VYRE_FULL=1: every call (3,422
# cases, bench/results/2026-11-26-sweeps.md).
[ "${VYRE_FULL:-}" = 1 ] && sweep=- || sweep=VYRE_SWEEP_STRIDE=6
job sweep busted "$note_fake" fake_spec "$sweep" spec/100_fault_sweeps_new_spec.lua
# Spec 108 (e-graph analyses, extraction, proofs; worklists converging in megakernels;
# times): 24 picked calls per operation (VYRE_SWEEP_CASES; the full sweeps' counts are in
# bench/results/2026-11-26-sweeps.md).
job sweep2 busted "" fake_spec VYRE_SWEEP_CASES=24 spec/108_fault_sweeps_egraph_converge_spec.lua
n=0
for s in $FAKE_SPECS; do
  n=$((n + 1))
  job "fake$n" busted "" fake_spec - "$s"
done
job tsan marks "threads: eight lua_States on eight OS threads, under ThreadSanitizer (scripts/tsan.sh)" tsan_job
job fuzz marks "fuzz: the seed corpus, then a 20-second libFuzzer slice (scripts/fuzz.sh)" fuzz_job
job rock marks "luarocks make: the rock in a scratch tree, its vyre command, libvyre, and examples/embed built against it" rock_job
job clang marks "vyre.random_program is the same with gcc and clang (test_gen_options built by clang)" clang_job
job nccl busted "NCCL groups on the fake NCCL over 4 fake devices (spec 89; docs/MULTIGPU.md)" nccl_job
# Every GPU generation (docs/RUNTIME.md "PTX targets"): the runtime specs again on fake
# devices of other SMs — Xavier, Orin, B200, RTX 50xx, GB10 and one newer than every
# known target (the runtime must pick the highest known target and let the JIT take it).
# VYRE_FAKE_SMS overrides the list (e.g. VYRE_FAKE_SMS=80 to try the loop quickly).
for sm in ${VYRE_FAKE_SMS:-72 87 100 120 121 130}; do
  job "sm$sm" busted "runtime specs on the fake CUDA driver at sm_$sm" fake_spec \
    "VYRE_FAKECUDA_SM=$sm" spec/5[0-4]_fakecuda_*_spec.lua $(ls spec/75_targets_spec.lua 2>/dev/null)
done
n=0
for s in $REF_FIRST $(ls spec/*_spec.lua); do
  [ -e "$T/ref.$(basename "$s")" ] && continue
  : >"$T/ref.$(basename "$s")"
  n=$((n + 1))
  [ $n -eq 1 ] && t="Lua specs (busted --lua=lua5.4 $exclude, one process per spec file)" || t=""
  job "ref$n" busted "$t" ref_spec "$s"
done
job soak marks "soak: compile/launch/free cycles and a saturation loop on the fake driver (scripts/soak.lua, a slice)" soak_job
job fuzzlua marks "fuzz: the e-graph rule/pattern/when parser and the CLI (tests/fuzz/fuzz_lua.lua, a slice)" fuzz_lua_job
job luacheck marks "luacheck (Lua lint, .luacheckrc)" luacheck_job
job examples marks "examples" examples_job

# ---- run: $JOBS lanes over the list ---------------------------------------------------
i=0
while [ "$i" -lt "$JOBS" ]; do lane & i=$((i + 1)); done
wait

# ---- the report, in the list's order ----------------------------------------------------
# add_busted FILE LABEL: adds busted's totals; prints one line, or the output on a failure.
add_busted() {
  bl=$(grep -aE '[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors?' "$1" | tail -n1)
  if [ -z "$bl" ]; then
    failed=$((failed + 1)); echo "FAIL $2: busted printed no totals"; tail -n 40 "$1"; return
  fi
  # shellcheck disable=SC2046
  set -- "$1" "$2" $(echo "$bl" | grep -oE '[0-9]+' | head -n4)
  passed=$((passed + $3)); failed=$((failed + $4 + $5)); skipped=$((skipped + $6))
  if [ $(($4 + $5)) -gt 0 ]; then echo "FAIL $2:"; tail -n 60 "$1"; else echo "ok   $2: $bl"; fi
}

# add_ctest DIR FILE: adds ctest's totals. A test that exits with its SKIP_RETURN_CODE
# (77) is inside ctest's "out of N" and in "100% tests passed", but it did not pass:
# ctest lists it as "N - name (Skipped)", so it is counted as skipped and its own
# "SKIPPED: why" line is printed.
add_ctest() {
  tail -n 25 "$2"
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$2" | tail -n1)
  bad=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$2" | tail -n1)
  if [ -z "$total" ]; then failed=$((failed + 1)); echo "ctest in $1 printed no totals"; return; fi
  skip_names=$(sed -n 's/^[[:space:]]*[0-9][0-9]* - \(.*\) (Skipped)$/\1/p' "$2")
  nskip=0
  for t in $skip_names; do
    nskip=$((nskip + 1))
    why=$(ctest --test-dir "$1" -R "^$t\$" -V 2>&1 | sed -n 's/^[0-9][0-9]*: SKIPPED: //p' | head -n1)
    echo "skipped $t: ${why:-see ctest --test-dir $1 -R $t -V}"
  done
  passed=$((passed + total - bad - nskip)); failed=$((failed + bad)); skipped=$((skipped + nskip))
}

# add_marks FILE: one result per @pass/@fail/@skip line.
add_marks() {
  np=$(grep -c '^@pass ' "$1"); nf=$(grep -c '^@fail ' "$1"); ns=$(grep -c '^@skip ' "$1")
  sed 's/^@pass /ok   /; s/^@fail /FAIL /; s/^@skip /skipped /' "$1"
  if [ $((np + nf + ns)) -eq 0 ]; then failed=$((failed + 1)); echo "FAIL: no result"; fi
  passed=$((passed + np)); failed=$((failed + nf)); skipped=$((skipped + ns))
}

while read -r name kind fn args; do
  title=$(cat "$T/$name.title")
  [ -z "$title" ] || note "$title"
  case $name in ref1)
    if [ "$gpu_reason" != "yes" ]; then
      skipped=$((skipped + ngpu))
      echo "GPU specs not run ($ngpu): CUDA is not usable here: $gpu_reason"
    fi ;;
  esac
  if [ ! -f "$T/$name.out" ]; then failed=$((failed + 1)); echo "FAIL $name ($fn $args) did not run"; continue; fi
  case $kind in
    busted) add_busted "$T/$name.out" "$(echo "${args:-$fn}" | sed 's/^- //')" ;;
    ctest) [ "$name" = asan ] && cdir=build-asan || cdir=$(echo "$args" | cut -d' ' -f1)
      add_ctest "$cdir" "$T/$name.out" ;;
    *) add_marks "$T/$name.out" ;;
  esac
done <"$T/queue"

note "embedding examples (examples/embed: C hosts with a frame loop, reference backend)"
# Each checks its kernels against a C simulation and says so; the build-asan copies run
# under AddressSanitizer and LeakSanitizer (lua_close must free every vyre object).
for b in build/examples/embed/vyre_embed_lua build/examples/embed/vyre_embed_c \
         build-asan/examples/embed/vyre_embed_lua build-asan/examples/embed/vyre_embed_c; do
  if out=$(ASAN_OPTIONS=detect_leaks=1 "$b" --backend reference 2>&1) &&
     echo "$out" | grep -q "match the C simulation bit for bit"; then
    passed=$((passed + 1)); echo "ok   $b: $(echo "$out" | tail -n1)"
  else failed=$((failed + 1)); echo "FAIL $b"; echo "$out" | tail -n 20; fi
done

note "bin/vyre info"
if out=$(lua5.4 bin/vyre info 2>&1); then passed=$((passed + 1)); echo "$out" | head -n 12
else failed=$((failed + 1)); echo "FAIL bin/vyre info"; echo "$out"; fi

note "exported symbols of vyre/core.so (nm -D --defined-only)"
# The module must export luaopen_vyre_core and nothing else (no vyre_*, no XXH*).
mod=build/vyre/core.so
if syms=$(nm -D --defined-only "$mod" 2>&1) &&
   [ "$(echo "$syms" | awk 'NF >= 3 { print $3 }')" = "luaopen_vyre_core" ]; then
  passed=$((passed + 1)); echo "ok   $mod exports only luaopen_vyre_core"
else
  failed=$((failed + 1))
  echo "FAIL $mod must define exactly one dynamic symbol, luaopen_vyre_core; nm -D --defined-only says:"
  echo "$syms" | head -n 20
fi

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
