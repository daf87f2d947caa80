#!/bin/sh
# bench/nvtx/run.sh OUT — looks at vyre's NVTX ranges with the Nsight tools on a GPU
# machine: runs bench/nvtx/workload.lua under Nsight Compute with --nvtx (it prints the
# NVTX range stack of each kernel it profiles) and, where one is found, Nsight Systems
# (nsys profile + nsys stats nvtx_sum). Writes the tools' output under OUT and a summary
# of which expected ranges each tool showed (OUT/summary.txt).
set -u
out=${1:?usage: bench/nvtx/run.sh OUT}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
lua5.4 "$here/workload.lua" > "$out/plain.txt" 2>&1 || { cat "$out/plain.txt"; exit 1; }
sed -n '/^expect$/,$p' "$out/plain.txt" | tail -n +2 > "$out/expected.txt"
: > "$out/summary.txt"

check() { # check TOOL FILE: which expected ranges appear in FILE (the tool's range lines)
  while IFS= read -r r; do
    if grep -qF "$r" "$2"; then echo "$1 shows: $r"; else echo "$1 does not show: $r"; fi
  done < "$out/expected.txt" >> "$out/summary.txt"
}

ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [ -n "$ncu" ]; then
  "$ncu" --nvtx --clock-control none --metrics gpu__time_duration.sum \
    lua5.4 "$here/workload.lua" > "$out/ncu.txt" 2>&1
  echo "ncu: $ncu (exit $?)" >> "$out/summary.txt"
  # The range stacks ncu prints per kernel ("<0,vyre launch nv_inc>"), not the program's
  # own output. Compile ranges hold no kernel, so ncu has none of them to show.
  grep -o '<[0-9]*,vyre [^>]*>' "$out/ncu.txt" | sort | uniq -c > "$out/ncu-ranges.txt"
  check ncu "$out/ncu-ranges.txt"
else
  echo "ncu: not found" >> "$out/summary.txt"
fi

nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
  /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -n 1)
if [ -n "$nsys" ]; then
  "$nsys" profile --trace=nvtx,cuda --force-overwrite=true -o "$out/nsys" \
    lua5.4 "$here/workload.lua" > "$out/nsys-profile.txt" 2>&1
  echo "nsys: $nsys profile (exit $?)" >> "$out/summary.txt"
  if [ -f "$out/nsys.nsys-rep" ]; then
    "$nsys" stats --report nvtx_sum "$out/nsys.nsys-rep" > "$out/nsys-nvtx.txt" 2>&1
    check nsys "$out/nsys-nvtx.txt"
  else
    echo "nsys: no report made ($(ls "$out" | grep -c qdstrm) .qdstrm files)" >> "$out/summary.txt"
  fi
else
  echo "nsys: not found" >> "$out/summary.txt"
fi
cat "$out/summary.txt"
