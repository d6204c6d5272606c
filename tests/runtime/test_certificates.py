"""The serving certificate's expiry: exported at scrape time from the file served, warned about
at start when close (a generated certificate nobody upgrades expires silently otherwise)."""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client import CollectorRegistry, generate_latest

from extender.platform import load_platform
from extender.runtime.certificates import METRIC, CertificateExpiry, not_after, warn_if_expiring
from extender.webhook.app import create_app

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def certificate(path: Path, days: int) -> float:
    """A self-signed certificate valid ``days`` from NOW; returns its notAfter."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpu-extender")])
    expiry = NOW + datetime.timedelta(days=days)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(NOW - datetime.timedelta(days=30)).not_valid_after(expiry)
            .sign(key, hashes.SHA256()))
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return expiry.timestamp()


def test_the_metric_is_the_notafter_of_the_file_as_it_is_now(tmp_path: Path) -> None:
    cert = tmp_path / "tls.crt"
    first = certificate(cert, 365)
    registry = CollectorRegistry()
    registry.register(CertificateExpiry([cert]))
    assert registry.get_sample_value(METRIC, {"file": str(cert)}) == first
    renewed = certificate(cert, 730)  # the kubelet swapped the Secret: read at the next scrape
    assert registry.get_sample_value(METRIC, {"file": str(cert)}) == renewed


def test_an_unreadable_certificate_is_no_sample_not_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "gone.crt"
    (tmp_path / "junk.crt").write_text("not a certificate")
    assert not_after(missing) is None and not_after(tmp_path / "junk.crt") is None
    registry = CollectorRegistry()
    registry.register(CertificateExpiry([missing, tmp_path / "junk.crt"]))
    assert METRIC in generate_latest(registry).decode()  # the family, without samples


def test_a_certificate_expiring_within_30_days_is_warned_about(tmp_path: Path) -> None:
    soon, later, past = tmp_path / "soon.crt", tmp_path / "later.crt", tmp_path / "past.crt"
    certificate(soon, 10)
    certificate(later, 200)
    certificate(past, -3)
    warnings = warn_if_expiring([soon, later, past], now=NOW.timestamp())
    assert warnings == [f"TLS certificate {soon} expires in 10.0 days",
                        f"TLS certificate {past} expired 3.0 days ago"]


def test_the_webhooks_metrics_export_its_certificates_expiry(tmp_path: Path) -> None:
    cert = tmp_path / "tls.crt"
    expiry = certificate(cert, 90)
    app = create_app(load_platform(), certificates=(cert,))
    text = app.test_client().get("/metrics").data.decode()
    line = next(line for line in text.splitlines() if line.startswith(METRIC + "{"))
    assert float(line.rsplit(" ", 1)[1]) == expiry
