#!/usr/bin/env bash
# check-readme.sh: fails unless README.md has at most 250 lines (a newcomer
# reads it in ten minutes; the long form is in docs/) and its Go quick starts
# compile.
#
# A quick start is the ```go block that follows a line
# `<!-- quickstart:NAME -->` (NAME: letters, digits, - and _). Each is a whole
# program (package main, its imports). It is written to bin/readme/NAME/main.go
# built as a user would: in a new module (go mod init), the README's install
# block (the ```sh block after `<!-- install -->`) is run line by line, with
# `go get github.com/clusterpool/clusterpool...` standing for a require of
# this working tree (a replace, as a published version would be fetched),
# then `go vet`. So a quick start needs nothing the README does not show.
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

# The install block: its lines, in order.
install=$(awk '
  /^<!-- install -->[[:space:]]*$/ { want = 1; next }
  want && /^```sh[[:space:]]*$/ { inb = 1; want = 0; next }
  inb && /^```[[:space:]]*$/ { exit }
  inb { sub(/[[:space:]]*#.*$/, ""); if ($0 != "") print }
' "$readme")
if ! grep -q '^go get github.com/clusterpool/clusterpool' <<< "$install"; then
  echo "check-readme: $readme has no <!-- install --> sh block that gets github.com/clusterpool/clusterpool" >&2
  exit 1
fi

bad=0
for name in $names; do
  dir=$out/$name
  echo "check-readme: quickstart:$name: a new module, the install block, gofmt, go vet"
  if [ -n "$(gofmt -l "$dir/main.go")" ]; then
    echo "check-readme: README.md quickstart:$name is not gofmt'ed:" >&2
    gofmt -d "$dir/main.go" >&2 || true
    bad=1
  fi
  if ! (
    cd "$dir"
    export GOWORK=off GOFLAGS=-race # as make test builds the library: one compile of its graph
    go mod init "readme/$name" 2>/dev/null
    while read -r line; do
      case "$line" in
        "go get github.com/clusterpool/clusterpool"*)
          go mod edit -require=github.com/clusterpool/clusterpool@v0.0.0 -replace=github.com/clusterpool/clusterpool="$root" ;;
        "go "*) read -ra argv <<< "$line"; "${argv[@]}" > cmd.log 2>&1 || { cat cmd.log >&2; exit 1; } ;;
        *) echo "check-readme: the install block runs only go commands: $line" >&2; exit 1 ;;
      esac
    done <<< "$install"
    go vet .
  ); then
    echo "check-readme: README.md quickstart:$name does not build after the install block" >&2
    bad=1
  fi
done
exit "$bad"
