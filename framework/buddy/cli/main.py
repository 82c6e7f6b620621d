"""Entry point of the ``buddy`` command: argument parsing and dispatch only."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


IDLE_HELP = (
    "recycle a conversation idle this long (default 1800: the platform's 30 minutes; "
    "shorten it only for testing)"
)


def _positive(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be above 0 seconds, not {text}")
    return value


def _test_parser(sub: Any, profile_help: str) -> None:
    """``buddy test``'s options."""
    test = sub.add_parser(
        "test",
        help="run the scenario tests next to buddies (offline and deterministic by default)",
        description="Run scenario files (tests/*.yaml inside each buddy directory) against a "
        "local dev platform. Exit 0 when all pass, 1 when any fails, 2 on a usage error.",
    )
    test.add_argument("paths", nargs="*", metavar="PATH", default=["."])
    test.add_argument("--model", help="run against this model instead of the scripted turns")
    test.add_argument("--profile", help=profile_help)
    test.add_argument("--junit", metavar="FILE", help="also write JUnit XML here")
    test.add_argument(
        "-k", dest="select", metavar="TEXT", help="only scenarios whose name contains TEXT"
    )
    test.add_argument(
        "--require-scenarios",
        action="store_true",
        help="fail for a buddy with no scenario files (by default it is only reported)",
    )
    test.add_argument(
        "--record",
        metavar="CONVERSATION",
        help="instead of running: write this conversation (an id, or `latest`) of --db as a "
        "scenario file of the buddy under PATH that had it",
    )
    test.add_argument("--db", metavar="FILE", help="with --record: the buddy dev/chat database")
    test.add_argument(
        "-o", "--output", metavar="FILE", help="with --record: the file (default: its tests/)"
    )
    test.add_argument(
        "--sockets",
        action="store_true",
        help="serve the dev platform on loopback sockets (by default it runs in this "
        "process, without a port)",
    )


#: Every subcommand, in the order ``buddy --help`` lists them.
COMMANDS = (
    "validate",
    "render",
    "schema",
    "chat",
    "run",
    "test",
    "diff",
    "init",
    "import-card",
    "export-card",
    "import-lore",
    "export-lore",
    "patterns",
    "dev",
    "platform",
    "warm",
)


class _Only:
    """The subcommands' action, adding the parser of one subcommand only: a run that
    names its subcommand first (``buddy validate …``) parses nothing else, and building
    the ~90 arguments of the others is a few milliseconds of every start."""

    def __init__(self, sub: Any, command: str) -> None:
        self._sub = sub
        self._command = command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        return self._sub.add_parser(name, **kwargs) if name == self._command else _Unused()


class _Unused:
    """A subcommand's parser that is never used: whatever is added to it is dropped."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        return None

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Unused:
        return self


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command``, only that subcommand's (see
    :class:`_Only`)."""
    parser = argparse.ArgumentParser(
        prog="buddy",
        description="Declarative chat companions: one buddy.yaml, validated, compiled and run.",
    )
    parser.add_argument("--version", action="version", version="%(prog)s 0.1.0")
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command is not None:
        sub = _Only(sub, command)

    model_help = "override the model for this run (default: $BUDDY_MODEL)"
    profile_help = "apply a profile of the manifest (default: $BUDDY_PROFILE)"

    validate = sub.add_parser(
        "validate",
        help="check manifests; print every problem with file, line and column",
        description="Validate buddy manifests. Directories are searched for buddy.yaml. "
        "Exit 0 when all are valid, 1 when any is invalid, 2 on a usage error.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH")
    validate.add_argument("--format", choices=("text", "json", "github"), default="text")
    validate.add_argument("--profile", help=profile_help)
    validate.add_argument("--model", help=model_help)

    render = sub.add_parser(
        "render",
        help="print the compiled view of a buddy (what a reviewer reads)",
        description="Print the deterministic compiled view of a buddy: model, full system "
        "prompt, tools with schemas, hooks, subscriptions, data declaration, resources, widgets.",
    )
    render.add_argument("path", metavar="PATH")
    render.add_argument("--format", choices=("markdown", "json"), default="markdown")
    render.add_argument("--conversation", choices=("private", "group"), default="private")
    render.add_argument("--now", help="ISO-8601 instant for `now` (default: a fixed example)")
    render.add_argument("--profile", help=profile_help)
    render.add_argument("--model", help=model_help)

    schema = sub.add_parser(
        "schema",
        help="print the JSON Schema of buddy.yaml (or of scenario files), or write both",
        description="Print the JSON Schema of buddy.yaml, or of scenario files with "
        "--scenario; --write puts both into a folder that the `$schema` line of a file can "
        "point at with a relative path.",
    )
    which = schema.add_mutually_exclusive_group()
    which.add_argument(
        "--scenario", action="store_true", help="the schema of scenario files (tests/*.yaml)"
    )
    which.add_argument(
        "--write",
        nargs="?",
        const="",
        metavar="DIR",
        help="write buddy.schema.json and scenario.schema.json into DIR (default: where the "
        "project's files point, .buddy/ at the project root) and print what was written",
    )

    chat = sub.add_parser(
        "chat",
        help="chat with a buddy in the terminal (against an in-process dev platform)",
        description="Chat with a buddy in the terminal. The buddy runs against a dev platform "
        "on loopback (a temporary database unless --db). Reads lines from stdin, so it can be "
        "scripted; a number picks a question option, y/n answers a data card, /quit ends.",
    )
    chat.add_argument("path", metavar="PATH")
    chat.add_argument("--model", help=model_help)
    chat.add_argument("--profile", help=profile_help)
    chat.add_argument("--db", help="keep the platform's data in this SQLite file")

    _add_run(sub, model_help, profile_help)

    _test_parser(sub, profile_help)

    diff = sub.add_parser(
        "diff",
        help="diff the compiled view of buddies between two versions (for review)",
        description="Compare the compiled view (`buddy render`) of every buddy between OLD and NEW "
        "(two paths), or between a git revision and the work tree (--git REV), and list the "
        "buddies a changed shared template or trait file affects. With --replay, also run the "
        "scenarios of every buddy the change touches on both sides (offline, scripted) and "
        "show, step by step, what they do differently.",
    )
    diff.add_argument("paths", nargs="*", metavar="PATH")
    diff.add_argument("--git", metavar="REV", help="compare revision REV with the work tree")
    diff.add_argument("--format", choices=("text", "markdown"), default="text")
    diff.add_argument(
        "--exit-code",
        action="store_true",
        help="exit 1 when anything changed (with --replay: when behaviour differs)",
    )
    diff.add_argument(
        "--replay",
        action="store_true",
        help="run the touched buddies' scenarios on both sides and compare them step by step",
    )

    init = sub.add_parser(
        "init",
        help="create a new buddy that validates, renders and passes its own scenario test",
    )
    init.add_argument("name", metavar="NAME")
    init.add_argument("--persona", metavar="TEMPLATE", help="a shared persona template to extend")
    init.add_argument("--dir", default=".", help="where to create it (default: here)")

    _card_commands(sub)

    _add_patterns(sub, profile_help)

    _add_dev(sub, model_help, profile_help)

    platform = sub.add_parser(
        "platform",
        help="serve the local dev platform (docs/protocol.md) over SQLite",
        description="Serve the dev platform: the buddy protocol's HTTP API and websocket "
        "gateway, dev endpoints under /dev (admin token), OpenAPI at /openapi.json.",
    )
    platform.add_argument(
        "--db", default="buddy-platform.db", help="SQLite file (default %(default)s)"
    )
    platform.add_argument("--host", default="127.0.0.1")
    platform.add_argument("--port", type=int, default=8700)
    platform.add_argument(
        "--admin-token",
        default=os.environ.get("BUDDY_PLATFORM_ADMIN_TOKEN"),
        help="token of the /dev endpoints (default: $BUDDY_PLATFORM_ADMIN_TOKEN, else the one "
        "stored in the database, else a new one that is printed)",
    )

    _add_warm(sub)
    return parser


def _add_warm(sub: Any) -> None:
    warm = sub.add_parser(
        "warm",
        help="show or stop the warm start server (docs/cli.md#warm-start)",
        description="The warm start server runs validate, render, schema, diff and patterns "
        "in a process forked from one that imported buddy already. `status` shows the server "
        "of this interpreter (exit 1 when none runs); `stop` stops it.",
    )
    warm.add_argument("action", nargs="?", choices=("status", "stop"), default="status")
    warm.add_argument(
        "--all", action="store_true", help="every server of this user, not only this one's"
    )


def _card_commands(sub: Any) -> None:
    """``import-card`` and ``export-card`` (Character Card V2/V3), ``import-lore`` and
    ``export-lore`` (lorebooks)."""
    import_card = sub.add_parser(
        "import-card",
        help="create a buddy from a Character Card V2/V3 (.json or .png)",
        description="Create PARENT/NAME/ with a buddy.yaml made from a character card (JSON, "
        "or PNG with a chara/ccv3 text chunk) and card.json holding the whole card. Exit 0 "
        "created, 1 not a valid card, 2 usage error.",
    )
    import_card.add_argument("file", metavar="FILE")
    import_card.add_argument("--dir", default=".", help="where to create it (default: here)")
    import_card.add_argument(
        "--name", metavar="SLUG", help="the buddy's name (default: from the card)"
    )

    export_card = sub.add_parser(
        "export-card",
        help="write a buddy as a Character Card V2/V3 (.json or .png)",
        description="Write the buddy's card: its card.json updated with the buddy's title, "
        "description, prompt and greetings where they changed, or a card made from the buddy "
        "alone. Exit 0 written, 1 invalid buddy or card.json, 2 usage error.",
    )
    export_card.add_argument("path", metavar="PATH")
    export_card.add_argument(
        "--format",
        choices=("json", "png"),
        help="default: png with --image or --out *.png, else json",
    )
    export_card.add_argument(
        "--out", metavar="FILE", help="default: NAME.json / NAME.png; - for stdout"
    )
    export_card.add_argument("--image", metavar="PNG", help="the picture of a PNG card")
    card_version = export_card.add_mutually_exclusive_group()
    card_version.add_argument("--v2", dest="card_version", action="store_const", const=2)
    card_version.add_argument("--v3", dest="card_version", action="store_const", const=3)

    import_lore = sub.add_parser(
        "import-lore",
        help="add a lorebook (CCv3 lorebook_v3, character_book, SillyTavern World Info JSON) "
        "to a buddy as a lore book",
        description="Add lore/NAME.yaml made from a lorebook file, and lore/NAME.card.json "
        "keeping the file for export-lore. Exit 0 added, 1 not a lorebook (or the buddy would "
        "not validate: nothing is changed), 2 usage error.",
    )
    import_lore.add_argument("file", metavar="FILE")
    import_lore.add_argument("--into", default=".", help="the buddy (default: here)")
    import_lore.add_argument(
        "--name", metavar="NAME", help="the book's name (default: from the file name)"
    )

    export_lore = sub.add_parser(
        "export-lore",
        help="write a buddy's lore book as a lorebook file (World Info or lorebook_v3)",
        description="Write lore/BOOK.yaml as a lorebook: its original file with the entries "
        "that changed rewritten, or one made from the book alone. Exit 0 written, 1 invalid "
        "buddy or original, 2 usage error.",
    )
    export_lore.add_argument("path", metavar="BUDDY")
    export_lore.add_argument("book", metavar="BOOK")
    export_lore.add_argument(
        "-o", "--out", metavar="FILE", help="default: BOOK.json here; - for stdout"
    )
    export_lore.add_argument(
        "--format",
        choices=("wi", "lorebook_v3"),
        help="default: the original's (wi, lorebook_v3 or a bare character_book), else lorebook_v3",
    )


def _unit(text: str) -> float:
    """An argparse type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, not {text}")
    return value


def _add_patterns(sub: Any, profile_help: str) -> None:
    patterns = sub.add_parser(
        "patterns",
        help="measure a buddy's relation and appraisal patterns on a labelled file of messages",
        description="Run the buddy's relation patterns and appraisal patterns (no model) on each "
        "message of LABELLED (a YAML file: messages with the facts and appraisal kinds they "
        "should yield) and print precision and recall per relation and per appraisal kind, and "
        "every wrong fact kept. Exit 0; 1 under --min-precision or --min-recall, or when an "
        "R2/R3 fact came from a hard negative; 2 on a usage error.",
    )
    patterns.add_argument("path", metavar="MANIFEST")
    patterns.add_argument("labelled", metavar="LABELLED")
    patterns.add_argument(
        "--min-precision",
        type=_unit,
        default=0.0,
        metavar="P",
        help="exit 1 when the relations' or the appraisal's precision is under P",
    )
    patterns.add_argument(
        "--min-recall",
        type=_unit,
        default=0.0,
        metavar="R",
        help="exit 1 when the relations' or the appraisal's recall is under R",
    )
    patterns.add_argument("--missed", action="store_true", help="also list the facts not found")
    patterns.add_argument("--profile", help=profile_help)


def _add_run(sub: Any, model_help: str, profile_help: str) -> None:
    run = sub.add_parser(
        "run",
        help="connect a buddy to a platform and run its conversations",
        description="Run a buddy against a platform: BUDDY_TOKEN and BUDDY_PLATFORM_URL (or "
        "--platform) from the environment. SIGTERM finishes in-flight turns, then exits 0; "
        "a supersede exits 3.",
    )
    run.add_argument("path", metavar="PATH")
    run.add_argument("--platform", help="platform URL (default: $BUDDY_PLATFORM_URL)")
    run.add_argument("--model", help=model_help)
    run.add_argument("--profile", help=profile_help)
    run.add_argument("--shutdown-deadline", type=float, default=20.0, metavar="SECONDS")
    run.add_argument("--idle-seconds", type=_positive, metavar="SECONDS", help=IDLE_HELP)


def _add_dev(sub: Any, model: str, profile: str) -> None:
    dev = sub.add_parser(
        "dev",
        help="the web playground: dev platform + buddies on loopback, reloaded on every edit",
        description="Start the dev platform and each named buddy (its dev identity) in this "
        "process, serve the playground page on 127.0.0.1 and print its URL. Edits to a buddy's "
        "files reload it within two seconds; an invalid edit shows its located problems and "
        "keeps the last good version running.",
    )
    dev.add_argument("paths", nargs="+", metavar="PATH")
    dev.add_argument("--port", type=int, default=8700, help="loopback port (0: any free one)")
    dev.add_argument("--db", help="keep the platform's data in this SQLite file")
    dev.add_argument("--model", help=model)
    dev.add_argument("--profile", help=profile)
    dev.add_argument("--idle-seconds", type=_positive, metavar="SECONDS", help=IDLE_HELP)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    try:
        return _run(argv)
    except BrokenPipeError:
        # The reader went away (`buddy validate … | head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_INVALID


def _run(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    # A subcommand named first is all that is parsed (`buddy -h validate` needs them all).
    parser = _parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(words)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    if args.command == "schema":
        from buddy.cli.commands import schema

        return schema(args.scenario, args.write)
    if args.command == "platform":
        from buddy.cli.serve import platform

        return platform(args.db, args.host, args.port, args.admin_token)
    if args.command == "warm":
        from buddy.cli.warm import command

        return command(args.action, every=args.all)
    profile = getattr(args, "profile", None) or os.environ.get("BUDDY_PROFILE") or None
    model = getattr(args, "model", None) or os.environ.get("BUDDY_MODEL") or None
    if args.command == "validate":
        from buddy.cli.commands import validate

        return validate(args.paths, args.format, profile=profile, model=model)
    if args.command == "test" and args.record is not None:
        from buddy.cli.record import record_command

        return record_command(args.paths, args.record, args.db, args.output, profile=profile)
    if args.command == "test":
        from buddy.cli.scenarios import test

        return test(
            args.paths,
            model,
            args.junit,
            args.select,
            profile=profile,
            require_scenarios=args.require_scenarios,
            sockets=args.sockets,
        )
    if args.command == "diff":
        from buddy.cli.diff import diff

        return diff(args.paths, args.git, args.format, args.exit_code, replaying=args.replay)
    if args.command == "patterns":
        from buddy.cli.patterns import patterns

        return patterns(
            args.path,
            args.labelled,
            min_precision=args.min_precision,
            min_recall=args.min_recall,
            missed=args.missed,
            profile=profile,
        )
    if args.command == "init":
        from buddy.cli.init import init

        return init(args.name, args.persona, args.dir)
    if args.command == "import-card":
        from buddy.cli.cards import import_card

        return import_card(args.file, args.dir, args.name)
    if args.command == "export-card":
        from buddy.cli.cards import export_card

        return export_card(args.path, args.format, args.out, args.card_version, args.image)
    if args.command == "import-lore":
        from buddy.cli.cards import import_lore

        return import_lore(args.file, args.into, args.name)
    if args.command == "export-lore":
        from buddy.cli.cards import export_lore

        return export_lore(args.path, args.book, args.out, args.format)
    if args.command == "dev":
        from buddy.cli.dev import dev

        return dev(args.paths, args.port, args.db, model, profile, args.idle_seconds)
    if args.command == "chat":
        from buddy.cli.chat import chat

        return chat(args.path, model, profile, args.db)
    if args.command == "run":
        from buddy.cli.run import run

        return run(
            args.path, args.platform, profile, model, args.shutdown_deadline, args.idle_seconds
        )
    from buddy.cli.commands import render

    return render(args.path, args.format, args.conversation, args.now, profile=profile, model=model)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
