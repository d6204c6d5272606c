"""``gpu-extender webhook-certs``: a CA and a serving certificate for the webhook Service, for
clusters without cert-manager.

Writes ``ca.crt``, ``tls.crt`` and ``tls.key`` (ECDSA P-256) and, with ``--manifest``, the
webhook configurations with ``caBundle`` filled in plus a ``kubernetes.io/tls`` Secret, ready
for ``kubectl apply``. The CA key is not kept: to renew, run it again and re-apply both.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from extender.errors import ExtenderError, shown, yaml_problem

WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


@dataclass(frozen=True)
class IssuedCerts:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the API server uses for ``clientConfig.service`` (``<svc>.<ns>.svc``)."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local"]


def _usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, key_encipherment=False,
                         content_commitment=False, data_encipherment=False,
                         key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                         encipher_only=False, decipher_only=False)


def issue(dns_names: Sequence[str], ips: Sequence[str] = (), *, days: int = 365
          ) -> IssuedCerts:
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpu-extender-webhook-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(_usage(ca=True), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (dns_names or ips)[0])])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return IssuedCerts(
        ca_pem=ca.public_bytes(pem),
        cert_pem=cert.public_bytes(pem),
        key_pem=key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()),
    )


class WebhookManifestError(ExtenderError):
    """A ``--manifest`` that is not a webhook manifest webhook-certs can fill in."""


def with_ca_bundle(manifest_text: str, ca_pem: bytes) -> str:
    """The manifest's webhook configurations with every ``clientConfig.caBundle`` set (and
    cert-manager's injection annotation dropped); other objects unchanged. Raises
    ``WebhookManifestError`` naming the document and field where it cannot: not YAML, a
    configuration's parts of the wrong type, or no webhook configuration at all (the caBundle
    would be set nowhere)."""
    bundle = base64.b64encode(ca_pem).decode()
    try:
        documents = [d for d in yaml.safe_load_all(manifest_text) if d]
    except yaml.YAMLError as exc:
        raise WebhookManifestError(f"not YAML ({yaml_problem(exc)})") from exc
    configurations = 0
    for i, document in enumerate(documents):
        if not isinstance(document, dict):
            raise WebhookManifestError(f"document {i}: expected an object with a kind, got "
                                       f"{shown(document)}")
        if document.get("kind") not in WEBHOOK_KINDS:
            continue
        configurations += 1
        metadata = document.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
        if isinstance(annotations, dict):
            annotations.pop("cert-manager.io/inject-ca-from", None)
        webhooks = document.get("webhooks") or []
        if not isinstance(webhooks, list):
            raise WebhookManifestError(f"document {i} ({document['kind']}): webhooks: must be "
                                       f"a list, got {shown(webhooks)}")
        for j, webhook in enumerate(webhooks):
            where = f"document {i} ({document['kind']}): webhooks[{j}]"
            if not isinstance(webhook, dict):
                raise WebhookManifestError(f"{where}: must be an object, got {shown(webhook)}")
            config = webhook.get("clientConfig")
            if config is None:
                config = webhook["clientConfig"] = {}
            if not isinstance(config, dict):
                raise WebhookManifestError(f"{where}.clientConfig: must be an object, got "
                                           f"{shown(config)}")
            config["caBundle"] = bundle
    if not configurations:
        raise WebhookManifestError(f"no {' or '.join(WEBHOOK_KINDS)} in it (the webhook "
                                   "manifest: manifests/webhook.yaml)")
    return yaml.safe_dump_all(documents, sort_keys=False)


def tls_secret(name: str, namespace: str, issued: IssuedCerts) -> str:
    secret = {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"tls.crt": base64.b64encode(issued.cert_pem).decode(),
                 "tls.key": base64.b64encode(issued.key_pem).decode(),
                 "ca.crt": base64.b64encode(issued.ca_pem).decode()},
    }
    return yaml.safe_dump(secret, sort_keys=False)


def write(out_dir: Path, issued: IssuedCerts) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in (("ca.crt", issued.ca_pem), ("tls.crt", issued.cert_pem),
                       ("tls.key", issued.key_pem)):
        path = out_dir / name
        path.write_bytes(data)
        written.append(path)
    (out_dir / "tls.key").chmod(0o600)
    return written
