"""GPU type vocabulary: canonical ids, families, aliases, MIG geometry and prices."""

from extender.catalog.catalog import Catalog, normalize_name
from extender.catalog.types import AcceleratorType, MigGeometry, MigProfile

__all__ = ["AcceleratorType", "Catalog", "MigGeometry", "MigProfile", "normalize_name"]
