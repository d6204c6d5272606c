"""Errors a user of ``simulate`` can cause: a trace file that is missing or malformed.

Every message names the file, the line and the column, the offending value and what is
accepted, so the message alone says how to fix the input.
"""

from __future__ import annotations

from extender.errors import ExtenderError


class TraceError(ExtenderError):
    """A trace file cannot be read or holds a value the simulator cannot use."""

    def __init__(self, source: str, problem: str, *, line: int | None = None,
                 column: str | None = None, value: object = None) -> None:
        self.source = source
        self.line = line
        self.column = column
        self.value = value
        self.problem = problem
        where = source if line is None else f"{source}:{line}"
        if column is not None:
            where += f": column {column!r}"
            if value is not None:
                where += f" = {value!r}"
        super().__init__(f"{where}: {problem}")
