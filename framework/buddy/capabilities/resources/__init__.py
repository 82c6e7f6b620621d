"""Resources: the files a buddy carries in ``resources/``, listed and read by the model."""

from __future__ import annotations

from buddy.capabilities import Capability
from buddy.capabilities.resources.tools import TOOLS

CAPABILITY = Capability("resources", "资料（resources/ 里随身带的文件）", TOOLS)
