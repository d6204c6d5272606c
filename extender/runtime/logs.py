"""Structured logs: one JSON object per line on stderr (``--log-format text`` for people).

Every line has the same top-level keys: ``time`` (RFC 3339, UTC), ``level``, ``severity``
(the same level in the upper-case names Google Cloud Logging and most log routers key on:
``DEBUG``, ``INFO``, ``WARNING``, ``ERROR``, ``CRITICAL``), ``logger``,
``message`` (a constant phrase, never formatted with values, so lines group by it), then the
event's fields, then ``exception`` when there is one. Fields are passed as
``extra={"fields": {...}}`` and always use the same names for the same things: ``verb``, ``pod``
(namespace/name), ``uid``, ``node``, ``resource`` (nodes/pods), ``outcome``, ``reason``,
``error``, ``duration_ms``.

Every process (serve, webhook, shadow, agent) configures logging here, from the common
``--log-level`` / ``--log-format`` flags (``extender.runtime.command``).
"""

from __future__ import annotations

import datetime
import logging
import sys
from typing import Any

import orjson

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("json", "text")
_RESERVED = ("time", "level", "severity", "logger", "message", "exception")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC)
            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "severity": record.levelname,
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


class TextFormatter(logging.Formatter):
    """``TIME LEVEL logger: message key=value ...``: the same fields, for a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.datetime.fromtimestamp(record.created, datetime.UTC).strftime(
            "%H:%M:%S.%f")[:-3]
        text = f"{stamp} {record.levelname.lower():7} {record.name}: {record.getMessage()}"
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            text += "".join(f" {key}={value}" for key, value in fields.items())
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def formatter(fmt: str = "json") -> logging.Formatter:
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return JsonFormatter() if fmt == "json" else TextFormatter()


def logging_config(level: str = "info", *, access_log: bool = False,
                   fmt: str = "json") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for our loggers and gunicorn's (its ``logconfig_dict``
    setting), all through the JSON formatter. gunicorn logs every request whenever a log
    config is given, so the access logger is silenced unless ``access_log``."""
    formatter(fmt)  # refuses an unknown format here, not in gunicorn's dictConfig
    handler = {"class": "logging.StreamHandler", "formatter": fmt,
               "stream": "ext://sys.stderr"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"},
                       "text": {"()": f"{__name__}.TextFormatter"}},
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


class CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is when a record comes, not as it was when the handler
    was made: whoever swaps ``sys.stderr`` (pytest per test, a wrapper that redirects it)
    never leaves the root logger writing to a closed stream."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure(level: str = "info", fmt: str = "json") -> None:
    """Route the root logger through the formatter (outside gunicorn: the agent, the shadow,
    gunicorn's master before it forks, tests)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = CurrentStderr()
    handler.setFormatter(formatter(fmt))
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("kubernetes", "urllib3"):  # the client logs every request at debug
        logging.getLogger(name).setLevel(logging.WARNING)
