#!/usr/bin/env bash
# check-tracked.sh: fails if git tracks build output — a file over 1 MiB,
# an executable binary (ELF, Mach-O, PE), or a Go test binary (*.test).
# Run by `make lint`, so built binaries cannot come back into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$limit" ]; then
    echo "tracked file over 1 MiB: $f ($size bytes)"; bad=1; continue
  fi
  case "$f" in *.test) echo "tracked test binary: $f"; bad=1; continue ;; esac
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46|cffaedfe|cefaedfe|feedface|feedfacf|4d5a*) echo "tracked binary: $f"; bad=1 ;;
  esac
done < <(git ls-files -z)
if [ "$bad" -ne 0 ]; then
  echo "build output must not be tracked: git rm --cached it and extend .gitignore" >&2
  exit 1
fi
