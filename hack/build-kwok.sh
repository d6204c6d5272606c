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

# The cache key (read from go.mod text: the "already built" path needs no `go` invocation),
# reuse of a cached build, and the per-key lock: hack/lib/cached-tool.sh.
source "$repo_root/hack/lib/cached-tool.sh"
cached_tool_or_lock build-kwok "$kwok_module" sigs.k8s.io/kwok kwok
kwok_version=$tool_version
kwok_bin=$tool_bin

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
