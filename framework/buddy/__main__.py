"""``python -m buddy`` runs the command line: through a warm start server when one can run
the command (buddy.cli.warm), else in this process."""

from buddy.cli.warm import entry

raise SystemExit(entry())
