#!/usr/bin/env bash
# build-tool.sh OUT MODULE_DIR PACKAGE [go build flags...]
# Builds PACKAGE in the tool module MODULE_DIR (relative to the repository)
# into OUT, unless OUT exists. Built binaries are also kept in a per-user
# cache (CLUSTERPOOL_CACHE, default ~/.cache/clusterpool) under OUT's path
# below bin/ and a digest of MODULE_DIR's go.mod, go.sum and the build
# flags, so a fresh clone on the same machine copies instead of building,
# and a changed tool module never reuses an old build. Nothing is
# downloaded but Go modules from the module proxy.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$1" mod="$2" pkg="$3"
shift 3
[ -x "$out" ] && exit 0
rel="${out#"$root/bin/"}"
key=$(cat "$root/$mod/go.mod" "$root/$mod/go.sum" <(echo "$pkg $*") | sha256sum | cut -c1-12)
cache="${CLUSTERPOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterpool}/$rel-$key"
mkdir -p "$(dirname "$out")"
if [ -x "$cache" ]; then
  cp "$cache" "$out"
  exit 0
fi
echo "building $pkg into $out" >&2
(cd "$root/$mod" && go build -trimpath "$@" -o "$out.tmp" "$pkg")
mv "$out.tmp" "$out"
mkdir -p "$(dirname "$cache")"
cp "$out" "$cache"
