"""Model providers. This package's ``__init__`` stays import-light: the loader reads the
provider table from :mod:`buddy.models.providers` without importing any HTTP client."""
