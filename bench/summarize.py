"""Median-of-runs tables from JSON-lines results (stdlib only); prints Markdown.

First the machine and the versions, where the file has the lines of ``environment.py``.
The first table holds every workload, peer and variant (the W1–W3 lines of buddy and of
``bench/peers/``, and the end-to-end rows of ``e2e_platform.py``). The second puts buddy
next to every other peer in the file(s), with the ratio buddy / peer (below 1: buddy is
faster or smaller). buddy's W1 is its YAML loader; the peers' W1 column uses their
``python`` variant and, where they have one, their ``yaml`` variant in brackets.

usage: python bench/summarize.py RESULTS.jsonl [MORE.jsonl ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from typing import Any

from environment import describe

Row = dict[str, Any]
Key = tuple[str, str, str]

ORDER = {
    "W1-process": 0,
    "W1+turn-process": 1,
    "W1": 2,
    "W1+turn": 3,
    "W2": 4,
    "W3": 5,
    "E2E-seq": 6,
    "E2E-conc": 7,
}


def load(paths: list[str], environments: list[Row] | None = None) -> dict[Key, list[Row]]:
    """The result lines grouped by workload, peer and variant; ``environment.py``'s lines
    go to ``environments`` when it is given."""
    groups: dict[Key, list[Row]] = defaultdict(list)
    for path in paths:
        with open(path) as f:
            for raw in f:
                line = raw.strip()
                if line.startswith("{"):
                    r = json.loads(line)
                    if "environment" in r:
                        if environments is not None:
                            environments.append(r)
                        continue
                    variant = r.get("variant", "")
                    if r["workload"].startswith("E2E"):  # one group per size (and sniffio)
                        variant = f"{variant} n={r['n']}"
                        variant += " +sniffio" if r.get("sniffio_installed") else ""
                    groups[(r["workload"], r["peer"], variant)].append(r)
    return groups


def med(rows: list[Row], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def rng(rows: list[Row], key: str) -> str:
    values = [r[key] for r in rows if r.get(key) is not None]
    return f"{min(values):g}–{max(values):g}" if len(values) > 1 else ""


def metric(workload: str) -> tuple[str, str]:
    if workload in ("W2", "E2E-seq"):
        return "us_per_turn", " µs/turn"
    return "wall_s", " s"


def fmt(value: float | None, unit: str = "") -> str:
    return "—" if value is None else f"{value:g}{unit}"


def full_table(groups: dict[Key, list[Row]]) -> list[str]:
    out = [
        "| workload | peer | variant | runs | median | range | peak RSS MB (median) | extra |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (wl, peer, var), all_rows in sorted(
        groups.items(), key=lambda kv: (ORDER.get(kv[0][0], 9), kv[0][1], kv[0][2])
    ):
        key, unit = metric(wl)
        rows = [r for r in all_rows if "failed" not in r]
        failed = len(all_rows) - len(rows)
        if not rows:
            out.append(f"| {wl} | {peer} | {var} | {failed} failed | — | | | |")
            continue
        extra = f"{failed} more failed; " if failed else ""
        if wl in ("W3", "E2E-conc"):
            d = med(rows, "rss_delta_kb_per_conv")
            extra += f"RSS Δ/conv ≈ {d:g} KiB" if d is not None else ""
        if wl.startswith("E2E"):
            extra = "; ".join(
                x
                for x in (
                    f"{failed} more failed" if failed else "",
                    f"turns/s {fmt(med(rows, 'turns_per_s'))}",
                    f"CPU {fmt(med(rows, 'cpu_ms_per_turn'))} ms/turn",
                    f"p50 {fmt(med(rows, 'latency_ms_p50'))} ms",
                    f"p99 {fmt(med(rows, 'latency_ms_p99'))} ms",
                    f"RSS Δ/conv ≈ {fmt(med(rows, 'rss_delta_kb_per_conv'))} KiB"
                    if wl == "E2E-conc"
                    else "",
                )
                if x
            )
        if wl.endswith("-process"):
            runs = f"{rows[0]['n']} (×{len(rows)})" if len(rows) > 1 else str(rows[0]["n"])
            spread = (
                f"{rows[0]['wall_min_s']:g}–{rows[0]['wall_max_s']:g}"
                if len(rows) == 1
                else rng(rows, key)
            )
        else:
            runs, spread = str(len(rows)), rng(rows, key)
        out.append(
            f"| {wl} | {peer} | {var} | {runs} | {fmt(med(rows, key), unit)} | {spread}"
            f" | {fmt(med(rows, 'peak_rss_mb'))} | {extra} |"
        )
    return out


def comparison(groups: dict[Key, list[Row]], subject: str = "buddy") -> list[str]:
    peers = sorted({peer for _, peer, _ in groups if peer not in (subject, "none")})
    if not peers:
        return []
    head = f"| figure | {subject} |" + "".join(f" {p} | {subject}/{p} |" for p in peers)
    out = [head, "|---|---|" + "---|---|" * len(peers)]

    def value(workload: str, peer: str, variant: str | None, key: str) -> float | None:
        rows = [
            r
            for (wl, pe, var), rs in groups.items()
            if wl == workload and pe == peer and (variant is None or var == variant)
            for r in rs
        ]
        return med(rows, key) if rows else None

    def ratio(a: float | None, b: float | None) -> str:
        if a is None or not b:
            return "—"
        return f"{a / b:.2f}" if a / b >= 0.1 else f"{a / b:.2g}"

    # by_variant: buddy's `yaml` figure (or the variant named) against the peers' python [yaml]
    figures: list[tuple[str, str, str, bool | str]] = [
        ("W1 process s (import + build)", "W1-process", "wall_s", True),
        ("W1+turn process s", "W1+turn-process", "wall_s", True),
        ("W1+turn process s, compiling (no cache)", "W1+turn-process", "wall_s", "yaml-nocache"),
        ("W1 peak RSS MiB", "W1-process", "peak_rss_mb", True),
        ("W2 µs/turn", "W2", "us_per_turn", False),
        ("W2 peak RSS MiB", "W2", "peak_rss_mb", False),
        ("W3 wall s", "W3", "wall_s", False),
        ("W3 peak RSS MiB", "W3", "peak_rss_mb", False),
        ("W3 RSS Δ KiB/conv", "W3", "rss_delta_kb_per_conv", False),
    ]
    for label, workload, key, by_variant in figures:
        mine = value(
            workload,
            subject,
            by_variant if isinstance(by_variant, str) else "yaml" if by_variant else "",
            key,
        )
        if mine is None and isinstance(by_variant, str):
            continue
        cells = f"| {label} | {fmt(mine)} |"
        for peer in peers:
            if by_variant:
                python, yaml = (value(workload, peer, v, key) for v in ("python", "yaml"))
                shown = fmt(python) + (f" [{fmt(yaml)}]" if yaml is not None else "")
                ratios = ratio(mine, python) + (
                    f" [{ratio(mine, yaml)}]" if yaml is not None else ""
                )
            else:
                theirs = value(workload, peer, "", key)
                shown, ratios = fmt(theirs), ratio(mine, theirs)
            cells += f" {shown} | {ratios} |"
        out.append(cells)
    return out


def environment_lines(environments: list[Row]) -> list[str]:
    """The machine once, then each interpreter's versions, as Markdown paragraphs."""
    out: list[str] = []
    for i, record in enumerate(environments):
        machine, packages = describe(record)
        out += [machine, ""] if i == 0 else []
        out += [packages, ""]
    return out


def main() -> None:
    paths = sys.argv[1:] or ["results.jsonl"]
    environments: list[Row] = []
    groups = load(paths, environments)
    print("\n".join(environment_lines(environments) + full_table(groups)))
    table = comparison(groups)
    if table:
        print()
        print("\n".join(table))


if __name__ == "__main__":
    main()
