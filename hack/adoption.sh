#!/usr/bin/env bash
# adoption.sh: does what a Cluster API provider does to adopt the drop-in,
# on a copy of Cluster API itself, and fails if that lifts anything.
#
#  1. copies Cluster API $CAPI_VERSION (and its api module, which its go.mod
#     replaces with ./api) from the Go module cache into bin/adoption;
#  2. swaps sigs.k8s.io/cluster-api/controllers/clustercache for
#     github.com/clusterpool/clusterpool/clusterapi/clustercache in its three
#     managers, in the third-party import group, then gofmt;
#  3. requires github.com/clusterpool/clusterpool/clusterapi (replaced by this
#     checkout, as a published version would be fetched) and runs go mod tidy;
#  4. fails if any require line of Cluster API's own go.mod changed version or
#     went away;
#  5. builds ./core (and the two kubeadm managers), and prints the go.mod diff.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
ver="${CAPI_VERSION:-v1.14.2}"
work="$root/bin/adoption"
old='"sigs.k8s.io/cluster-api/controllers/clustercache"'
new='"github.com/clusterpool/clusterpool/clusterapi/clustercache"'
mains=(core/main.go bootstrap/kubeadm/main.go controlplane/kubeadm/main.go)

# changes prints the lines diff -u adds or removes (diff exits 1 on a difference).
changes() { diff -u "$1" "$2" | sed -n '/^[-+][^-+]/p' || true; }
dir_of() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }
rm -rf "$work"
mkdir -p "$work"
cp -r "$(dir_of "sigs.k8s.io/cluster-api@$ver")" "$work/capi"
cp -r "$(dir_of "sigs.k8s.io/cluster-api/api@$ver")" "$work/capi/api"
chmod -R u+w "$work/capi"
cd "$work/capi"
cp go.mod "$work/go.mod.orig"

for f in "${mains[@]}"; do
  grep -q "^	$old\$" "$f" || { echo "adoption: $f does not import $old" >&2; exit 1; }
  # Drop the old line; put the new one first in the group after the standard
  # library's (the first blank line of the import block); gofmt sorts it.
  awk -v old="	$old" -v new="	$new" '
    /^import \($/ { inimport = 1 }
    inimport && $0 == old { next }
    { print }
    inimport && !placed && /^$/ { print new; placed = 1 }
    inimport && /^\)$/ { inimport = 0 }
  ' "$f" > "$f.new"
  mv "$f.new" "$f"
  gofmt -w "$f"
  if [ -n "$(gofmt -l "$f")" ]; then echo "adoption: $f is not gofmt-clean" >&2; exit 1; fi
done

go mod edit \
  -require=github.com/clusterpool/clusterpool/clusterapi@v0.0.0 \
  -replace=github.com/clusterpool/clusterpool/clusterapi="$root/clusterapi" \
  -replace=github.com/clusterpool/clusterpool="$root"
go mod tidy

# Every require of Cluster API's go.mod, at the same version, still there.
reqs() { go mod edit -json "$1" | awk '/"Path":/ { p = $2 } /"Version":/ { gsub(/[",]/, "", p); gsub(/[",]/, "", $2); print p, $2 }' | sort -u; }
changed=$(comm -23 <(reqs "$work/go.mod.orig") <(reqs go.mod) || true)
if [ -n "$changed" ]; then
  echo "adoption: the drop-in changes these require lines of Cluster API $ver:" >&2
  while read -r path v; do
    echo "  $path $v -> $(reqs go.mod | awk -v p="$path" '$1 == p { print $2 }')" >&2
  done <<< "$changed"
  exit 1
fi

go build -o /dev/null ./core
go build -o /dev/null ./bootstrap/kubeadm ./controlplane/kubeadm
echo "adoption: Cluster API $ver builds on the drop-in; its go.mod changes only by these lines:"
changes "$work/go.mod.orig" go.mod
echo "adoption: the managers' import changes:"
for f in "${mains[@]}"; do changes "$(dir_of "sigs.k8s.io/cluster-api@$ver")/$f" "$f" | sed "s|^|  $f: |"; done
