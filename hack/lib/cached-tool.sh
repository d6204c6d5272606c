# Sourced by hack/build-helm.sh and hack/build-kwok.sh: the cache key of a Go-built tool and the
# "already built" / "another build is running" paths, shared so that they cannot drift.
#
#   cached_tool_or_lock <label> <go.mod dir> <module path> <binary name>
#
# Reads the module's version from the go.mod text (no `go` invocation), sets tool_version,
# key_dir (<cache root>/<binary>-<version>) and tool_bin; prints tool_bin and exits 0 when the
# binary is already cached (or a concurrent build of the same key finished it). Otherwise it
# returns holding the key's lock on fd 9, with $key_dir created.

cached_tool_or_lock() {
  local label=$1 module_dir=$2 module=$3 binary=$4
  tool_version=$(awk -v m="$module" '$1 == m && $2 ~ /^v/ {print $2; exit}' "$module_dir/go.mod")
  if [[ -z "$tool_version" ]]; then
    echo "$label: cannot read the pinned $module version from $module_dir/go.mod" >&2
    exit 1
  fi
  local cache_root=${GPU_EXTENDER_CACHE:-$HOME/.cache/gpu-extender}
  key_dir="$cache_root/$binary-${tool_version#v}"
  tool_bin="$key_dir/bin/$binary"
  if [[ -x "$tool_bin" ]]; then
    echo "$label: reusing cached $binary $tool_version" >&2
    echo "$tool_bin"
    exit 0
  fi
  mkdir -p "$key_dir"
  # Serialise concurrent builds of the same key; the second waits and then reuses the first's
  # binary.
  exec 9>"$key_dir/.lock"
  if command -v flock >/dev/null && ! flock -n 9; then
    echo "$label: another build of $binary $tool_version is running; waiting for $key_dir/.lock" >&2
    flock 9
    if [[ -x "$tool_bin" ]]; then
      echo "$tool_bin"
      exit 0
    fi
  fi
}
