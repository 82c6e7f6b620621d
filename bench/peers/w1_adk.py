"""W1 (python): import google-adk and build one ready ``LlmAgent`` with the ``Runner`` and
session service a turn needs. ``--turn`` also runs one turn."""

from __future__ import annotations

import time

_t0 = time.perf_counter()

import peer_adk as p  # noqa: E402

ready = p.Ready(p.build_agent())

import _harness  # noqa: E402

_harness.finish_w1(p.PEER, "python", _t0, lambda: p.turn(ready, 0))
