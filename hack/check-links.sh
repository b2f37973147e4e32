#!/usr/bin/env bash
# check-links.sh: fails on a Markdown link that does not resolve inside the
# repository. Every relative link of a tracked .md file must name a file or
# folder of the repository (its #anchor is not checked); README.md and
# docs/ link to nothing outside it (no http(s) links, no ../ out of the
# root), and no .md or .go file points at ../shared/. Run by `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bad=0
while IFS= read -r -d '' f; do
  dir=$(dirname "$f")
  strict=0
  case "$f" in README.md|docs/*) strict=1 ;; esac
  # [text](target) and [text]: target; code spans are left out.
  while IFS= read -r target; do
    [ -n "$target" ] || continue
    case "$target" in
      http://*|https://*|mailto:*)
        if [ "$strict" -eq 1 ]; then echo "$f: link leaves the repository: $target"; bad=1; fi
        continue ;;
      \#*) continue ;;
    esac
    path="${target%%#*}"
    path="${path%% *}"
    resolved=$(realpath -m "$dir/$path")
    case "$resolved" in
      "$root"|"$root"/*) ;;
      *) echo "$f: link leaves the repository: $target"; bad=1; continue ;;
    esac
    if [ ! -e "$resolved" ]; then echo "$f: broken link: $target"; bad=1; fi
  done < <(sed -e 's/`[^`]*`//g' "$f" | grep -oE '\]\([^)]+\)|^\[[^]]+\]: *[^ ]+' | sed -E 's/^\]\(//; s/\)$//; s/^\[[^]]+\]: *//')
done < <(git ls-files -z '*.md')
# Nor do docs or code comments point at files beside the repository.
if out=$(git grep -n -e '\.\./shared/' -- '*.md' '*.go'); then
  echo "$out" | sed 's/$/  <- points outside the repository/'; bad=1
fi
if [ "$bad" -ne 0 ]; then
  echo "fix the links above: they must resolve inside the repository" >&2
  exit 1
fi
