"""When a serving certificate expires: a Prometheus gauge read at scrape time, and a warning
in the log at start when it is close.

helm's generated certificates are re-issued only by an install or upgrade (the chart README,
"Certificates"); a cluster nobody upgrades would serve an expired one, and the webhook would
fail open. ``gpu_extender_tls_certificate_expiry_timestamp_seconds`` is what to alert on
(``time() > expiry - 14 days``). The file is read at every scrape, so a certificate the kubelet
swapped in (cert-manager, a helm upgrade) shows at once, as the server serves it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from cryptography import x509
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

_log = logging.getLogger(__name__)

METRIC = "gpu_extender_tls_certificate_expiry_timestamp_seconds"
WARN_DAYS = 30
"""A certificate expiring sooner than this is logged as a warning at start."""


def not_after(path: Path) -> float | None:
    """The first certificate's notAfter in ``path`` (seconds since the epoch); ``None`` when
    the file cannot be read or parsed (the TLS context reports that on its own)."""
    try:
        certificate = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return None
    return certificate.not_valid_after_utc.timestamp()


def warn_if_expiring(paths: Sequence[Path], *, now: float | None = None,
                     days: int = WARN_DAYS) -> list[str]:
    """Log (and return) a warning for each certificate expiring within ``days``."""
    current = time.time() if now is None else now
    warnings = []
    for path in paths:
        expiry = not_after(path)
        if expiry is not None and expiry - current < days * 86400:
            left = (expiry - current) / 86400
            text = (f"TLS certificate {path} expires in {left:.1f} days" if left > 0
                    else f"TLS certificate {path} expired {-left:.1f} days ago")
            warnings.append(text)
            _log.warning(text + "; renew it (helm upgrade re-issues a generated one, "
                         "cert-manager renews its own)", extra={"fields": {
                             "cert_file": str(path), "expiry": expiry}})
    return warnings


class CertificateExpiry(Collector):
    """``gpu_extender_tls_certificate_expiry_timestamp_seconds{file}`` per serving
    certificate, read from disk at scrape time."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self._paths = tuple(paths)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        gauge = GaugeMetricFamily(METRIC, "When the serving TLS certificate expires (notAfter, "
                                  "seconds since the epoch), read from the file served.",
                                  labels=["file"])
        for path in self._paths:
            expiry = not_after(path)
            if expiry is not None:
                gauge.add_metric([str(path)], expiry)
        yield gauge
