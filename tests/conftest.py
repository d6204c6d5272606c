"""Fixtures shared by the unit tests: the platform built from the shipped defaults."""

from __future__ import annotations

import pytest

from extender.catalog import Catalog
from extender.platform import Platform, load_platform


@pytest.fixture(scope="session")
def platform() -> Platform:
    """``load_platform()`` on the shipped defaults (immutable, so shared by every test)."""
    return load_platform()


@pytest.fixture(scope="session")
def catalog(platform: Platform) -> Catalog:
    return platform.catalog
