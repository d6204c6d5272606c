"""gunicorn's logger, without the access log's cost when it is off.

gunicorn counts its access log as enabled whenever a ``logconfig_dict`` is given (we always
give one, for JSON lines), and then builds every request's access-log atoms (a dict of
headers and environ, two date formats) only for the silenced ``gunicorn.access`` logger to
drop the line: about 4 % of the extender's CPU during a scheduling burst (py-spy, issue 22).
Here the access log is enabled exactly when ``--access-log`` set ``accesslog``.
"""

from __future__ import annotations

from gunicorn.glogging import Logger


class AccessLogOffLogger(Logger):  # type: ignore[misc]
    def _compute_access_log_enabled(self) -> bool:
        return bool(self.cfg.accesslog)
