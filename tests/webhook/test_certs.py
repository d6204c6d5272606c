"""``gpu-extender webhook-certs`` and the TLS reload: what we ship for clusters without
cert-manager, and the cert-manager manifest's consistency with the webhook manifest."""

from __future__ import annotations

import base64
import os
import ssl
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from extender.cli import main
from extender.errors import ConfigError
from extender.runtime.tls import ReloadingTlsContext, TlsFiles
from extender.webhook.certs import issue, service_dns_names

ROOT = Path(__file__).parents[2]
WEBHOOK_MANIFEST = ROOT / "manifests" / "webhook.yaml"
CERT_MANAGER_MANIFEST = ROOT / "manifests" / "webhook-cert-manager.yaml"


def test_webhook_certs_writes_a_verifiable_pair_and_fills_the_manifest(tmp_path: Path) -> None:
    assert main(["webhook-certs", "--manifest", str(WEBHOOK_MANIFEST), "--out-dir",
                 str(tmp_path)]) == 0
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == service_dns_names(
        "gpu-extender-webhook", "kube-system")
    TlsFiles(tmp_path / "tls.crt", tmp_path / "tls.key").check("gpu-extender webhook")
    documents = list(yaml.safe_load_all((tmp_path / "webhook.yaml").read_text()))
    configs = [d for d in documents if d["kind"].endswith("WebhookConfiguration")]
    assert len(configs) == 2
    for config in configs:
        assert "cert-manager.io/inject-ca-from" not in config["metadata"].get("annotations", {})
        for webhook in config["webhooks"]:
            assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == \
                (tmp_path / "ca.crt").read_bytes()
    secret = yaml.safe_load((tmp_path / "secret.yaml").read_text())
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"] == {"name": "gpu-extender-webhook-tls", "namespace": "kube-system"}
    assert base64.b64decode(secret["data"]["tls.crt"]) == (tmp_path / "tls.crt").read_bytes()


def test_a_bad_ip_or_a_missing_manifest_is_a_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["webhook-certs", "--ip", "localhost", "--out-dir", str(tmp_path)]) == 2
    assert "--ip: 'localhost' does not appear to be an IPv4 or IPv6 address" in \
        capsys.readouterr().err
    assert main(["webhook-certs", "--manifest", str(tmp_path / "nope.yaml"),
                 "--out-dir", str(tmp_path)]) == 2
    assert "nope.yaml: No such file or directory" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "message"), [
    ("a: [\n", "not YAML (line 2, column 1: expected the node content"),
    ("kind: Service\nmetadata: {name: x}\n",
     "no MutatingWebhookConfiguration or ValidatingWebhookConfiguration in it"),
    ("just a sentence\n", 'document 0: expected an object with a kind, got "just a sentence"'),
    ("kind: MutatingWebhookConfiguration\nwebhooks: {name: a}\n",
     'document 0 (MutatingWebhookConfiguration): webhooks: must be a list, got {"name":"a"}'),
    ("kind: ValidatingWebhookConfiguration\nwebhooks: [x]\n",
     'document 0 (ValidatingWebhookConfiguration): webhooks[0]: must be an object, got "x"'),
    ("kind: MutatingWebhookConfiguration\nwebhooks: [{name: a, clientConfig: x}]\n",
     'document 0 (MutatingWebhookConfiguration): webhooks[0].clientConfig: must be an object, '
     'got "x"'),
])
def test_a_manifest_it_cannot_fill_is_a_message_and_nothing_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    manifest = tmp_path / "webhook.yaml"
    manifest.write_text(text)
    out = tmp_path / "out"
    assert main(["webhook-certs", "--manifest", str(manifest), "--out-dir", str(out)]) == 2
    assert f"--manifest {manifest}: {message}" in capsys.readouterr().err
    assert not out.exists()


def test_null_parts_of_a_webhook_configuration_are_filled_in(tmp_path: Path) -> None:
    # ``annotations:`` and ``clientConfig:`` left empty in YAML are null, not a mistake
    manifest = tmp_path / "webhook.yaml"
    manifest.write_text("kind: MutatingWebhookConfiguration\nmetadata:\n  name: x\n"
                        "  annotations:\nwebhooks:\n- name: a.b.c\n  clientConfig:\n")
    assert main(["webhook-certs", "--manifest", str(manifest), "--out-dir",
                 str(tmp_path / "out")]) == 0
    [config] = yaml.safe_load_all((tmp_path / "out" / "webhook.yaml").read_text())
    assert base64.b64decode(config["webhooks"][0]["clientConfig"]["caBundle"]) == \
        (tmp_path / "out" / "ca.crt").read_bytes()


def test_an_unreadable_manifest_or_an_out_dir_in_the_way_is_a_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "webhook.yaml"
    binary.write_bytes(b"\xff\xfe")
    assert main(["webhook-certs", "--manifest", str(binary), "--out-dir",
                 str(tmp_path / "out")]) == 2
    assert "not UTF-8 text (byte 0)" in capsys.readouterr().err
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("")
    assert main(["webhook-certs", "--out-dir", str(in_the_way)]) == 2
    assert f"--out-dir {in_the_way}: File exists" in capsys.readouterr().err


def test_cert_manager_manifest_matches_the_webhook_manifest() -> None:
    """The Certificate names the Service the webhooks call, writes the Secret the Deployment
    mounts, and is the one the CA injector annotation points at."""
    objects = {(d["kind"], d["metadata"]["name"]): d
               for d in yaml.safe_load_all(CERT_MANAGER_MANIFEST.read_text())}
    certificate = objects[("Certificate", "gpu-extender-webhook")]
    webhook = {(d["kind"], d["metadata"]["name"]): d
               for d in yaml.safe_load_all(WEBHOOK_MANIFEST.read_text())}
    service = webhook[("Service", "gpu-extender-webhook")]["metadata"]
    assert certificate["spec"]["dnsNames"] == service_dns_names(service["name"],
                                                                service["namespace"])
    volumes = webhook[("Deployment", "gpu-extender-webhook")]["spec"]["template"]["spec"][
        "volumes"]
    assert {"name": "tls", "secret": {"secretName": certificate["spec"]["secretName"]}} \
        in volumes
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        config = webhook[(kind, "gpu-extender")]
        assert config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == \
            f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
        for entry in config["webhooks"]:
            assert entry["sideEffects"] == "None"
            assert entry["timeoutSeconds"] <= 5
            if entry["name"] == "evictions.gpu-extender.io":
                # only the node agent's Evictions, from every namespace, failing closed
                assert entry["failurePolicy"] == "Fail" and "namespaceSelector" not in entry
                assert [c["name"] for c in entry["matchConditions"]] == ["is-the-agent"]
                continue
            assert entry["failurePolicy"] == "Ignore"
            excluded = entry["namespaceSelector"]["matchExpressions"][0]
            assert excluded["operator"] == "NotIn" and "kube-system" in excluded["values"]


def check_pair(cert: str, key: str) -> None:
    """What ``gpu-extender webhook`` checks at start (the extender's own TLS files check)."""
    TlsFiles(Path(cert), Path(key)).check("gpu-extender webhook")


def _write_pair(directory: Path) -> tuple[str, str]:
    issued = issue(["localhost"])
    (directory / "tls.crt").write_bytes(issued.cert_pem)
    (directory / "tls.key").write_bytes(issued.key_pem)
    return str(directory / "tls.crt"), str(directory / "tls.key")


def test_a_renewed_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    cert, key = _write_pair(tmp_path)
    # the hook the webhook's gunicorn settings install (gunicorn passes its conf and factory)
    hook = ReloadingTlsContext(TlsFiles(Path(cert), Path(key))).context
    reloading = hook.__self__

    first = hook(None, None)
    assert isinstance(first, ssl.SSLContext)
    assert hook(None, None) is first and reloading.reloads == 0   # unchanged files: reused
    _write_pair(tmp_path)                                         # cert-manager renews
    second = hook(None, None)
    assert second is not first and reloading.reloads == 1
    (tmp_path / "tls.key").write_text("half written")             # mid-rotation garbage
    os.utime(tmp_path / "tls.key", ns=(1, 1))
    assert hook(None, None) is second                             # keeps the last good one


@pytest.mark.parametrize(("missing", "flag"), [("cert", "--tls-cert-file"),
                                              ("key", "--tls-private-key-file")])
def test_check_pair_names_the_flag_and_the_file(tmp_path: Path, missing: str, flag: str) -> None:
    cert, key = _write_pair(tmp_path)
    args = (str(tmp_path / "missing.crt"), key) if missing == "cert" else \
        (cert, str(tmp_path / "missing.key"))
    with pytest.raises(ConfigError, match=f"{flag}: '.*missing.*' is not a readable file"):
        check_pair(*args)


def test_check_pair_refuses_a_mismatched_key(tmp_path: Path) -> None:
    cert, _ = _write_pair(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, other_key = _write_pair(other)
    with pytest.raises(ConfigError, match="do not load"):
        check_pair(cert, other_key)


def test_webhook_refuses_to_start_on_a_bad_config_or_missing_certificate(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cert, key = _write_pair(tmp_path)
    bad = tmp_path / "bad.yaml"
    bad.write_text("admission: {platformMapping: {typeLabel: eks}}\n")
    assert main(["webhook", "--config", str(bad), "--tls-cert-file", cert,
                 "--tls-private-key-file", key]) == 1
    assert "admission.platformMapping.typeLabel: 'eks' is neither a preset" in \
        capsys.readouterr().err
    assert main(["webhook", "--tls-cert-file", str(tmp_path / "none.crt"),
                 "--tls-private-key-file", key]) == 1
    assert "gpu-extender webhook: --tls-cert-file " in capsys.readouterr().err
