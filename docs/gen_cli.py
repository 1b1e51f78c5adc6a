"""Write ``docs/reference/cli.md``, every ``privsim`` command with its arguments, from the
argparse parser itself (:func:`privsim.cli.build_parser`), so the page cannot drift from
the command line.

    python docs/gen_cli.py           # (re)write the page
    python docs/gen_cli.py --check   # exit 1 if the page is stale

``python docs/gen_pages.py`` writes every generated page; tests/test_docs_generated.py
fails when a committed page differs from what its generator writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "cli.md"
COMMAND = "python docs/gen_cli.py"

sys.path.insert(0, str(Path(__file__).resolve().parent))  # page_io, beside this script
from page_io import finish, write_or_check  # noqa: E402

INTRO = """\
`privsim` with no command runs `privsim run` (the embedded quickstart). Every command
prints a named error and exits 2 on invalid input; the exit statuses are listed in
[Exit codes](exit-codes.md) and every scenario field in the
[scenario schema](scenario-schema.md). `privsim COMMAND --help` prints the same text as
this page."""

#: The environment variables privsim reads; tests/test_docs_generated.py checks that every
#: PRIVSIM_* variable the package reads is listed here.
ENVIRONMENT = (
    ("PRIVSIM_DATA_DIR", "the folder of the real data sets (checksummed UCI files and others)"),
    (
        "PRIVSIM_MAX_MEMORY",
        "the estimated peak memory above which a run is refused (default 8GiB; `--max-memory`)",
    ),
    (
        "PRIVSIM_MAX_SECONDS",
        "the estimated wall time above which a run is refused (default a day; `--max-time`)",
    ),
    (
        "PRIVSIM_ALLOW_LARGE",
        "`1` goes ahead past every limit but memory, as `--allow-large` (worker processes "
        "inherit it)",
    ),
    ("PRIVSIM_MAX_TASKS", "the most tasks (cells × replications) a study may have (10⁶)"),
    (
        "PRIVSIM_MAX_INPUT_BYTES",
        "the largest text input read: TOML files (scenario, study, base; default 4 MiB) "
        "and JSON files (golden files, `study.json`; default 64 MiB)",
    ),
    ("PRIVSIM_MAX_DATA_BYTES", "the largest data file read (256 MiB)"),
    (
        "PRIVSIM_ROUND_PROCESSES",
        "worker processes of a large secure sum's share round and bulk key agreement "
        "(default the usable cores, at most 4; `1` keeps a run in one process; "
        "`run --workers`)",
    ),
    (
        "PRIVSIM_WORKER_PARENT",
        "set by privsim for its own worker processes (the parent they watch); not for users",
    ),
)


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "{" + ",".join(map(str, action.choices)) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _usage_part(action: argparse.Action) -> str:
    if not action.option_strings:
        name = _metavar(action).upper()
        return f"[{name}]" if action.nargs == "?" else name
    flag = (
        action.option_strings[-1]
        if action.option_strings[0].startswith("--")
        else (action.option_strings[0])
    )
    if isinstance(action, argparse.BooleanOptionalAction):
        text = "|".join(action.option_strings)
    elif action.nargs == 0:
        text = flag
    else:
        text = f"{flag} {_metavar(action)}"
    if action.required:
        return text
    return f"[{text}]" + (" ..." if isinstance(action, argparse._AppendAction) else "")


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _table(actions: list[argparse.Action]) -> list[str]:
    if not actions:
        return ["No arguments.", ""]
    rows = ["| argument | meaning |", "|---|---|"]
    for a in actions:
        if a.option_strings:
            value = ""
            if a.nargs != 0 and not isinstance(a, argparse.BooleanOptionalAction):
                value = f" {_metavar(a)}"
            names = ", ".join(f"`{o}{value}`" for o in a.option_strings)
        else:
            names = f"`{_metavar(a).upper()}`"
        notes = []
        if a.required and a.option_strings:
            notes.append("required")
        if isinstance(a, argparse._AppendAction) and "repeatable" not in (a.help or ""):
            notes.append("repeatable")
        help_text = _cell(a.help or "")
        if notes:
            help_text += f" ({', '.join(notes)})"
        rows.append(f"| {names} | {help_text} |")
    return [*rows, ""]


def render() -> str:
    from privsim.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    page = [
        "# Command line",
        "",
        f"<!-- Generated by {COMMAND} from privsim.cli.build_parser; do not edit. -->",
        "",
        INTRO,
        "",
        "```text",
        f"privsim {' '.join(_usage_part(a) for a in _arguments(parser))} COMMAND ...",
        "```",
        "",
        *_table(_arguments(parser)),
        "| command | what it does |",
        "|---|---|",
        *(f"| [`{name}`](#privsim-{name}) | {_cell(helps[name])} |" for name in sub.choices),
        "",
    ]
    epilogs: list[str] = []
    for name, command in sub.choices.items():
        actions = _arguments(command)
        page += [
            f"## privsim {name}",
            "",
            _cell(helps[name][:1].upper() + helps[name][1:]) + ".",
            "",
            "```text",
            f"privsim {name} {' '.join(_usage_part(a) for a in actions)}".rstrip(),
            "```",
            "",
        ]
        if command.description:
            page += [_cell(command.description), ""]
        page += _table(actions)
        if command.epilog and command.epilog not in epilogs:
            epilogs.append(command.epilog)
    for epilog in epilogs:
        page += [
            "## Exit statuses",
            "",
            "As `privsim run --help`, `privsim check --help` and "
            "`privsim check-protocol --help` print them:",
            "",
            "```text",
            epilog,
            "```",
            "",
        ]
    page += [
        "## Environment variables",
        "",
        "| variable | meaning |",
        "|---|---|",
        *(f"| `{name}` | {_cell(meaning)} |" for name, meaning in ENVIRONMENT),
        "",
    ]
    return finish(page)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(PAGE, render(), COMMAND, argv)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # the privsim of this checkout, not another installed one
    raise SystemExit(main())
