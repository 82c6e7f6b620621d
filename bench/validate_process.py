"""Whole-process time of the ``buddy`` command line, measured from outside (stdlib only).

Times four commands as subprocesses of the same interpreter, from process start to exit
(interpreter start-up included), 1 warm-up round (which also fills ``__pycache__`` and
starts the warm start server) and then ``--runs`` timed rounds (default 10); the commands
are interleaved round by round so that drift on a noisy machine hits all of them alike:

- floor:    ``python -c pass``
- help:     ``python -m buddy --help``
- validate: ``python -m buddy validate manifests/aunt-tu`` with ``BUDDY_WARM=0``: cold, the
  whole command in its own process
- warm:     the same with ``BUDDY_WARM=1``: served by a warm start server
  (docs/cli.md#warm-start) that the warm-up round started, with its socket in a temporary
  ``XDG_RUNTIME_DIR``; the script waits for it to answer before the timed rounds, checks at
  the end that it served every timed run, and stops it


Prints the median/min/max wall seconds and the median peak RSS of each (``os.wait4``; for
warm, the client's), then runs validate ``--importtime-runs`` more times (default 3) under ``-X importtime`` and lists
the 10 modules with the largest cumulative import time (per-module median over those runs)
and the third-party packages it imported. Exits 1 when validate fails.

usage: python bench/validate_process.py [--runs N] [--importtime-runs K] [--manifest P] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_IMPORTTIME = re.compile(r"^import time:\s+(\d+)\s*\|\s*(\d+)\s*\|( *)(\S+)\s*$")


@dataclass
class Timing:
    """The timed runs of one command."""

    label: str
    cmd: list[str]
    env: dict[str, str] | None = None
    walls: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        return {
            "label": self.label,
            "cmd": " ".join(self.cmd[1:]),
            "n": len(self.walls),
            "wall_s": round(statistics.median(self.walls), 4),
            "wall_min_s": round(min(self.walls), 4),
            "wall_max_s": round(max(self.walls), 4),
            "peak_rss_mb": round(statistics.median(self.rss_mb), 1),
        }


@dataclass(frozen=True)
class ImportLine:
    """One line of ``-X importtime``: microseconds and nesting depth (0 = top level)."""

    module: str
    self_us: int
    cumulative_us: int
    depth: int


def run_once(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) and exit code of one run of ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024.0, proc.returncode


def explain_failure(cmd: list[str], env: dict[str, str] | None = None) -> str:
    """Run ``cmd`` again, capturing its output, to show why it failed."""
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return f"exit {done.returncode}\n{done.stdout}{done.stderr}"


def warm_status(env: dict[str, str]) -> dict[str, str] | None:
    """``buddy warm status`` of the warm row's server, as a dict; None when none answers."""
    done = subprocess.run(
        [sys.executable, "-m", "buddy", "warm", "status"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    return dict(re.findall(r"^(\w[\w ]*): (.*)$", done.stdout, re.MULTILINE))


def wait_for_server(env: dict[str, str], deadline: float = 60.0) -> dict[str, str] | None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        status = warm_status(env)
        if status is not None and status.get("key") == "matches":
            return status
        time.sleep(0.2)
    return None


def parse_importtime(stderr: str) -> list[ImportLine]:
    lines: list[ImportLine] = []
    for raw in stderr.splitlines():
        match = _IMPORTTIME.match(raw)
        if match is None:  # the header line, or the command's own output
            continue
        self_us, cumulative_us, indent, module = match.groups()
        lines.append(ImportLine(module, int(self_us), int(cumulative_us), (len(indent) - 1) // 2))
    return lines


def median_trace(traces: Sequence[list[ImportLine]]) -> list[ImportLine]:
    """Per module (in the order of the first trace), the median of its times over traces."""
    out: list[ImportLine] = []
    for i, first in enumerate(traces[0]):
        same = [t[i] for t in traces if i < len(t) and t[i].module == first.module]
        out.append(
            ImportLine(
                first.module,
                int(statistics.median(x.self_us for x in same)),
                int(statistics.median(x.cumulative_us for x in same)),
                first.depth,
            )
        )
    return out


def third_party(lines: Sequence[ImportLine]) -> list[ImportLine]:
    """Installed top-level packages outside the stdlib, by their own line's cumulative time.

    ``-X importtime`` also logs imports that failed (optional dependencies probed inside a
    ``try``); a name this interpreter cannot find is one of those and is left out.
    """
    best: dict[str, ImportLine] = {}
    for x in lines:
        name = x.module
        if "." in name or name.startswith("_") or name in sys.stdlib_module_names:
            continue
        if name in ("sitecustomize", "usercustomize") or importlib.util.find_spec(name) is None:
            continue
        if name not in best or x.cumulative_us > best[name].cumulative_us:
            best[name] = x
    return sorted(best.values(), key=lambda x: -x.cumulative_us)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10, help="timed runs (default 10)")
    parser.add_argument("--manifest", default="manifests/aunt-tu", help="relative to the repo")
    parser.add_argument(
        "--importtime-runs",
        type=int,
        default=3,
        help="runs under -X importtime; per-module median (default 3)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.importtime_runs < 1:
        parser.error("--runs and --importtime-runs must be at least 1")

    runtime = tempfile.mkdtemp(prefix="buddy-bench-warm-")
    try:
        return measure(args, runtime)
    finally:
        warm_env = {**os.environ, "BUDDY_WARM": "1", "XDG_RUNTIME_DIR": runtime}
        subprocess.run(
            [sys.executable, "-m", "buddy", "warm", "stop"],
            cwd=ROOT,
            env=warm_env,
            capture_output=True,
            check=False,
        )
        shutil.rmtree(runtime, ignore_errors=True)


def measure(args: argparse.Namespace, runtime: str) -> int:
    py = sys.executable
    validate_cmd = [py, "-m", "buddy", "validate", args.manifest]
    cold_env = {**os.environ, "BUDDY_WARM": "0"}
    warm_env = {**os.environ, "BUDDY_WARM": "1", "XDG_RUNTIME_DIR": runtime}
    timings = [
        Timing("floor", [py, "-c", "pass"], cold_env),
        Timing("help", [py, "-m", "buddy", "--help"], cold_env),
        Timing("validate", validate_cmd, cold_env),
        Timing("warm", validate_cmd, warm_env),
    ]
    served_before = 0
    for round_ in range(1 + args.runs):
        for timing in timings:
            wall, rss, code = run_once(timing.cmd, timing.env)
            if code != 0:
                print(
                    f"{timing.label} failed: {' '.join(timing.cmd)}\n"
                    f"{explain_failure(timing.cmd, timing.env)}",
                    file=sys.stderr,
                )
                return 1
            if round_ > 0:  # round 0 is the warm-up
                timing.walls.append(wall)
                timing.rss_mb.append(rss)
        if round_ == 0:
            # The warm-up's warm run ran in process and started the server: wait for it.
            status = wait_for_server(warm_env)
            if status is None:
                print("warm: no warm start server answered within 60 s", file=sys.stderr)
                return 1
            served_before = int(status["requests"])
    status = warm_status(warm_env)
    served = int(status["requests"]) - served_before if status else 0
    if served != args.runs:
        print(
            f"warm: the server served {served} of the {args.runs} timed runs (a file of buddy "
            "changed while it ran?); the others ran in process",
            file=sys.stderr,
        )

    traces: list[list[ImportLine]] = []
    for _ in range(args.importtime_runs):
        traced = subprocess.run(
            [py, "-X", "importtime", *validate_cmd[1:]],
            cwd=ROOT,
            env=cold_env,
            capture_output=True,
            text=True,
            check=False,
        )
        if traced.returncode != 0:
            print(f"validate failed under -X importtime:\n{traced.stderr}", file=sys.stderr)
            return 1
        traces.append(parse_importtime(traced.stderr))
    imports = median_trace(traces)
    top = sorted(imports, key=lambda x: -x.cumulative_us)[:10]
    total_us = sum(x.self_us for x in imports)
    packages = third_party(imports)

    summaries = [t.summary() for t in timings]
    floor = statistics.median(timings[0].walls)
    if args.json:
        print(
            json.dumps(
                {
                    "bench": "validate_process",
                    "python": platform.python_version(),
                    "runs": args.runs,
                    "commands": summaries,
                    "validate_minus_floor_s": round(statistics.median(timings[2].walls) - floor, 4),
                    "warm_minus_floor_s": round(statistics.median(timings[3].walls) - floor, 4),
                    "validate_over_floor": round(statistics.median(timings[2].walls) / floor, 1),
                    "warm_over_floor": round(statistics.median(timings[3].walls) / floor, 1),
                    "warm_served": served,
                    "help_minus_floor_s": round(statistics.median(timings[1].walls) - floor, 4),
                    "imports_total_ms": round(total_us / 1000, 1),
                    "imports_count": len(imports),
                    "importtime_runs": args.importtime_runs,
                    "top_imports": [
                        {"module": x.module, "cumulative_ms": round(x.cumulative_us / 1000, 1)}
                        for x in top
                    ],
                    "third_party_ms": {
                        x.module: round(x.cumulative_us / 1000, 1) for x in packages
                    },
                }
            ),
            flush=True,
        )
        return 0

    print(
        f"python {platform.python_version()} ({py}); {args.runs} timed runs after 1 warm-up, "
        "interleaved; seconds, process start to exit"
    )
    print(
        f"{'label':<9}{'command':<48} {'median':>8} {'min':>8} {'max':>8} {'-floor':>8} "
        f"{'×floor':>7} {'RSS MiB':>8}"
    )
    for s, t in zip(summaries, timings, strict=True):
        median = statistics.median(t.walls)
        print(
            f"{t.label:<9}{'python ' + str(s['cmd']):<48} {median:>8.3f} {min(t.walls):>8.3f} "
            f"{max(t.walls):>8.3f} {median - floor:>8.3f} {median / floor:>7.1f} "
            f"{s['peak_rss_mb']:>8}"
        )
    print(f"warm: {served} of {args.runs} timed runs served by the warm start server")
    print()
    print(
        f"validate under -X importtime (median of {args.importtime_runs} runs): "
        f"{len(imports)} modules, "
        f"{total_us / 1000:.1f} ms of import time in all"
    )
    print("top 10 by cumulative import time (depth 0 = imported by nothing else):")
    print(f"  {'cumulative ms':>13} {'self ms':>8} {'depth':>5}  module")
    for x in top:
        print(
            f"  {x.cumulative_us / 1000:>13.1f} {x.self_us / 1000:>8.1f} {x.depth:>5}  {x.module}"
        )
    print("third-party packages imported (cumulative ms):")
    print("  " + ", ".join(f"{x.module} {x.cumulative_us / 1000:.1f}" for x in packages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
