"""Our own error hierarchy.

Every error a user can cause names the field, the offending value and what is accepted, so the
message alone says how to fix it. Nothing outside ``extender.kube`` sees the Kubernetes client's
exceptions; they are translated and chained as ``__cause__``.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson

SHOWN_LIMIT = 80
"""Longest rendering of a user's value in a message; longer ones are cut with "..."."""


def shown(value: object) -> str:
    """A user's value as JSON, as they wrote it (``"4Gi"``, ``true``, ``null``, ``{"x": 1}``),
    never as a Python repr (``'4Gi'``, ``True``, ``None``); cut to ``SHOWN_LIMIT`` characters."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN; only YAML configs can say it
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    return text if len(text) <= SHOWN_LIMIT else text[:SHOWN_LIMIT - 3] + "..."


class ExtenderError(Exception):
    """Base of every error raised on purpose by gpu-extender."""


@dataclass(frozen=True)
class FieldError:
    """One problem with one field, addressed by its path (``accelerators[3].price``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(ExtenderError):
    """The platform config is invalid; carries every problem found, not just the first."""

    def __init__(self, errors: Sequence[FieldError], source: str = "config") -> None:
        self.errors = tuple(errors)
        self.source = source
        lines = "\n".join(f"  - {e}" for e in self.errors)
        super().__init__(f"{source} is invalid ({len(self.errors)} error(s)):\n{lines}")


class RequestError(ExtenderError):
    """A pod asks for something that cannot be understood or can never be satisfied.

    ``field`` is where the pod said it (``spec.containers[0].resources.limits[nvidia.com/gpu]``,
    ``metadata.labels[gpu-extender.io/accelerator]``), ``value`` what it said and ``accepted`` what
    would have been understood.
    """

    def __init__(self, field: str, value: object, problem: str, accepted: str = "") -> None:
        self.field = field
        self.value = value
        self.problem = problem
        self.accepted = accepted
        message = f"{field}={shown(value)}: {problem}"
        if accepted:
            message += f" (accepted: {accepted})"
        super().__init__(message)


class QuantityError(ValueError, ExtenderError):
    """A Kubernetes quantity string could not be parsed."""


class QuantityRangeError(QuantityError):
    """A quantity is well formed but beyond what any Kubernetes quantity may be (2^63)."""


class CapacityError(ExtenderError):
    """A reservation would break a per-GPU invariant (over-commit, overlap, shared whole GPU)."""


class UnknownNodeError(ExtenderError):
    """A node name is not in the inventory."""


class JsonObjectError(ValueError, ExtenderError):
    """Bytes that should be one JSON object are not JSON, or not an object
    (``extender.jsonobj.load_object``). ``what`` names them (``body``, ``watch event``, the API
    call), ``problem`` says what is wrong; a ``ValueError`` for callers that report any bad
    value alike."""

    def __init__(self, what: str, problem: str) -> None:
        self.what = what
        self.problem = problem
        super().__init__(f"{what}: {problem}" if what else problem)


def did_you_mean(value: object, candidates: Iterable[str]) -> str:
    """``"; did you mean 'a100-80gb'?"`` for the closest candidate (case-insensitive), or ``""``
    when nothing is close: a hint to append to a problem, never a guess that changes meaning."""
    if not isinstance(value, str) or not value:
        return ""
    by_folded = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(value.lower(), list(by_folded), n=1, cutoff=0.75)
    return f"; did you mean {by_folded[close[0]]!r}?" if close else ""


def yaml_problem(exc: Exception) -> str:
    """A YAML parse error as "line 3, column 7: mapping values are not allowed here (while
    parsing a block mapping)": PyYAML's own text names the stream ``"<unicode string>"``
    instead of the file, which the caller names. Reads only the error's attributes (no YAML
    import here)."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if not problem or mark is None:
        return str(exc)
    context = getattr(exc, "context", None)
    return (f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
            + (f" ({context})" if context else ""))


def join_accepted(values: Iterable[str], limit: int = 40) -> str:
    """Format a list of accepted values for an error message, shortened when long."""
    items = sorted(set(values))
    if len(items) > limit:
        return ", ".join(items[:limit]) + f", ... ({len(items) - limit} more)"
    return ", ".join(items)
