"""Kubernetes resource quantities (``500m``, ``4Gi``, ``1.5``, ``2e3``), parsed strictly.

Follows ``k8s.io/apimachinery/pkg/api/resource``: a signed decimal number followed by an optional
binary (Ki..Ei), decimal (n, u, m, k, M, G, T, P, E) or exponent (``e3``) suffix. Values are kept as
``Decimal`` so ``0.1`` adds up exactly; callers round to the integer unit they need.

The grammar is bounded, so that parsing costs the same for any input: the text may be at most
``MAX_TEXT`` characters, and, as apimachinery documents ("no quantity may represent a number
greater than 2^63-1 in magnitude"), a magnitude of 2**63 or more is out of range. The magnitude is
judged from the digit count and the exponent *before* any arithmetic, so ``1e999999`` is refused
without building a million-digit number (Python's big-integer conversion is quadratic).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import NoReturn

from extender.errors import QuantityError, QuantityRangeError, shown

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
MAX_TEXT = 64
"""Longest quantity text accepted; ``-9223372036854775807.999`` plus a suffix fits easily."""
MAX_MAGNITUDE = 2**63
"""Exclusive bound on the absolute value (apimachinery's int64 limit)."""
_MAX_DIGITS = 19  # len(str(2**63 - 1)): more integer digits than this is out of range
_BINARY_DIGITS = {suffix: len(str(factor)) - 1 for suffix, factor in _BINARY.items()}
_DECIMAL_DIGITS = {"k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MIN_EXPONENT = -100
"""Exponents below this are refused too: nothing we count is that small, and it keeps the
arithmetic constant-time."""


def parse_quantity(text: object) -> Decimal:
    """Parse a quantity; raises ``QuantityError`` naming the offending text.

    >>> parse_quantity("4Gi")
    Decimal('4294967296')
    >>> parse_quantity("500m")
    Decimal('0.500')
    """
    if isinstance(text, bool):
        raise QuantityError(f"{shown(text)} is not a quantity ({ACCEPTED_FORMS})")
    if isinstance(text, int):
        return _in_range(Decimal(text), text) if -MAX_MAGNITUDE < text < MAX_MAGNITUDE \
            else _out_of_range(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"{shown(text)} is not a quantity ({ACCEPTED_FORMS})")
        if abs(text) >= MAX_MAGNITUDE:
            _out_of_range(text)
        return Decimal(repr(text))
    if not isinstance(text, str):
        raise QuantityError(f"{shown(text)} is not a quantity ({ACCEPTED_FORMS})")
    if len(text) > MAX_TEXT:
        raise QuantityError(f"a quantity of {len(text)} characters is too long (at most "
                            f"{MAX_TEXT}; {ACCEPTED_FORMS})")
    match = _PATTERN.match(text.strip())
    if match is None:
        raise QuantityError(f"{shown(text)} is not a quantity ({ACCEPTED_FORMS})")
    mantissa = match["num"]
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        shift, factor = _BINARY_DIGITS[suffix], Decimal(_BINARY[suffix])
    elif suffix in _DECIMAL:
        shift, factor = _DECIMAL_DIGITS.get(suffix, 0), _DECIMAL[suffix]
    else:
        shift = int(suffix[1:])  # at most MAX_TEXT digits: cheap
        if shift < _MIN_EXPONENT:
            _out_of_range(text)
        factor = None
    order = _order(mantissa)
    if order is None:
        return Decimal(0)
    if order + shift > _MAX_DIGITS:
        _out_of_range(text)
    if factor is None:
        # bounded: shift <= _MAX_DIGITS + MAX_TEXT here, and >= _MIN_EXPONENT
        factor = Decimal(10) ** shift
    try:
        number = Decimal(mantissa)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid decimals
        raise QuantityError(f"{shown(text)} is not a quantity ({ACCEPTED_FORMS})") from exc
    return _in_range(number * factor, text)


def _order(mantissa: str) -> int | None:
    """Decimal order of magnitude: digits before the point, leading zeros ignored ("0012.5" is
    2), or minus the zeros after the point when there are none ("0.005" is -2); None for zero."""
    whole, _, fraction = mantissa.lstrip("+-").partition(".")
    whole = whole.lstrip("0")
    if whole:
        return len(whole)
    significant = fraction.lstrip("0")
    if not significant:
        return None  # zero: any exponent leaves it zero
    return -(len(fraction) - len(significant))


def _in_range(value: Decimal, text: object) -> Decimal:
    if abs(value) >= MAX_MAGNITUDE:
        _out_of_range(text)
    return value


def _out_of_range(text: object) -> NoReturn:
    raise QuantityRangeError(f"{shown(text)} is out of range (the magnitude must be below 2^63, "
                        f"as for any Kubernetes quantity; {ACCEPTED_FORMS})")


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
