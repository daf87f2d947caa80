#!/bin/sh
# valgrind.sh [all] — the examples and busted specs under valgrind memcheck: no invalid
# reads or writes anywhere, no definite leaks. Suppressions: none.
# Without an argument it runs the CI subset (the examples and the specs of the binding
# and the reference backend, about 2 minutes); `all` runs every non-GPU spec file
# (each in its own valgrind process; tens of minutes on 2 cores). Exit status 0 only
# when every run is clean; the last line counts "N clean, N with errors".
set -u
cd "$(dirname "$0")/.."
. scripts/env.sh
command -v valgrind >/dev/null 2>&1 || { echo "valgrind.sh: valgrind not found. Fix: apt-get install valgrind"; exit 77; }
VG="valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9"
clean=0; dirty=0
run() { # label, command...
  label=$1; shift
  if out=$($VG "$@" 2>&1); then clean=$((clean + 1)); echo "clean  $label"
  else dirty=$((dirty + 1)); echo "ERRORS $label"; echo "$out" | grep -E '^==[0-9]+==' | head -n 40; fi
}
for ex in examples/*.lua; do run "$ex" lua5.4 "$ex"; done
if [ "${1:-}" = all ]; then specs=$(ls spec/[0-9]*_spec.lua)
else specs="spec/01_array_spec.lua spec/07_backend_reference_spec.lua spec/08_errors_and_lifecycle_spec.lua spec/09_userdata_spec.lua spec/55_interp_guard_spec.lua spec/57_api_fuzz_spec.lua spec/33_megakernel_alias_plans_spec.lua"
fi
# busted is a script (#!/usr/bin/env lua): run its Lua file under lua5.4 itself, so
# valgrind watches the interpreter that loads vyre.core.
busted_main=$(command -v busted)
for s in $specs; do run "$s" lua5.4 "$busted_main" -o TAP --exclude-tags=gpu "$s"; done
echo "$clean clean, $dirty with errors"
[ "$dirty" -eq 0 ]
