"""W1 floor: the interpreter plus the stdlib the harness uses; no framework."""

from __future__ import annotations

import time

_t0 = time.perf_counter()

import _harness  # noqa: E402

_harness.finish_w1("none", "python-only", _t0)
