#!/bin/sh
# bench/nvtx/run.sh OUT — looks at vyre's NVTX ranges with the Nsight tools on a GPU
# machine: runs bench/nvtx/workload.lua under Nsight Compute with --nvtx (it prints the
# NVTX range stack of each kernel it profiles) and, where one is found, Nsight Systems
# (nsys profile, then the ranges of its report: nsys_ranges.py). Writes the tools' output
# under OUT and a summary of which expected ranges each tool showed (OUT/summary.txt).
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

# Nsight Systems: the lent machines have no nsys on the PATH, only the one that comes
# with Nsight Compute, whose profile step cannot import its own .qdstrm (its importer
# needs libdw.so.1, which the machine lacks). NSYS_LIBS names a folder with libdw.so.1
# and its dependencies (copied from a Debian machine); with it the importer makes the
# report, nsys exports it to SQLite and nsys_ranges.py lists the ranges.
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
  /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -n 1)
if [ -n "$nsys" ]; then
  "$nsys" profile --trace=nvtx,cuda --force-overwrite=true -o "$out/nsys" \
    lua5.4 "$here/workload.lua" > "$out/nsys-profile.txt" 2>&1
  echo "nsys: $nsys profile (exit $?)" >> "$out/summary.txt"
  importer=$(ls "$(dirname "$nsys")"/../*/QdstrmImporter 2>/dev/null | head -n 1)
  if [ ! -f "$out/nsys.nsys-rep" ] && [ -f "$out/nsys.qdstrm" ] && [ -n "$importer" ]; then
    LD_LIBRARY_PATH="${NSYS_LIBS:-}:$(dirname "$importer"):${LD_LIBRARY_PATH:-}" \
      "$importer" -i "$out/nsys.qdstrm" > "$out/nsys-import.txt" 2>&1
    echo "nsys: $importer (exit $?)" >> "$out/summary.txt"
  fi
  rm -f "$out/nsys.qdstrm"
  if [ -f "$out/nsys.nsys-rep" ]; then
    LD_LIBRARY_PATH="${NSYS_LIBS:-}:${LD_LIBRARY_PATH:-}" "$nsys" export --type sqlite \
      --force-overwrite true -o "$out/nsys.sqlite" "$out/nsys.nsys-rep" > /dev/null 2>&1
    python3 "$here/nsys_ranges.py" "$out/nsys.sqlite" > "$out/nsys-ranges.txt" 2>&1
    check nsys "$out/nsys-ranges.txt"
  else
    echo "nsys: no report made (set NSYS_LIBS, see above)" >> "$out/summary.txt"
  fi
else
  echo "nsys: not found" >> "$out/summary.txt"
fi
cat "$out/summary.txt"
