"""The closed set of outcomes of the three verbs; the value is the metric label."""

from __future__ import annotations

from enum import Enum


class Decision(Enum):
    INVALID_REQUEST = "invalid_request"
    """The pod's GPU request is invalid (filter: every node, unresolvable; bind: refused)."""
    PASSTHROUGH = "passthrough"
    """The pod asks for no GPU: every node as far as we are concerned."""
    NOT_SYNCED = "not_synced"
    """The inventory has not listed the cluster yet: no answer would be true."""
    FEASIBLE = "feasible"
    NO_FIT = "no_fit"
    SCORED = "scored"
    BOUND = "bound"
    ALREADY_BOUND = "already_bound"
    """A retried bind of a pod already bound to that node."""
    REFUSED = "refused"
    CONFLICT = "conflict"
    """The GPUs are no longer free on the chosen node (a concurrent bind took them)."""
    API_ERROR = "api_error"
