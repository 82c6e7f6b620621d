"""The ``buddy`` command line. Subcommands import what they need when they run, so
``buddy --help`` and ``buddy validate`` never load the runtime, HTTP or server stack."""
