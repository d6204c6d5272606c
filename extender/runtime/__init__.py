"""What every process shares: logging, TLS, the side listener, the gunicorn application and
worker, the command helpers (below the process packages: agent, server, shadow, webhook)."""
