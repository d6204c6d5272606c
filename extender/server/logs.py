"""Structured logs: one JSON object per line on stderr.

Every line has the same top-level keys: ``time`` (RFC 3339, UTC), ``level``, ``logger``,
``message`` (a constant phrase, never formatted with values, so lines group by it), then the
event's fields, then ``exception`` when there is one. Fields are passed as
``extra={"fields": {...}}`` and always use the same names for the same things: ``verb``, ``pod``
(namespace/name), ``uid``, ``node``, ``resource`` (nodes/pods), ``outcome``, ``reason``,
``error``, ``duration_ms``.
"""

from __future__ import annotations

import datetime
import logging
import sys
from typing import Any

import orjson

LEVELS = ("debug", "info", "warning", "error")
_RESERVED = ("time", "level", "logger", "message", "exception")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC)
            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            for key, value in fields.items():
                line[key if key not in _RESERVED else f"field_{key}"] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def logging_config(level: str = "info", *, access_log: bool = False) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for our loggers and gunicorn's (its ``logconfig_dict``
    setting), all through the JSON formatter. gunicorn logs every request whenever a log
    config is given, so the access logger is silenced unless ``access_log``."""
    handler = {"class": "logging.StreamHandler", "formatter": "json",
               "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "handlers": {"stderr": handler},
        "root": {"level": level.upper(), "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": level.upper(), "handlers": ["stderr"],
                               "propagate": False},
            "gunicorn.access": {"level": "INFO" if access_log else "WARNING",
                                "handlers": ["stderr"], "propagate": False},
            # the client logs every request at debug; ours say what matters
            "kubernetes": {"level": "WARNING"},
            "urllib3": {"level": "WARNING"},
        },
    }


def configure(level: str = "info") -> None:
    """Route the root logger through the JSON formatter (outside gunicorn: tests, tools)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level.upper())
