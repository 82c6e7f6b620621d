"""A :class:`~buddy.review.replay.Replay` as text (terminals) or Markdown (pull-request
comments), printed after ``buddy diff``'s own report. Deterministic, as that one is."""

from __future__ import annotations

import json
from html import escape

from buddy.review.replay import NOT_CHECKED, BuddyReplay, Replay, ScenarioDiff, StepDiff
from buddy.review.report import _code, _fence

__all__ = ["markdown", "text"]


def _value(value: str | None) -> str:
    if value is None:
        return "—"
    # The empty card and multi-line texts read unambiguously quoted.
    return json.dumps(value, ensure_ascii=False) if not value or "\n" in value else value


def _moved(pair: tuple[str | None, str | None]) -> str:
    before, after = pair
    return _value(after) if before == after else f"{_value(before)} → {_value(after)}"


def _headline(replay: Replay) -> str:
    buddies = len(replay.buddies)
    if not buddies:
        return "nothing to replay: no buddy's files or scenarios changed"
    scenarios = sum(len(b.scenarios) for b in replay.buddies)
    noun = "buddy" if buddies == 1 else "buddies"
    head = f"{buddies} {noun} touched, {scenarios} scenario{'s' if scenarios != 1 else ''} replayed"
    differ = sum(s.differs for b in replay.buddies for s in b.scenarios)
    stuck = sum(b.problem_differs for b in replay.buddies)
    unread = sum(len(b.invalid) for b in replay.buddies)
    untested = [b for b in replay.buddies if b.untested]
    parts = [f"{differ} differ{'s' if differ == 1 else ''}"] if differ else []
    if stuck:
        parts.append(f"{stuck} {'buddy' if stuck == 1 else 'buddies'} cannot run on one side")
    if unread:
        parts.append(f"{unread} scenario file{'s' if unread != 1 else ''} cannot be read")
    if untested:
        changed = sum(b.view_changed for b in untested)
        tail = f" ({changed} with a changed view)" if changed else ""
        have = "has" if len(untested) == 1 else "have"
        parts.append(f"{len(untested)} {have} no scenarios{tail}")
    if not replay.changed:
        parts.insert(0, "the same behaviour")
    return head + ": " + ", ".join(parts)


def _status(buddy: BuddyReplay, labels: tuple[str, str]) -> str:
    if buddy.old_problem or buddy.new_problem:
        if not buddy.problem_differs:
            return "cannot replay on either side"
        side = labels[0] if buddy.old_problem else labels[1]
        return f"cannot replay on {side}"
    if buddy.untested:
        return "no scenarios (add tests/*.yaml)" + (
            " — its compiled view changed" if buddy.view_changed else ""
        )
    differ = sum(s.differs for s in buddy.scenarios)
    total = len(buddy.scenarios)
    if differ:
        return f"{differ} of {total} scenario{'s' if total != 1 else ''} differ"
    if buddy.invalid:
        return "a scenario file cannot be read"
    return f"the same behaviour ({total} scenario{'s' if total != 1 else ''})"


def _problems(buddy: BuddyReplay, labels: tuple[str, str]) -> list[str]:
    out = []
    for label, problem in zip(labels, (buddy.old_problem, buddy.new_problem), strict=True):
        if problem and (buddy.problem_differs or label == labels[1]):
            side = label if buddy.problem_differs else f"{labels[0]} or {labels[1]}"
            out.append(f"cannot run on {side}: {problem}")
    out += [f"cannot read {file} ({label}):\n{problems}" for label, file, problems in buddy.invalid]
    return out


def _scenario_head(scenario: ScenarioDiff, labels: tuple[str, str]) -> str:
    if scenario.old == scenario.new:
        result = f"{scenario.old} on both"
    else:
        result = f"{labels[0]} {scenario.old}, {labels[1]} {scenario.new}"
    return f"{scenario.file}:{scenario.line} {scenario.name} ({result})"


def _outcome(text: str) -> str:
    return "holds" if not text else ("not checked" if text == NOT_CHECKED else "fails")


def _step_lines(step: StepDiff, labels: tuple[str, str]) -> list[str]:
    """A step's differences as plain lines (the diffs left to the caller)."""
    out = []
    if step.only:
        side = labels[0] if step.only == "old" else labels[1]
        out.append(f"only on {side}")
    if step.requests is not None:
        out.append(
            f"model requests: {labels[0]} {step.requests[0]}, {labels[1]} {step.requests[1]}"
        )
    for change in step.state:
        out.append(
            f"{change.label}: {labels[0]} {_moved(change.old)} | {labels[1]} {_moved(change.new)}"
        )
    for key, old, new in step.expectations:
        out.append(f"expect {key}: {_outcome(old)} on {labels[0]}, {_outcome(new)} on {labels[1]}")
        out += [f"  {labels[0]}: {line}" for line in old.splitlines() if old != NOT_CHECKED]
        out += [f"  {labels[1]}: {line}" for line in new.splitlines() if new != NOT_CHECKED]
    if step.problems is not None:
        for label, problems in zip(labels, step.problems, strict=True):
            out += [f"fails on {label}: {p}" for p in problems] or [f"runs on {label}"]
    return out


def _diffs(step: StepDiff, shown: dict[str, tuple[int, str]]) -> list[tuple[str, str, int]]:
    """The step's diffs as ``(title, diff, 0)``, or ``(title, "", N)`` for one the same
    as step N's shown before in the scenario (a template line is in every step's prompt:
    said once). ``shown`` is updated."""
    named = [
        ("System prompt", step.prompt),
        ("Injected messages", step.injected),
        ("Tools", step.tools),
        ("Calls and replies", step.exchange),
    ]
    out = []
    for title, diff in named:
        if not diff:
            continue
        before = shown.get(title)
        if before is not None and before[1] == diff and title != "Calls and replies":
            out.append((title, "", before[0]))
            continue
        shown[title] = (step.index + 1, diff)
        out.append((title, diff, 0))
    return out


def _errors(scenario: ScenarioDiff, labels: tuple[str, str]) -> list[str]:
    if scenario.errors is None:
        return []
    return [
        f"could not run on {label}: {e}"
        for label, errors in zip(labels, scenario.errors, strict=True)
        for e in errors
    ]


def text(replay: Replay) -> str:
    """The replay for a terminal: a summary, then each touched buddy and what differs."""
    labels = (replay.old, replay.new)
    out = [f"behaviour (--replay): {_headline(replay)}"]
    for buddy in replay.buddies:
        out += ["", f"=== {buddy.name}: {_status(buddy, labels)}"]
        for problem in _problems(buddy, labels):
            lines = problem.splitlines()
            out += [lines[0], *("  " + line for line in lines[1:])]
        for scenario in buddy.scenarios:
            if not scenario.differs:
                continue
            out.append(f"--- {_scenario_head(scenario, labels)}")
            out += _errors(scenario, labels)
            shown: dict[str, tuple[int, str]] = {}
            for step in scenario.steps:
                out.append(f"step {step.index + 1}, line {step.line}: {step.label}")
                out += ["  " + line for line in _step_lines(step, labels)]
                for title, diff, same in _diffs(step, shown):
                    if same:
                        out.append(f"  {title.lower()}: the same change as at step {same}")
                    else:
                        out += ["  " + line for line in diff.rstrip("\n").splitlines()]
    return "\n".join(out) + "\n"


def _step_markdown(
    step: StepDiff, labels: tuple[str, str], shown: dict[str, tuple[int, str]]
) -> str:
    parts = [f"**Step {step.index + 1}** · line {step.line} · {_code(step.label)}\n"]
    if step.only:
        parts.append(f"Only on {_code(labels[0] if step.only == 'old' else labels[1])}.\n")
    if step.requests is not None:
        parts.append(
            f"Model requests: {step.requests[0]} on {_code(labels[0])}, "
            f"{step.requests[1]} on {_code(labels[1])}.\n"
        )
    if step.state:
        rows = [f"| | {_code(labels[0])} | {_code(labels[1])} |", "|---|---|---|"]
        for change in step.state:
            cells = (_moved(change.old), _moved(change.new))
            rows.append(
                f"| {escape(change.label)} | "
                + " | ".join(escape(c).replace("|", "\\|") for c in cells)
                + " |"
            )
        parts.append("\n".join(rows) + "\n")
    for key, old, new in step.expectations:
        lines = [
            f"- `expect: {key}` {_outcome(old)} on {_code(labels[0])}, "
            f"{_outcome(new)} on {_code(labels[1])}"
        ]
        for label, said in zip(labels, (old, new), strict=True):
            if said and said != NOT_CHECKED:
                lines += [f"  - {_code(label)}: {escape(line)}" for line in said.splitlines()]
        parts.append("\n".join(lines) + "\n")
    if step.problems is not None:
        lines = []
        for label, problems in zip(labels, step.problems, strict=True):
            lines += [f"- fails on {_code(label)}: {escape(p)}" for p in problems] or [
                f"- runs on {_code(label)}"
            ]
        parts.append("\n".join(lines) + "\n")
    for title, diff, same in _diffs(step, shown):
        if same:
            parts.append(f"{title}: the same change as at step {same}.\n")
        else:
            parts.append(f"{title}:\n\n" + _fence(diff, "diff"))
    return "\n".join(parts)


def _scenario_markdown(scenario: ScenarioDiff, labels: tuple[str, str]) -> str:
    differ = len(scenario.steps)
    counts = f" · {differ} step{'s' if differ != 1 else ''} differ" if differ else ""
    if scenario.old == scenario.new:
        result = f"{scenario.old} on both"
    else:
        result = f"{scenario.old} on {escape(labels[0])}, {scenario.new} on {escape(labels[1])}"
    summary = (
        f"<code>{escape(scenario.file)}:{scenario.line}</code> · {escape(scenario.name)}"
        f" · {result}{counts}"
    )
    parts = [f"<details>\n<summary>{summary}</summary>\n"]
    parts += [f"- {escape(line)}" for line in _errors(scenario, labels)]
    shown: dict[str, tuple[int, str]] = {}
    parts += [_step_markdown(step, labels, shown) for step in scenario.steps]
    parts.append("</details>\n")
    return "\n".join(parts)


def markdown(replay: Replay, *, max_chars: int) -> str:
    """The replay for a pull-request comment: a heading and summary, then one collapsible
    ``<details>`` per touched buddy holding one per scenario that differs. Scenarios that
    would push it past ``max_chars`` are left out with a note."""
    labels = (replay.old, replay.new)
    headline = _headline(replay)
    out = f"### Behaviour (`--replay`)\n\n{headline[0].upper() + headline[1:]}.\n"
    for buddy in replay.buddies:
        summary = f"<code>{escape(buddy.name)}</code> · {escape(_status(buddy, labels))}"
        problems = _problems(buddy, labels)
        if not problems and not any(s.differs for s in buddy.scenarios):
            out += f"\n- {summary}\n"  # nothing to unfold
            continue
        parts = [f"\n<details>\n<summary>{summary}</summary>\n"]
        for problem in problems:
            head, _, rest = problem.partition("\n")
            parts.append(escape(head) + ("\n\n" + _fence(rest, "text") if rest else "\n"))
        closing = "</details>\n"
        for scenario in buddy.scenarios:
            if not scenario.differs:
                continue
            block = _scenario_markdown(scenario, labels)
            used = len(out) + sum(map(len, parts)) + len(closing)
            if used + len(block) > max_chars:
                block = (
                    f"<details>\n<summary><code>{escape(scenario.file)}:{scenario.line}</code>"
                    f" · {escape(scenario.name)}</summary>\n\nLeft out: the comment would be "
                    "too long. Run `buddy diff --replay` locally to see it.\n\n</details>\n"
                )
            parts.append(block)
        parts.append(closing)
        out += "\n".join(parts)
    return out
