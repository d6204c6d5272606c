"""Prometheus metrics of one webhook app (own registry, no module-level collectors)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from extender.runtime.certificates import CertificateExpiry

PREFIX = "gpu_extender_webhook"
ENDPOINTS = ("validate", "mutate")
BUCKETS = (0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class WebhookMetrics:
    def __init__(self, certificates: Sequence[Path] = ()) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        if certificates:
            self.registry.register(CertificateExpiry(certificates))
        latency = Histogram(f"{PREFIX}_review_duration_seconds",
                            "Time to answer one AdmissionReview, by endpoint.", ["endpoint"],
                            buckets=BUCKETS, registry=self.registry)
        self._reviews = Counter(
            f"{PREFIX}_reviews",
            "AdmissionReviews answered, by endpoint and outcome (no-gpu, allowed, refused, forged, "
            "patched, unchanged, invalid, not-a-pod, error, malformed).",
            ["endpoint", "outcome"], registry=self.registry)
        self.observe = {e: latency.labels(e).observe for e in ENDPOINTS}

    def review(self, endpoint: str, outcome: str) -> None:
        self._reviews.labels(endpoint, outcome).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
