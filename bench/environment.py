"""What a run ran on: the machine and the versions of one interpreter's packages (stdlib only).

Prints one JSON line on stdout for the results file (``bench/summarize.py`` puts it above its
tables) and the same in words on stderr, for whoever watches the run. ``run_buddy.sh`` calls
it once with buddy's interpreter and once with the peers' (``--same-machine``: the machine is
not described again on stderr).

usage: python bench/environment.py [--same-machine] SIDE [DISTRIBUTION ...]
"""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib import metadata
from typing import Any

__all__ = ["describe", "machine", "versions"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware", "cpu model"):
                    return value.strip()
    except OSError:  # not Linux: the platform module's guess is all there is
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def _os_name() -> str:
    kernel = f"{platform.system()} {platform.release()}"
    try:
        pretty = platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        return kernel
    return f"{kernel} ({pretty})" if pretty else kernel


def machine() -> dict[str, Any]:
    """CPU model, logical CPUs (and how many this process may use), memory and OS."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    memory = _memory_gib()
    return {
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "memory_gib": None if memory is None else round(memory, 1),
        "os": _os_name(),
    }


def versions(distributions: list[str]) -> dict[str, str | None]:
    """The installed version of each distribution, ``None`` where it is not installed."""
    found: dict[str, str | None] = {}
    for name in distributions:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def describe(record: dict[str, Any]) -> list[str]:
    """The record of :func:`main` in words, one line each for the machine and the versions."""
    m = record["machine"]
    cpus = f"{m['cpus']} CPUs" + (
        f" ({m['cpus_usable']} usable)" if m["cpus_usable"] not in (None, m["cpus"]) else ""
    )
    memory = f"{m['memory_gib']} GiB memory" if m["memory_gib"] is not None else "memory unknown"
    packages = ", ".join(
        f"{name} {version}" if version else f"{name} not installed"
        for name, version in record["versions"].items()
    )
    return [
        f"machine: {m['cpu']}, {cpus}, {memory}, {m['os']}",
        f"{record['environment']}: {record['python']}" + (f"; {packages}" if packages else ""),
    ]


def main() -> None:
    args = sys.argv[1:]
    same_machine = "--same-machine" in args
    args = [a for a in args if a != "--same-machine"]
    if not args:
        raise SystemExit(__doc__)
    record = {
        "environment": args[0],
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "machine": machine(),
        "versions": versions(args[1:]),
    }
    for line in describe(record)[1 if same_machine else 0 :]:
        print(line, file=sys.stderr)
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
