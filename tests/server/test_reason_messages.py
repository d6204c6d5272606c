"""Reason texts memoized: the plain ones for every pod, the ones that name what the pod asked
for the last request object only (a burst's replicas share it), never another pod's text."""

from __future__ import annotations

import numpy as np

from extender.core.reasons import Reason, format_reason, format_reason_for
from extender.server.failures import ReasonMessages
from tests.core.helpers import catalog, request, t


def test_pod_dependent_texts_are_each_requests_own() -> None:
    messages = ReasonMessages(catalog())
    # two nodes of T4s, one of an A10G: the same (code, numbers) rows for both pods
    code = np.array([Reason.TYPE_MISMATCH] * 3, dtype=np.int8)
    params = np.array([[t("t4"), t("t4"), 0], [t("t4"), t("t4"), 0],
                       [t("a10g"), t("a10g"), 0]], dtype=np.int64)
    wants_l4 = request("whole", types=["l4"])
    wants_a100 = request("whole", types=["a100-80gb"])
    texts = {}
    for req in (wants_l4, wants_a100):
        texts[req] = [format_reason_for(catalog(), req, int(c), *map(int, p))
                      for c, p in zip(code, params, strict=True)]
    assert texts[wants_l4] != texts[wants_a100]  # the text names what the pod accepts
    for req in (wants_l4, wants_l4, wants_a100, wants_l4, wants_a100):
        assert messages.messages(code, params, req) == texts[req]
    # plain reasons: one text for every pod
    busy = np.array([Reason.GPUS_BUSY], dtype=np.int8)
    numbers = np.array([[4, 4, 1]], dtype=np.int64)
    assert messages.messages(busy, numbers, wants_l4) == [
        format_reason(catalog(), int(Reason.GPUS_BUSY), 4, 4, 1)]
