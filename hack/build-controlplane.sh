#!/usr/bin/env bash
# Build etcd, kube-apiserver and kube-scheduler from published Go modules into a cache outside
# the clone, for the end-to-end tests and the demo (no release binaries are downloadable here).
#
#   hack/build-controlplane.sh          # prints progress on stderr, the bin directory last on stdout
#
# Versions are pinned in exactly one place each:
#   Kubernetes: `k8s.io/kubernetes` in hack/controlplane/go.mod (regenerate with hack/controlplane/update.sh)
#   etcd:       `go.etcd.io/etcd/server/v3` in hack/etcd/go.mod
# The cache key contains both versions, so bumping either one triggers a fresh build; an existing
# complete build for the key is reused without invoking the Go compiler.
#
# Environment:
#   GPU_EXTENDER_CACHE   cache root (default ~/.cache/gpu-extender)
# GOMODCACHE/GOCACHE are left at Go's defaults (~/go/pkg/mod, ~/.cache/go-build) so that reruns and
# other clones on the same machine are warm.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
controlplane_module="$repo_root/hack/controlplane"
etcd_module="$repo_root/hack/etcd"

# Cold-build durations per step, measured on the 2-core dev machine with empty Go caches
# (Go 1.26.8, k8s v1.36.3, etcd v3.6.16; 2026-11-30): downloads ~15 s (213 MB of module zips,
# 760 MB unpacked), etcd 35 s, kube-apiserver 2m40s, kube-scheduler 20 s (it reuses most of the
# apiserver's packages), 3m36s of compiling in total, ~2.5 GB added to GOCACHE.
# Update these figures when re-measuring; they only feed the progress messages.
cold_estimate_step_s=([1]=15 [2]=35 [3]=160 [4]=20)
cold_estimate_total_s=230

# The version lines are read from go.mod text: no `go` invocation is needed to compute the cache
# key, which keeps the "already built" path instant.
required_version() { # <go.mod> <module path>
  awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit}' "$1"
}
k8s_version=$(required_version "$controlplane_module/go.mod" k8s.io/kubernetes)
etcd_version=$(required_version "$etcd_module/go.mod" go.etcd.io/etcd/server/v3)
if [[ -z "$k8s_version" || -z "$etcd_version" ]]; then
  echo "build-controlplane: cannot read pinned versions from hack/*/go.mod" >&2
  exit 1
fi

cache_root=${GPU_EXTENDER_CACHE:-$HOME/.cache/gpu-extender}
key_dir="$cache_root/k8s-${k8s_version#v}-etcd-${etcd_version#v}"
bin_dir="$key_dir/bin"
binaries=(etcd kube-apiserver kube-scheduler)

all_built() {
  local name
  for name in "${binaries[@]}"; do
    [[ -x "$bin_dir/$name" ]] || return 1
  done
}

if all_built; then
  echo "build-controlplane: reusing cached binaries for k8s $k8s_version / etcd $etcd_version" >&2
  echo "$bin_dir"
  exit 0
fi

mkdir -p "$key_dir"
# Serialise concurrent builds of the same key (two test sessions starting at once); the second
# one waits and then finds the binaries already built.
exec 9>"$key_dir/.lock"
if command -v flock >/dev/null && ! flock -n 9; then
  echo "build-controlplane: another build of this key is running; waiting for $key_dir/.lock" >&2
  flock 9
  if all_built; then
    echo "build-controlplane: reusing binaries built by a concurrent run" >&2
    echo "$bin_dir"
    exit 0
  fi
fi

export CGO_ENABLED=0 GOTOOLCHAIN=local
start_s=$SECONDS
step_start_s=$SECONDS
fmt_s() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

remaining_estimate() { # <current step number>: cold-build seconds of this and later steps
  local total=0 step
  for step in "${!cold_estimate_step_s[@]}"; do
    ((step >= $1)) && total=$((total + cold_estimate_step_s[step]))
  done
  echo "$total"
}

begin_step() { # <number> <description>
  step_start_s=$SECONDS
  echo "build-controlplane: [$1/4] $2 (elapsed $(fmt_s $((SECONDS - start_s))); a cold build" \
    "needs about $(fmt_s "$(remaining_estimate "$1")") more on 2 cores, much less when Go's caches are warm)" >&2
}

end_step() {
  echo "build-controlplane:       done in $(fmt_s $((SECONDS - step_start_s)))" >&2
}

# `go build` is silent for many minutes; print a heartbeat so CI logs show it is alive.
run_with_heartbeat() { # <label> <command...>
  local label=$1
  shift
  "$@" &
  local pid=$! minutes_reported=0 minutes
  trap 'kill "$pid" 2>/dev/null; exit 130' INT TERM
  while kill -0 "$pid" 2>/dev/null; do
    sleep 2
    minutes=$(((SECONDS - step_start_s) / 60))
    if ((minutes > minutes_reported)) && kill -0 "$pid" 2>/dev/null; then
      minutes_reported=$minutes
      echo "build-controlplane:       still $label ($(fmt_s $((SECONDS - step_start_s))))" >&2
    fi
  done
  trap - INT TERM
  wait "$pid"
}

k8s_minor=$(echo "$k8s_version" | cut -d. -f2)
k8s_ldflags="-s -w
  -X k8s.io/component-base/version.gitVersion=$k8s_version
  -X k8s.io/component-base/version.gitMajor=1
  -X k8s.io/component-base/version.gitMinor=$k8s_minor
  -X k8s.io/component-base/version.gitTreeState=clean"
k8s_ldflags=$(echo $k8s_ldflags) # join lines

# Build into a scratch directory and rename at the end, so an interrupted build never looks cached.
partial_dir="$key_dir/bin.partial"
rm -rf "$partial_dir"
mkdir -p "$partial_dir"

begin_step 1 "downloading Go modules for k8s $k8s_version and etcd $etcd_version"
(cd "$controlplane_module" && go mod download) && (cd "$etcd_module" && go mod download)
end_step

begin_step 2 "building etcd $etcd_version"
(cd "$etcd_module" && run_with_heartbeat "building etcd" \
  go build -trimpath -ldflags "-s -w" -o "$partial_dir/etcd" go.etcd.io/etcd/server/v3)
end_step

begin_step 3 "building kube-apiserver $k8s_version"
(cd "$controlplane_module" && run_with_heartbeat "building kube-apiserver" \
  go build -trimpath -ldflags "$k8s_ldflags" -o "$partial_dir/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
end_step

begin_step 4 "building kube-scheduler $k8s_version"
(cd "$controlplane_module" && run_with_heartbeat "building kube-scheduler" \
  go build -trimpath -ldflags "$k8s_ldflags" -o "$partial_dir/kube-scheduler" k8s.io/kubernetes/cmd/kube-scheduler)
end_step

rm -rf "$bin_dir"
mv "$partial_dir" "$bin_dir"
echo "build-controlplane: built k8s $k8s_version / etcd $etcd_version in $(fmt_s $((SECONDS - start_s)))" \
  "(cold-build reference: $(fmt_s $cold_estimate_total_s))" >&2
echo "$bin_dir"
