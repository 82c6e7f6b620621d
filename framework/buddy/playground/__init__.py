"""The web playground of ``buddy dev``: a dev platform, its buddies, hot reload and a page.

- :mod:`buddy.playground.session` — :class:`~buddy.playground.session.DevSession` starts the
  dev platform on loopback and runs each named buddy (its dev identity) in-process, watches
  every file a buddy depends on and restarts it on a valid change, keeping the last good
  version running on an invalid one; :mod:`~buddy.playground.watch` is how it sees a
  change, :mod:`~buddy.playground.buddies` one running buddy, :mod:`~buddy.playground.page`
  what the page reads of a buddy.
- :mod:`buddy.playground.app` — the page (``/playground/``, static files shipped in this
  package, no build step) and the few endpoints it needs besides the platform's own.

Nothing here is imported by ``buddy validate``, ``render`` or ``--help``.
"""

from __future__ import annotations
