"""Kubernetes quantities: every suffix, rounding up, and strict rejection."""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest

from extender.errors import ExtenderError, QuantityError
from extender.quantity import (
    lenient_quantity,
    parse_quantity,
    quantity_to_int,
    quantity_to_mib,
    quantity_to_milli,
)

KI, MI, GI, TI, PI, EI = (2**10, 2**20, 2**30, 2**40, 2**50, 2**60)


P = pytest.param


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        P("0", Decimal(0), id="zero is zero"),
        P("2", Decimal(2), id="a bare integer has no suffix"),
        P("+2", Decimal(2), id="a plus sign is allowed"),
        P("-2", Decimal(-2), id="a minus sign is allowed"),
        P("1.5", Decimal("1.5"), id="a decimal point is allowed"),
        P(".5", Decimal("0.5"), id="a leading point needs no zero"),
        P("1.", Decimal(1), id="a trailing point needs no digits"),
        # binary suffixes: powers of 1024
        P("1Ki", Decimal(KI), id="Ki is 2**10"),
        P("1Mi", Decimal(MI), id="Mi is 2**20"),
        P("4Gi", Decimal(4 * GI), id="4Gi is 4 * 2**30 = 4294967296"),
        P("1Ti", Decimal(TI), id="Ti is 2**40"),
        P("1Pi", Decimal(PI), id="Pi is 2**50"),
        P("1Ei", Decimal(EI), id="Ei is 2**60"),
        P("1.5Gi", Decimal(3 * GI // 2), id="1.5Gi is 1.5 * 2**30 = 1610612736"),
        # decimal suffixes: powers of 1000
        P("1n", Decimal("1e-9"), id="n is 1e-9"),
        P("1u", Decimal("1e-6"), id="u is 1e-6"),
        P("500m", Decimal("0.5"), id="500m is 500 * 1e-3 = 0.5"),
        P("1k", Decimal(1000), id="lower-case k is 1e3"),
        P("1M", Decimal(10**6), id="M is 1e6"),
        P("1G", Decimal(10**9), id="G is 1e9"),
        P("1T", Decimal(10**12), id="T is 1e12"),
        P("1P", Decimal(10**15), id="P is 1e15"),
        P("1E", Decimal(10**18), id="a lone upper-case E is exa 1e18, not an exponent"),
        # exponent suffixes
        P("2e3", Decimal(2000), id="2e3 is 2 * 10**3"),
        P("2E3", Decimal(2000), id="an upper-case E with digits is an exponent"),
        P("2e+3", Decimal(2000), id="an exponent may have a plus sign"),
        P("25e-1", Decimal("2.5"), id="25e-1 is 25 * 10**-1 = 2.5"),
        P(" 4Gi ", Decimal(4 * GI), id="surrounding blanks are ignored"),
        P(3, Decimal(3), id="an int from YAML or JSON is taken as is"),
        P(0.25, Decimal("0.25"), id="a float is taken by its shortest repr"),
    ],
)
def test_parse_quantity_understands_every_suffix(text: object, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


def test_parse_quantity_keeps_decimals_exact_so_tenths_add_up() -> None:
    # 0.1 + 0.2 == 0.3 exactly as Decimal (a float would give 0.30000000000000004)
    assert parse_quantity("100m") + parse_quantity("200m") == parse_quantity("300m")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "1.2.3",
        "4GiB",
        "4gi",
        "4 Gi",
        "1K",
        "Gi",
        "abc",
        "0x10",
        "1e",
        "e3",
        "--1",
        "1/2",
        "\u0663",  # ARABIC-INDIC DIGIT THREE: \d matches it, the API server does not
        True,
        False,
        None,
        [1],
        {"value": 1},
        float("nan"),
        float("inf"),
    ],
    ids=lambda v: f"{v!r} is rejected",
)
def test_parse_quantity_rejects_with_the_offending_text_in_the_message(text: object) -> None:
    with pytest.raises(QuantityError) as raised:
        parse_quantity(text)
    shown = repr(text) if isinstance(text, float) else orjson.dumps(text).decode()
    assert shown in str(raised.value), "the value is shown as JSON, as the user wrote it"
    assert "4Gi" in str(raised.value), "the message says what is accepted"


def test_quantity_error_is_both_a_value_error_and_ours() -> None:
    with pytest.raises(ValueError):
        parse_quantity("x")
    with pytest.raises(ExtenderError):
        parse_quantity("x")


def test_huge_exponent_is_a_quantity_error_not_a_decimal_overflow() -> None:
    with pytest.raises(QuantityError, match="1e9999999"):
        parse_quantity("1e9999999")


@pytest.mark.parametrize(
    "text",
    [
        P("1e400", id="1e400 is far above 2^63"),
        P("1e450000", id="1e450000 would take seconds to build as an integer"),
        P("1e999999", id="1e999999 would approach gunicorn's worker timeout"),
        P("9223372036854775808", id="2^63 itself is out (the bound is exclusive)"),
        P("8Ei", id="8Ei is 8 * 2^60 = 2^63"),
        P("9.3e18", id="9.3e18 is above 2^63 = 9.22e18"),
        P("10E", id="10E is 1e19"),
        P("0.000001e25", id="0.000001e25 is 1e19: the point counts"),
        P("1e-101", id="an exponent below -100 is refused too"),
        P(2**70, id="an int from JSON above 2^63"),
        P(1e300, id="a float above 2^63"),
    ],
)
def test_quantities_beyond_int64_are_out_of_range_with_a_message(text: object) -> None:
    with pytest.raises(QuantityError, match="out of range"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        P("9223372036854775807", Decimal(2**63 - 1), id="2^63 - 1 is the largest"),
        P("0.0000001e25", Decimal(10**18), id="0.0000001e25 is 1e18: leading zeros count down"),
        P("7Ei", Decimal(7 * EI), id="7Ei is below 2^63"),
        P("0e99999", Decimal(0), id="zero with any exponent is zero"),
        P("1e-99", Decimal("1e-99"), id="a tiny amount is kept (and rounds up to 1 later)"),
    ],
)
def test_quantities_up_to_the_bound_are_exact(text: object, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


def test_a_long_quantity_text_is_refused_by_its_length_alone() -> None:
    # a megabyte of digits is refused before the regex or Decimal sees it
    with pytest.raises(QuantityError, match="1000001 characters is too long"):
        parse_quantity("1" * 1_000_001)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal(3), 3),
        (Decimal("2.0001"), 3),
        (Decimal("0.0000001"), 1),
        (Decimal("-0.5"), 0),  # ceiling: toward +infinity
        (Decimal("-1.5"), -1),
    ],
    ids=[
        "an integer stays",
        "a hair above 2 rounds up to 3",
        "any positive amount is at least 1",
        "minus one half rounds up to zero",
        "minus one and a half rounds up to minus one",
    ],
)
def test_quantity_to_int_rounds_up_like_kube_value(value: Decimal, expected: int) -> None:
    assert quantity_to_int(value) == expected


@pytest.mark.parametrize(
    ("text", "mib"),
    [
        P("4Gi", 4096, id="4Gi is 4 * 1024 = 4096 MiB"),
        P("4096Mi", 4096, id="4096Mi stays 4096 MiB"),
        P("1Mi", 1, id="1Mi is one MiB"),
        P("1", 1, id="one byte still needs a whole MiB"),
        P("1Ki", 1, id="1Ki is 1/1024 MiB, rounded up to 1"),
        P("1025Ki", 2, id="1025Ki is 1025/1024 = 1.0009 MiB, rounded up to 2"),
        P("4G", 3815, id="4G is 4e9 / 1048576 = 3814.697 MiB, rounded up to 3815"),
        P("1.5Gi", 1536, id="1.5Gi is 1.5 * 1024 = 1536 MiB"),
        P("16e9", 15259, id="16e9 bytes is 15258.789 MiB, rounded up to 15259"),
        P("0", 0, id="zero bytes is zero MiB"),
    ],
)
def test_quantity_to_mib_rounds_bytes_up_to_whole_mib(text: str, mib: int) -> None:
    assert quantity_to_mib(text) == mib


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        P("1", 1000, id="one core is 1000 millicores"),
        P("1.5", 1500, id="1.5 cores is 1500 millicores"),
        P("500m", 500, id="500m stays 500"),
        P("1u", 1, id="1u is 0.001 millicores, rounded up to 1"),
        P("0.0001", 1, id="0.0001 cores is 0.1 millicores, rounded up to 1"),
        P("2k", 2_000_000, id="2k cores is 2000 * 1000 millicores"),
        P(2, 2000, id="an int of cores is multiplied by 1000"),
    ],
)
def test_quantity_to_milli_rounds_cpu_up_to_millicores(text: object, milli: int) -> None:
    assert quantity_to_milli(text) == milli


@pytest.mark.parametrize("convert", [quantity_to_mib, quantity_to_milli],
                         ids=["to_mib passes the error on", "to_milli passes the error on"])
def test_converters_reject_what_parse_rejects(convert: object) -> None:
    assert callable(convert)
    with pytest.raises(QuantityError, match='"4GiB"'):
        convert("4GiB")


@pytest.mark.parametrize(
    ("value", "mib"),
    [
        P("4Gi", 4096, id="a quantity converts as the strict converter does"),
        P(None, 0, id="absent reads as 0"),
        P("4GiB", 0, id="not a quantity reads as 0 instead of failing the object"),
    ],
)
def test_lenient_quantity_tolerates_what_the_api_server_already_validated(
        value: object, mib: int) -> None:
    assert lenient_quantity(quantity_to_mib, value) == mib
