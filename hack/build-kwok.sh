#!/usr/bin/env bash
# Build kwok (sigs.k8s.io/kwok, fake nodes and a pod lifecycle without a kubelet) from its published
# Go module into a cache outside the clone, for the end-to-end tests that need pods to go Running
# and deletions to complete (preemption). No release binaries are downloadable here.
#
#   hack/build-kwok.sh          # progress on stderr, the path of the kwok binary last on stdout
#
# The version is pinned in exactly one place: `sigs.k8s.io/kwok` in hack/kwok/go.mod. To bump it:
#   cd hack/kwok && GOTOOLCHAIN=local go get -tool sigs.k8s.io/kwok/cmd/kwok@v0.X.Y && go mod tidy
# The cache key is the version, so a bump triggers a fresh build; an existing build for the key is
# reused without invoking the Go compiler. The stages kwok runs are the repository's own
# (localcluster/kwok_stages.yaml, copied from the module's kustomize/stage/*/fast at that version).
#
# Environment:
#   GPU_EXTENDER_CACHE   cache root (default ~/.cache/gpu-extender)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kwok_module="$repo_root/hack/kwok"

# Read from go.mod text so that the "already built" path needs no `go` invocation.
kwok_version=$(awk '$1 == "sigs.k8s.io/kwok" && $2 ~ /^v/ {print $2; exit}' "$kwok_module/go.mod")
if [[ -z "$kwok_version" ]]; then
  echo "build-kwok: cannot read the pinned sigs.k8s.io/kwok version from hack/kwok/go.mod" >&2
  exit 1
fi

cache_root=${GPU_EXTENDER_CACHE:-$HOME/.cache/gpu-extender}
key_dir="$cache_root/kwok-${kwok_version#v}"
kwok_bin="$key_dir/bin/kwok"

if [[ -x "$kwok_bin" ]]; then
  echo "build-kwok: reusing cached kwok $kwok_version" >&2
  echo "$kwok_bin"
  exit 0
fi

mkdir -p "$key_dir"
# Serialise concurrent builds of the same key; the second waits and then reuses the first's binary.
exec 9>"$key_dir/.lock"
if command -v flock >/dev/null && ! flock -n 9; then
  echo "build-kwok: another build of kwok $kwok_version is running; waiting for $key_dir/.lock" >&2
  flock 9
  if [[ -x "$kwok_bin" ]]; then
    echo "$kwok_bin"
    exit 0
  fi
fi

export CGO_ENABLED=0 GOTOOLCHAIN=local
start_s=$SECONDS
ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version"
partial="$key_dir/bin.partial"
rm -rf "$partial"
mkdir -p "$partial"
# Cold build measured on the 2-core dev machine under load: 7m56s (hack/README.md).
echo "build-kwok: building kwok $kwok_version from its Go module (a cold build takes about 8 minutes on 2 cores)" >&2
(cd "$kwok_module" && go mod download && go build -trimpath -ldflags "$ldflags" -o "$partial/kwok" sigs.k8s.io/kwok/cmd/kwok)
rm -rf "$key_dir/bin"
mv "$partial" "$key_dir/bin"
echo "build-kwok: built kwok $kwok_version in $((SECONDS - start_s))s" >&2
echo "$kwok_bin"
