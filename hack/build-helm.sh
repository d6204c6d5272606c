#!/usr/bin/env bash
# Build helm v3 from its published Go module (helm.sh/helm/v3, package cmd/helm) into a cache
# outside the clone, for `make check-deploy` (no release binaries are downloadable here).
#
#   hack/build-helm.sh          # progress on stderr, the path of the helm binary last on stdout
#
# The version is pinned in exactly one place: `helm.sh/helm/v3` in hack/helm/go.mod. To bump it:
#   cd hack/helm && GOTOOLCHAIN=local go get -tool helm.sh/helm/v3/cmd/helm@v3.X.Y && go mod tidy
# The cache key is the version, so a bump triggers a fresh build; an existing build for the key is
# reused without invoking the Go compiler.
#
# Environment:
#   GPU_EXTENDER_CACHE   cache root (default ~/.cache/gpu-extender)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helm_module="$repo_root/hack/helm"

# The cache key (read from go.mod text: the "already built" path needs no `go` invocation),
# reuse of a cached build, and the per-key lock: hack/lib/cached-tool.sh.
source "$repo_root/hack/lib/cached-tool.sh"
cached_tool_or_lock build-helm "$helm_module" helm.sh/helm/v3 helm
helm_version=$tool_version
helm_bin=$tool_bin

export CGO_ENABLED=0 GOTOOLCHAIN=local
start_s=$SECONDS
# The ldflags of helm's own Makefile: its version, and the Kubernetes version `helm template` and
# `helm lint` assume without a cluster (client-go v0.X.Y means Kubernetes 1.X; unset it is 1.20,
# which fails the chart's kubeVersion constraint).
client_go=$(awk '$1 == "k8s.io/client-go" && $2 ~ /^v/ {print $2; exit}' "$helm_module/go.mod")
k8s_minor=$(echo "$client_go" | cut -d. -f2)
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version"
for package in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X helm.sh/helm/v3/$package.k8sVersionMajor=1 -X helm.sh/helm/v3/$package.k8sVersionMinor=$k8s_minor"
done
partial="$key_dir/bin.partial"
rm -rf "$partial"
mkdir -p "$partial"
echo "build-helm: building helm $helm_version from its Go module (a cold build takes 3-5 minutes on 2 cores: 2m50s of CPU)" >&2
(cd "$helm_module" && go mod download && go build -trimpath -ldflags "$ldflags" -o "$partial/helm" helm.sh/helm/v3/cmd/helm)
rm -rf "$key_dir/bin"
mv "$partial" "$key_dir/bin"
echo "build-helm: built helm $helm_version in $((SECONDS - start_s))s" >&2
echo "$helm_bin"
