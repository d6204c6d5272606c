"""The exit codes every command uses, defined once (``runtime.command`` re-exports them; this
module imports nothing, so the offline simulator may use it)."""

EXIT_OK = 0
EXIT_ERROR = 1
"""The invocation was understood but cannot run: a config that does not validate, unreachable
cluster credentials, a failure while running."""
EXIT_USAGE = 2
"""The invocation itself is wrong: flags that do not go together, an input file that is not
what the flag expects (argparse uses 2 too)."""
