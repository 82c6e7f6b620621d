"""``resources:`` in ``buddy.yaml``: the folder of Markdown files the buddy carries
(``resources`` by default).

Standard library and pydantic only: ``buddy validate`` imports it.
"""

from __future__ import annotations

from buddy.manifest.schema import Folder

__all__ = ["ResourcesSection"]

#: ``resources:``: the folder, relative to the manifest that names it.
ResourcesSection = Folder
