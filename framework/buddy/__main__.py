"""``python -m buddy`` runs the command line."""

from buddy.cli.main import main

raise SystemExit(main())
