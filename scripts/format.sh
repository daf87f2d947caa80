#!/bin/sh
# format.sh — formats the C sources with the repository's .clang-format (clang-format 14):
#   sh scripts/format.sh           rewrites src/ include/ tests/c/ tests/binding/,
#                                  tests/fakecuda/, tests/fuzz/, examples/embed/ and
#                                  bench/*.c in place
#   sh scripts/format.sh --check   changes nothing; prints what would change and exits
#                                  non-zero if any file is not formatted
# POSIX sh, like the other scripts. CLANG_FORMAT=clang-format-NN picks another binary.
set -eu
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}

case "${1:-}" in
  "") check=0 ;;
  --check) check=1 ;;
  *) echo "usage: sh scripts/format.sh [--check]" >&2; exit 2 ;;
esac
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
  echo "format.sh: $CLANG_FORMAT not found. Fix: apt-get install clang-format" >&2
  exit 2
fi

# The file list (no names with spaces in this tree), sorted for a stable order.
set --
for f in $(find src include tests/c tests/binding tests/fakecuda tests/fuzz examples/embed -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort) \
         bench/*.c; do
  if [ -f "$f" ]; then set -- "$@" "$f"; fi
done
[ "$#" -gt 0 ] || { echo "format.sh: no C sources found" >&2; exit 2; }

if [ "$check" = 1 ]; then
  if "$CLANG_FORMAT" --style=file --dry-run -Werror "$@"; then
    echo "format.sh: $# files formatted"
  else
    echo "format.sh: some files are not formatted. Fix: sh scripts/format.sh" >&2
    exit 1
  fi
else
  "$CLANG_FORMAT" --style=file -i "$@"
  echo "format.sh: formatted $# files"
fi
