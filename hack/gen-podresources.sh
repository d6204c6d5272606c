#!/usr/bin/env bash
# Regenerate the kubelet PodResources gRPC stubs from extender/agent/podresources/api.proto.
# The stubs are committed so that installing gpu-extender needs no protoc/grpcio-tools; this
# script (and tests/agent/test_podresources_stubs.py) keeps them equal to the proto.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${1:-.}
"$PY" -m grpc_tools.protoc -I . --python_out="$OUT" --pyi_out="$OUT" --grpc_python_out="$OUT" \
  extender/agent/podresources/api.proto
