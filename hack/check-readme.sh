#!/usr/bin/env bash
# check-readme.sh: fails unless README.md has at most 250 lines (a newcomer
# reads it in ten minutes; the long form is in docs/) and its Go quick starts
# compile.
#
# A quick start is the ```go block that follows a line
# `<!-- quickstart:NAME -->` (NAME: letters, digits, - and _). Each is a whole
# program (package main, its imports). It is written to bin/readme/NAME/main.go
# and checked with `go vet`:
#   - a block that imports no Cluster API package is a package of the root
#     module (github.com/clusterpool/clusterpool/bin/readme/NAME), built
#     against the root go.mod as a user's program would be;
#   - a block that imports sigs.k8s.io/cluster-api (the root module must not
#     require it) is a module of its own whose requirements are those of
#     examples/capi (Cluster API types), with clusterpool replaced by this
#     working tree.
# Blocks must be gofmt'ed. The kube and pool quick starts must be there, and a
# malformed marker fails (a typo must not drop a block silently). bin/ is
# gitignored; bin/readme is removed on exit, so `go test ./...` of the root
# module never sees it. Run by `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
readme=README.md
out=bin/readme

lines=$(wc -l < "$readme")
if [ "$lines" -gt 250 ]; then
  echo "check-readme: $readme has $lines lines; at most 250 (move the long form to docs/)" >&2
  exit 1
fi

rm -rf "$out"
trap 'rm -rf "$root/$out"' EXIT

# extract: writes each marked block to $out/NAME/main.go, prints the names.
names=$(awk -v out="$out" '
  /<!-- *quickstart/ && !/^<!-- quickstart:[A-Za-z0-9_-]+ -->[[:space:]]*$/ {
    print "check-readme: malformed marker on line " NR ": " $0 > "/dev/stderr"; exit 1
  }
  /^<!-- quickstart:[A-Za-z0-9_-]+ -->[[:space:]]*$/ {
    name = $0; sub(/^<!-- quickstart:/, "", name); sub(/ -->.*$/, "", name)
    if (seen[name]++) { print "check-readme: quickstart:" name " appears twice" > "/dev/stderr"; exit 1 }
    want = 1; next
  }
  want && /^```go[[:space:]]*$/ { want = 0; inb = 1; file = out "/" name "/main.go"
    system("mkdir -p " out "/" name); printf "" > file; print name; next }
  want && !/^[[:space:]]*$/ { print "check-readme: quickstart:" name " is not followed by a ```go block" > "/dev/stderr"; exit 1 }
  inb && /^```[[:space:]]*$/ { inb = 0; close(file); next }
  inb { print > file }
  END { if (inb) { print "check-readme: quickstart:" name " has no closing fence" > "/dev/stderr"; exit 1 } }
' "$readme")
for required in kube pool; do
  if ! grep -qx "$required" <<< "$names"; then
    echo "check-readme: $readme has no <!-- quickstart:$required --> block" >&2
    exit 1
  fi
done

bad=0
for name in $names; do
  dir=$out/$name
  if grep -q '"sigs.k8s.io/cluster-api' "$dir/main.go"; then
    # A module of its own: examples/capi's requirements and sums, its
    # relative replaces made absolute, the module renamed.
    sed -e "s|^module .*|module readme/$name|" \
        -e "s|=> \.\./\.\.|=> $root|" examples/capi/go.mod > "$dir/go.mod"
    cp examples/capi/go.sum "$dir/go.sum"
    if ! grep -q "=> $root\$" "$dir/go.mod"; then
      echo "check-readme: examples/capi/go.mod no longer replaces clusterpool with ../.." >&2
      exit 1
    fi
    where="its own module (examples/capi's requirements)"
    run=(env GOWORK=off GOFLAGS=-mod=readonly go vet .)
    rundir=$dir
  else
    where="the root module"
    run=(env GOWORK=off GOFLAGS=-mod=readonly go vet "./$dir")
    rundir=$root
  fi
  echo "check-readme: quickstart:$name ($where): gofmt, go vet"
  if [ -n "$(gofmt -l "$dir/main.go")" ]; then
    echo "check-readme: README.md quickstart:$name is not gofmt'ed:" >&2
    gofmt -d "$dir/main.go" >&2 || true
    bad=1
  fi
  if ! (cd "$rundir" && "${run[@]}"); then
    echo "check-readme: README.md quickstart:$name does not compile (the failing code is the README's block)" >&2
    bad=1
  fi
done
exit "$bad"
