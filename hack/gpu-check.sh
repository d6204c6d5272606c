#!/usr/bin/env bash
# Check the node agent against a real GPU and the real NVML (CI never runs this: no GPU there).
#
#   bash hack/gpu-check.sh            # needs an NVIDIA GPU, its driver, and network for pip
#
# 1. installs the project (and CuPy, a package that ships CUDA wheels) into .venv-gpu;
# 2. starts a process that allocates ALLOC_MIB of GPU memory on GPU 0 and holds it;
# 3. makes that real PID look like a pod's container (a --proc-root with its cgroup file and a
#    --pods-file whose pod declares DECLARED_MIB on GPU 0), then runs
#    `gpu-extender agent --once --print` against the real NVML;
# 4. checks: GPU 0 is in the annotation with its UUID and memory, the allocation shows up as the
#    pod's used memory (>= ALLOC_MIB), and as an overuse of its declaration.
# Prints the agent's whole output, for the record.
set -euo pipefail
cd "$(dirname "$0")/.."
ALLOC_MIB=${ALLOC_MIB:-2048}
DECLARED_MIB=${DECLARED_MIB:-1024}
VENV=${VENV:-.venv-gpu}
WORK=$(mktemp -d)
ALLOCATOR_PID=""
cleanup() { [ -n "$ALLOCATOR_PID" ] && kill "$ALLOCATOR_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used --format=csv
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet -e . cupy-cuda12x
PY="$VENV/bin/python"

"$PY" - "$ALLOC_MIB" > "$WORK/allocator.log" 2>&1 <<'PYEOF' &
import sys, time
import cupy
block = cupy.zeros(int(sys.argv[1]) * 2**20, dtype=cupy.uint8)  # really touches the memory
block += 1
cupy.cuda.runtime.deviceSynchronize()
print("allocated", flush=True)
time.sleep(600)
PYEOF
ALLOCATOR_PID=$!
for _ in $(seq 60); do grep -q allocated "$WORK/allocator.log" 2>/dev/null && break; sleep 1; done
grep -q allocated "$WORK/allocator.log" || { cat "$WORK/allocator.log"; echo "allocation failed"; exit 1; }

UID_="0a0b0c0d-0000-4000-8000-000000000001"
CID=$(printf 'c%.0s' $(seq 64))
mkdir -p "$WORK/proc/$ALLOCATOR_PID"
echo "0::/kubepods/burstable/pod$UID_/$CID" > "$WORK/proc/$ALLOCATOR_PID/cgroup"
NODE=$(hostname)
"$PY" - "$WORK/pods.json" "$NODE" "$UID_" "$CID" "$DECLARED_MIB" <<'PYEOF'
import json, sys
path, node, uid, cid, declared = sys.argv[1:]
assigned = {"version": 1, "node": node, "kind": "vram", "type": "", "generation": 1,
            "gpus": [{"index": 0, "vramMiB": int(declared)}]}
pod = {"kind": "Pod", "metadata": {"name": "gpu-check", "namespace": "default", "uid": uid,
       "annotations": {"gpu-extender.io/assigned": json.dumps(assigned)}},
       "spec": {"nodeName": node, "containers": [{"name": "alloc"}]},
       "status": {"phase": "Running",
                  "containerStatuses": [{"name": "alloc", "containerID": "containerd://" + cid}]}}
json.dump({"apiVersion": "v1", "kind": "List", "items": [pod]}, open(path, "w"))
PYEOF

"$VENV/bin/gpu-extender" agent --node-name "$NODE" --once --print \
  --proc-root "$WORK/proc" --pods-file "$WORK/pods.json" | tee "$WORK/out.json"

"$PY" - "$WORK/out.json" "$ALLOC_MIB" "$DECLARED_MIB" <<'PYEOF'
import json, sys
out = json.load(open(sys.argv[1]))
alloc, declared = int(sys.argv[2]), int(sys.argv[3])
gpu0 = next(g for g in out["annotation"]["gpus"] if g["index"] == 0)
assert gpu0["uuid"].startswith("GPU-") and gpu0["memoryMiB"] > 0, gpu0
usage = [u for u in out["usage"] if u["pod"] == "gpu-check"]
assert usage, f"the allocation is not attributed: {out['usage']} (NVML may hide other PIDs' memory without hostPID)"
used = sum(u["usedMiB"] for u in usage)
assert used >= alloc, f"used {used} MiB < allocated {alloc} MiB"
assert any(o["pod"] == "gpu-check" and o["declaredMiB"] == declared for o in out["overuse"]), out["overuse"]
print(f"OK: GPU 0 {gpu0['uuid']} ({gpu0['type']}, {gpu0['memoryMiB']} MiB); "
      f"the allocation shows as {used} MiB used against {declared} MiB declared (overuse)")
PYEOF
