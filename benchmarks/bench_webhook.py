"""Benchmark of the admission webhook: review latency over TLS, as the API server sees it.

    .venv/bin/python benchmarks/bench_webhook.py                 # 3,000 reviews per case
    .venv/bin/python benchmarks/bench_webhook.py --reviews 500   # quick

What is measured: ``gpu-extender webhook`` (gunicorn, TLS with the certificate from
``gpu-extender webhook-certs``) on the GKE mapping of docs/admission/gke.yaml, driven like the
API server drives it: one keep-alive HTTPS connection, one AdmissionReview at a time, a new UID
each time. Latency is client-side, from sending the request to having read the whole answer.
Cases: /validate and /mutate for a typed pod (1 x A100, family), a MIG pod, a VRAM share, a
pod without GPUs, and an invalid pod (refused). In-process: the same reviews through
``PodAdmission`` alone (decode + patch, no HTTP), to show where the time goes.

The floor: a plain Flask app under the same gunicorn/TLS settings that parses the body with
orjson and answers ``allowed: true`` with the uid. Both run in the same invocation on the same
bodies, so the ratio is the webhook's own cost.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import os
import platform as host
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from extender.config import load_config  # noqa: E402
from extender.platform import build_platform  # noqa: E402
from extender.webhook.admit import PodAdmission  # noqa: E402
from extender.webhook.review import AdmissionRequest  # noqa: E402

CONFIG = REPO / "docs" / "admission" / "gke.yaml"

FLOOR_APP = '''
import orjson
from flask import Flask, Response, request
from gunicorn.app.base import BaseApplication
import sys

app = Flask("floor")

@app.post("/<endpoint>")
def review(endpoint):
    body = orjson.loads(request.get_data())
    uid = body["request"]["uid"]
    return Response(orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                  "response": {"uid": uid, "allowed": True}}),
                    content_type="application/json")

@app.get("/healthz")
def healthz():
    return "ok"

class App(BaseApplication):
    def load_config(self):
        port, cert, key = sys.argv[1:4]
        for k, v in {"bind": [f"127.0.0.1:{port}"], "workers": 1, "worker_class": "gthread",
                     "threads": 4, "keepalive": 120, "certfile": cert, "keyfile": key,
                     "control_socket_disable": True, "loglevel": "warning"}.items():
            if k in self.cfg.settings:
                self.cfg.set(k, v)
    def load(self):
        return app

App().run()
'''


def container(limits: dict[str, str]) -> dict[str, Any]:
    return {"name": "main", "image": "registry.example/app:1", "resources": {"limits": limits}}


def pod(limits: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "bench", "namespace": "ml", "labels": labels or {}},
            "spec": {"schedulerName": "default-scheduler", "containers": [
                container(limits), container({"cpu": "1"})]}}


CASES = {
    "typed a100 x1": pod({"nvidia.com/gpu": "1"}, {"gpu-extender.io/accelerator": "a100"}),
    "MIG 1g.10gb": pod({"nvidia.com/mig-1g.10gb": "1"},
                       {"gpu-extender.io/accelerator": "a100-80gb"}),
    "VRAM 6Gi (l4)": pod({"gpu-extender.io/gpu-memory": "6Gi"},
                         {"gpu-extender.io/accelerator": "l4"}),
    "no GPU": pod({"cpu": "2"}),
    "invalid (refused)": pod({"nvidia.com/gpu": "1"}, {"gpu-extender.io/accelerator": "a1000"}),
}


def review(obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "request": {"uid": str(uuid.uuid4()),
                                     "kind": {"group": "", "version": "v1", "kind": "Pod"},
                                     "resource": {"group": "", "version": "v1",
                                                  "resource": "pods"},
                                     "namespace": "ml", "operation": "CREATE",
                                     "object": obj}})


@contextmanager
def server(command: list[str], port: int, ca: Path) -> Iterator[None]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=REPO, start_new_session=True)
    try:
        context = ssl.create_default_context(cafile=str(ca))
        deadline = time.monotonic() + 30
        while True:
            try:
                connection = http.client.HTTPSConnection("127.0.0.1", port, context=context,
                                                         timeout=2)
                connection.request("GET", "/healthz")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield
    finally:
        os.killpg(process.pid, 15)
        process.wait(10)


def drive(port: int, ca: Path, endpoint: str, obj: dict[str, Any], n: int) -> list[float]:
    context = ssl.create_default_context(cafile=str(ca))
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    headers = {"Content-Type": "application/json"}
    bodies = [review(obj) for _ in range(n + 50)]
    out = []
    for i, body in enumerate(bodies):
        started = time.perf_counter()
        connection.request("POST", f"/{endpoint}", body=body, headers=headers)
        reply = connection.getresponse()
        data = reply.read()
        elapsed = time.perf_counter() - started
        assert reply.status == 200, data
        if i >= 50:  # warm-up: connection, caches
            out.append(elapsed)
    connection.close()
    return out


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    q = statistics.quantiles(ordered, n=100)
    return q[49] * 1e3, q[98] * 1e3, ordered[-1] * 1e3


def in_process(n: int) -> dict[str, float]:
    admission = PodAdmission(build_platform(load_config(CONFIG)))
    out = {}
    for name, obj in CASES.items():
        request = AdmissionRequest("u", "Pod", "ml", "CREATE", obj)
        started = time.perf_counter()
        for _ in range(n):
            admission.validate(request)
            admission.mutate(request)
        out[name] = (time.perf_counter() - started) / n * 1e6
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        certs = Path(tmp)
        subprocess.run([sys.executable, "-m", "extender", "webhook-certs", "--ip", "127.0.0.1",
                        "--out-dir", str(certs)], check=True, cwd=REPO,
                       stdout=subprocess.DEVNULL)
        ca, cert, key = certs / "ca.crt", certs / "tls.crt", certs / "tls.key"
        floor_file = certs / "floor.py"
        floor_file.write_text(FLOOR_APP)
        ours_port, floor_port = 28443, 28444
        ours = [sys.executable, "-m", "extender", "webhook", "--host", "127.0.0.1", "--port",
                str(ours_port), "--config", str(CONFIG), "--tls-cert-file", str(cert),
                "--tls-private-key-file", str(key), "--log-level", "warning"]
        floor = [sys.executable, str(floor_file), str(floor_port), str(cert), str(key)]
        print(f"# bench_webhook {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
              f"{host.node()}, {os.cpu_count()} CPUs, Python {host.python_version()}, "
              f"{args.reviews} reviews per case")
        print(f"{'case':<20} {'endpoint':<9} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
              f"{'floor p50':>9} {'floor p99':>9} {'p50 ratio':>9}")
        with server(ours, ours_port, ca), server(floor, floor_port, ca):
            for name, obj in CASES.items():
                for endpoint in ("validate", "mutate"):
                    # side by side: ours, then the floor, on the same bodies
                    mine = drive(ours_port, ca, endpoint, obj, args.reviews)
                    base = drive(floor_port, ca, endpoint, obj, args.reviews)
                    p50, p99, top = percentiles(mine)
                    f50, f99, _ = percentiles(base)
                    print(f"{name:<20} {endpoint:<9} {p50:7.3f} {p99:7.3f} {top:7.2f} "
                          f"{f50:9.3f} {f99:9.3f} {p50 / f50:9.2f}")
    print("\nin-process PodAdmission (validate + mutate, no HTTP), microseconds per review pair:")
    for name, micros in in_process(args.reviews).items():
        print(f"  {name:<20} {micros:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
