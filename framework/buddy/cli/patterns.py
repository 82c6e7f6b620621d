"""The body of ``buddy patterns``: how well a buddy's patterns read a labelled file."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["patterns"]

EXIT_OK, EXIT_UNDER, EXIT_USAGE = 0, 1, 2


def patterns(
    path: str,
    labelled: str,
    *,
    min_precision: float,
    min_recall: float,
    missed: bool,
    profile: str | None,
) -> int:
    """``buddy patterns MANIFEST LABELLED``: measure the buddy's relation and appraisal
    patterns on a labelled file of messages (no model) and print the figures.

    Returns:
        0; 1 when the relations' or the appraisal's precision is under ``min_precision``
        or recall under ``min_recall``, or when an ``R2``/``R3`` fact was taken from a
        message labelled a hard negative; 2 on a usage error (a missing file, an invalid
        manifest or labelled file).
    """
    from buddy.capabilities.companion.measure import measure, read_labelled, report
    from buddy.cli.commands import shown
    from buddy.compile.compiler import check

    target, file = Path(path), Path(labelled)
    for given, raw in ((target, path), (file, labelled)):
        if not given.exists():
            print(f"buddy patterns: {raw}: no such file or directory", file=sys.stderr)
            return EXIT_USAGE
    blueprint, issues = check(target, profile=profile)
    if blueprint is None:
        for issue in issues:
            print(str(issue.shown_as(shown(Path(issue.file)))), file=sys.stderr)
        return EXIT_USAGE
    read, problems = read_labelled(file, labelled)
    if read is None:
        for issue in problems:
            print(str(issue), file=sys.stderr)
        return EXIT_USAGE
    memory = blueprint.sections.get("memory")
    character = blueprint.sections.get("character")
    measured = measure(memory, character, read)
    if not measured.relations and not measured.appraisal:
        print(
            f"buddy patterns: {path} has no patterns to measure: it declares no relations "
            "(`memory: {relations: [...]}`) and no character with an appraisal file",
            file=sys.stderr,
        )
        return EXIT_USAGE
    sys.stdout.write(report(measured, missed=missed))
    failed = [
        f"{name} {figure} {value:.2f} is under {floor:g}"
        for name, part in (("relations", measured.relations), ("appraisal", measured.appraisal))
        if part
        for figure, value, floor in (
            ("precision", measured.total(part).precision, min_precision),
            ("recall", measured.total(part).recall, min_recall),
        )
        if value is not None and value < floor
    ]
    if measured.hard_risky:
        failed.append(f"{len(measured.hard_risky)} R2/R3 fact(s) taken from hard negatives")
    for reason in failed:
        print(f"buddy patterns: {reason}", file=sys.stderr)
    return EXIT_UNDER if failed else EXIT_OK
