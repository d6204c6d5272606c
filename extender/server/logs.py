"""Moved to ``extender.runtime.logs`` (issue 20); this name stays for branches in flight."""

from extender.runtime.logs import LEVELS, JsonFormatter, configure, logging_config

__all__ = ["LEVELS", "JsonFormatter", "configure", "logging_config"]
