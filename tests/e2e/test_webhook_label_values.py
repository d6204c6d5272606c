"""Every pod the webhook's platform mapping can produce (every shipped type, amount form and
type label: ``tests/webhook/every_type.py``) passes the real kube-apiserver's validation in a
server-side dry run; and the value the mapping used to write is one that server refuses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiException, CoreV1Api

from localcluster import LocalCluster
from tests.builders import expr, make_pod
from tests.webhook.every_type import mutated_pods

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def api(controlplane_binaries: object) -> Iterator[CoreV1Api]:
    with LocalCluster() as cluster:  # etcd and the API server: validation is all we need
        yield cluster.api()


def dry_run(api: CoreV1Api, pod: dict[str, Any]) -> str | None:
    """``None`` if the API server would create the pod, else its refusal."""
    body = {k: v for k, v in pod.items() if k != "status"}
    try:
        api.create_namespaced_pod("default", body, dry_run="All")
    except ApiException as exc:
        return f"{exc.status}: {exc.body}"
    return None


def test_the_api_server_refuses_a_value_with_spaces(api: CoreV1Api) -> None:
    """What the mapping wrote before on GFD and Flyte labels for RTX PRO 6000: the check
    below can fail."""
    pod = make_pod("spaces").gpus(1).node_affinity_term(
        expr("nvidia.com/gpu.product", "In", "RTX PRO 6000")).obj()
    refusal = dry_run(api, pod)
    assert refusal is not None and refusal.startswith("422") and "RTX PRO 6000" in refusal


def test_every_mutated_pod_passes_the_api_servers_validation(api: CoreV1Api) -> None:
    cases = list(mutated_pods())
    assert len(cases) == 612  # 6 type labels x 102 (see tests/webhook/test_mapping_label_values)
    refused = {case: why for case, pod in cases if (why := dry_run(api, pod)) is not None}
    assert refused == {}
