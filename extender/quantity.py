"""Kubernetes resource quantities (``500m``, ``4Gi``, ``1.5``, ``2e3``), parsed strictly.

Follows ``k8s.io/apimachinery/pkg/api/resource``: a signed decimal number followed by an optional
binary (Ki..Ei), decimal (n, u, m, k, M, G, T, P, E) or exponent (``e3``) suffix. Values are kept as
``Decimal`` so ``0.1`` adds up exactly; callers round to the integer unit they need.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal, InvalidOperation

from extender.errors import QuantityError

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$",
    re.ASCII,  # \d must not admit other scripts' digits ("٣" is not 3 to the API server)
)
ACCEPTED_FORMS = "a number with an optional suffix: 4Gi, 4096Mi, 500m, 2, 1e3"


def parse_quantity(text: object) -> Decimal:
    """Parse a quantity; raises ``QuantityError`` naming the offending text.

    >>> parse_quantity("4Gi")
    Decimal('4294967296')
    >>> parse_quantity("500m")
    Decimal('0.500')
    """
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity ({ACCEPTED_FORMS})")
    if isinstance(text, int):
        return Decimal(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"{text!r} is not a quantity ({ACCEPTED_FORMS})")
        return Decimal(repr(text))
    if not isinstance(text, str):
        raise QuantityError(f"{text!r} is not a quantity ({ACCEPTED_FORMS})")
    match = _PATTERN.match(text.strip())
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity ({ACCEPTED_FORMS})")
    try:
        number = Decimal(match["num"])
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid decimals
        raise QuantityError(f"{text!r} is not a quantity ({ACCEPTED_FORMS})") from exc
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    try:
        return number * (Decimal(10) ** int(suffix[1:]))
    except (ArithmeticError, ValueError) as exc:  # decimal.Overflow on 1e9999999
        raise QuantityError(f"{text!r} is out of range ({ACCEPTED_FORMS})") from exc


def quantity_to_int(value: Decimal) -> int:
    """Round up to an integer, as kube rounds requests (``Quantity.Value``)."""
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def quantity_to_mib(text: object) -> int:
    """Bytes quantity -> MiB, rounded up (``4Gi`` -> 4096)."""
    return quantity_to_int(parse_quantity(text) / (2**20))


def quantity_to_milli(text: object) -> int:
    """CPU quantity -> millicores, rounded up (``1.5`` -> 1500)."""
    return quantity_to_int(parse_quantity(text) * 1000)


def lenient_quantity(convert: Callable[[object], int], value: object) -> int:
    """``convert(value)``, or 0 when the value is absent or not a quantity.

    For fields the API server has already validated (node allocatable, container CPU/memory
    requests): a value we cannot read counts as none rather than failing the object.
    """
    if value is None:
        return 0
    try:
        return int(convert(value))
    except QuantityError:
        return 0
