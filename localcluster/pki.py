"""In-process PKI for the local control plane: one CA, the apiserver serving certificate, the
service-account signing key pair and one client certificate per identity.

ECDSA P-256 keys are used because they are generated in microseconds (RSA-2048 takes tens of
milliseconds each) and Go's TLS, the apiserver's service-account signer (ES256) and Python's
ssl module all accept them.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Names clients may use to reach the apiserver; Go refuses certificates without matching SANs.
APISERVER_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
APISERVER_IPS = ("127.0.0.1",)
VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class ClientIdentity:
    """Who a client certificate authenticates as: the apiserver takes the user name from the CN
    and the groups from the O attributes."""

    file_stem: str
    user: str
    groups: tuple[str, ...] = ()


# Full cluster admin, for the test code itself.
ADMIN = ClientIdentity("admin", "local-admin", ("system:masters",))
# The built-in ClusterRoleBindings system:kube-scheduler / system:volume-scheduler and the
# leader-locking Role bind this user name, so the scheduler runs with its real, limited rights.
KUBE_SCHEDULER = ClientIdentity("kube-scheduler", "system:kube-scheduler")
# The extender authenticates as the ServiceAccount kube-system/gpu-extender would in a real
# cluster (user name and groups as the token authenticator reports them). The ClusterRoleBinding in
# manifests/rbac.yaml therefore applies unchanged: the extender gets exactly what we ship.
GPU_EXTENDER = ClientIdentity(
    "gpu-extender",
    "system:serviceaccount:kube-system:gpu-extender",
    ("system:serviceaccounts", "system:serviceaccounts:kube-system"),
)
CLIENT_IDENTITIES = (ADMIN, KUBE_SCHEDULER, GPU_EXTENDER)


@dataclass(frozen=True)
class CertKeyPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class ClusterPki:
    """Paths of every PKI file the control plane and its clients use."""

    ca_cert: Path
    apiserver: CertKeyPair
    service_account_private_key: Path
    service_account_public_key: Path
    clients: dict[str, CertKeyPair]  # keyed by ClientIdentity.file_stem


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(cert: x509.Certificate, path: Path) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _subject(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    # Backdate a little so a slightly skewed clock in another process never sees "not yet valid".
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + VALIDITY)
    )


def _issue_leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    san: x509.SubjectAlternativeName | None = None,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = _new_key()
    builder = (
        _builder(subject, ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def generate_pki(directory: Path) -> ClusterPki:
    """Create all keys and certificates under ``directory`` and return their paths."""
    directory.mkdir(parents=True, exist_ok=True)

    ca_key = _new_key()
    ca_name = _subject("gpu-extender-local-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=False,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_cert_path = directory / "ca.crt"
    _write_cert(ca_cert, ca_cert_path)
    _write_key(ca_key, directory / "ca.key")

    san = x509.SubjectAlternativeName(
        [x509.DNSName(name) for name in APISERVER_DNS_NAMES]
        + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in APISERVER_IPS]
    )
    serving_key, serving_cert = _issue_leaf(
        ca_key, ca_cert, _subject("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, san
    )
    apiserver = CertKeyPair(directory / "apiserver.crt", directory / "apiserver.key")
    _write_cert(serving_cert, apiserver.cert)
    _write_key(serving_key, apiserver.key)

    # The apiserver signs service-account tokens with the private key and verifies them with
    # the public one; no certificate is involved.
    sa_key = _new_key()
    sa_private = directory / "sa.key"
    sa_public = directory / "sa.pub"
    _write_key(sa_key, sa_private)
    sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )

    clients: dict[str, CertKeyPair] = {}
    for identity in CLIENT_IDENTITIES:
        key, cert = _issue_leaf(
            ca_key,
            ca_cert,
            _subject(identity.user, identity.groups),
            ExtendedKeyUsageOID.CLIENT_AUTH,
        )
        pair = CertKeyPair(
            directory / f"{identity.file_stem}.crt", directory / f"{identity.file_stem}.key"
        )
        _write_cert(cert, pair.cert)
        _write_key(key, pair.key)
        clients[identity.file_stem] = pair

    return ClusterPki(ca_cert_path, apiserver, sa_private, sa_public, clients)


def issue_from_ca(
    directory: Path,
    file_stem: str,
    common_name: str,
    *,
    server: bool,
    dns_names: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    ca_dir: Path | None = None,
) -> CertKeyPair:
    """Issue one more leaf from the CA that ``generate_pki`` wrote in ``ca_dir`` (default
    ``directory``): a serving certificate (``server``) for the given names, or a client one.
    The files are replaced atomically (written aside, then renamed), as a Secret update is.
    """
    source = ca_dir or directory
    ca_key = serialization.load_pem_private_key((source / "ca.key").read_bytes(), None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise TypeError(f"{source / 'ca.key'} is not an ECDSA key")
    ca_cert = x509.load_pem_x509_certificate((source / "ca.crt").read_bytes())
    san = None
    if dns_names or ips:
        san = x509.SubjectAlternativeName(
            [x509.DNSName(name) for name in dns_names]
            + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        )
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    key, cert = _issue_leaf(ca_key, ca_cert, _subject(common_name), usage, san)
    directory.mkdir(parents=True, exist_ok=True)
    pair = CertKeyPair(directory / f"{file_stem}.crt", directory / f"{file_stem}.key")
    key_aside = pair.key.with_name(f".{pair.key.name}.new")
    cert_aside = pair.cert.with_name(f".{pair.cert.name}.new")
    _write_key(key, key_aside)
    _write_cert(cert, cert_aside)
    key_aside.replace(pair.key)
    cert_aside.replace(pair.cert)
    return pair
