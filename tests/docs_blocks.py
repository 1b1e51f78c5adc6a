"""The code blocks of README.md and docs/**/*.md, found and run as a reader would run them.

A page's blocks run in order, in one working folder of their own (a temporary folder with
copies of the repository's scenarios, studies and examples, so ``privsim/scenarios/...``
paths resolve), and share what a reader's terminal and interpreter would share:

- ```` ```python ```` blocks execute in one namespace per page;
- ```` ```bash ````, ```` ```sh ```` and ```` ```console ```` blocks (and indented or
  unlabelled blocks that start with ``privsim `` or ``python ``) run in bash through the
  real command line; a page's exported variables and working folder carry over from one
  block to the next. In a console block only the ``$ `` lines are commands;
- ```` ```toml ```` blocks are parsed, and a scenario or a study is validated as
  ``privsim validate`` would.

A block is steered by HTML comments right before it (invisible on the rendered page),
one directive each or several separated by ``;``:

``<!-- docs-test: skip REASON -->``
    never run (a cluster, the network, an install); the reason is required.
``<!-- docs-test: slow -->``
    run only with ``-m slow``.
``<!-- docs-test: set NAME=VALUE -->``
    run with a smaller size: ``--NAME X`` becomes ``--NAME VALUE`` in a command,
    ``NAME=X`` in a Python call and ``NAME = X`` in TOML.
``<!-- docs-test: replace OLD => NEW -->``
    run with the text OLD replaced by NEW.
``<!-- docs-test: exit N -->``
    the block's commands end with exit status N (not 0).
A block titled with a file of the repository (```` ```python title="examples/x/y.py" ````)
is not run: it must quote that file (a ``...`` line stands for lines left out).

``<!-- docs-test: file PATH -->``
    write the block to PATH in the page's folder instead of running it (a test file, a
    study); a TOML scenario or study written so is validated too.
``<!-- docs-test: merge NAME -->``
    a TOML fragment: merged into the built-in scenario NAME and validated.
``<!-- docs-test: output -->``
    the output the page shows must be what the block prints, line by line in order, every
    number a wildcard (times and the last digits differ between machines; a ``...`` line
    stands for any lines): for a console block the lines after each ``$`` command, for a
    Python block the ```` ```text ```` block right after it.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import tomllib
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent

SHELL_LANGS = {"bash", "sh", "shell", "console", "shell-session"}
PYTHON_LANGS = {"python", "py"}
TOML_LANGS = {"toml"}
#: Unlabelled or indented blocks that are commands.
COMMAND_STARTS = ("privsim ", "python ")
DIRECTIVES = {"skip", "slow", "set", "replace", "exit", "file", "merge", "output"}
#: Commands a docs test must never run unmarked: they install, fetch or serve.
NEVER_UNMARKED = (
    (re.compile(r"\bpip3? install\b"), "installs packages"),
    (re.compile(r"\bpython3? -m venv\b"), "creates a virtual environment"),
    (re.compile(r"\bgit clone\b"), "clones a repository"),
    (re.compile(r"\bdask (scheduler|worker)\b"), "starts a Dask server"),
)
MARKER = re.compile(r"<!--\s*docs-test:(.*?)-->", re.S)
#: ```python title="examples/x/y.py": a block that quotes a file of the repository.
TITLE = re.compile(r'\btitle="([^"]+)"')
#: A line of a quoted block that stands for lines left out.
ELISION = re.compile(r"^\s*(#\s*)?(\.\.\.|…)\s*$")
#: What a page's folder holds: the files a reader of a clone has at hand.
COPIED = ("privsim/scenarios", "privsim/studies", "examples")
#: Seconds one block may take: a block that needs longer is marked slow or given smaller
#: sizes, so the default run stays short.
TIMEOUT = 120
SLOW_TIMEOUT = 1800


class DocsBlockError(AssertionError):
    """A block that did not do what its page says (the message quotes the page and line)."""


@dataclass(frozen=True)
class Block:
    """One code block of a page, with the directives before it."""

    page: str  # relative to the repository
    line: int  # 1-based line of the opening fence
    lang: str  # "python", "shell", "toml" or "other"
    console: bool
    source: str
    directives: tuple[tuple[str, str], ...] = ()
    problem: str = ""  # a malformed marker: the block's test fails saying so
    shown: str | None = None  # a ```text block right after it: the output the page shows
    title: str = ""  # ```python title="PATH": the block quotes the repository's file PATH

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def directive(self, name: str) -> str | None:
        for key, value in self.directives:
            if key == name:
                return value
        return None

    def all(self, name: str) -> list[str]:
        return [value for key, value in self.directives if key == name]

    @property
    def skip_reason(self) -> str | None:
        return self.directive("skip")

    @property
    def slow(self) -> bool:
        return self.directive("slow") is not None

    @property
    def executable(self) -> bool:
        return self.lang in {"python", "shell", "toml"} or bool(self.title)


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/, in a stable order."""
    found = [ROOT / "README.md"] if (ROOT / "README.md").is_file() else []
    found += sorted((ROOT / "docs").rglob("*.md"))
    return found


def _directives(html: str) -> tuple[list[tuple[str, str]], str]:
    out: list[tuple[str, str]] = []
    for body in MARKER.findall(html):
        # Directives are separated by ";"; a ";" followed by no directive's name belongs
        # to the text before it (a skip's reason may hold one).
        parts: list[str] = []
        for piece in body.split(";"):
            if parts and piece.strip().partition(" ")[0] not in DIRECTIVES:
                parts[-1] += ";" + piece
            else:
                parts.append(piece)
        for part in parts:
            part = part.strip()
            if not part:
                continue
            name, _, value = part.partition(" ")
            value = value.strip()
            if name not in DIRECTIVES:
                return out, f"unknown docs-test directive {name!r} (known: {sorted(DIRECTIVES)})"
            if name == "skip" and not value:
                return out, "a docs-test skip needs its reason: <!-- docs-test: skip REASON -->"
            if name in {"set", "replace", "exit", "file", "merge"} and not value:
                return out, f"docs-test {name} needs a value"
            if name == "set" and "=" not in value:
                return out, f"docs-test set takes NAME=VALUE, got {value!r}"
            if name == "replace" and "=>" not in value:
                return out, f"docs-test replace takes OLD => NEW, got {value!r}"
            out.append((name, value))
    return out, ""


def _kind(info: str, content: str) -> tuple[str, bool]:
    lang = info.strip().split()[0].lower() if info.strip() else ""
    if lang in PYTHON_LANGS:
        return "python", False
    if lang in SHELL_LANGS:
        return "shell", lang in {"console", "shell-session"}
    if lang in TOML_LANGS:
        return "toml", False
    if not lang and content.lstrip().startswith(COMMAND_STARTS):
        return "shell", False
    return "other", False


def blocks_of(path: Path) -> list[Block]:
    """The code blocks of one Markdown page, with their directives."""
    return blocks_in(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())


def blocks_in(text: str, page: str) -> list[Block]:
    """The code blocks of Markdown ``text`` (the page ``page``), with their directives."""
    tokens = MarkdownIt("commonmark").parse(text)
    out: list[Block] = []
    previous = None
    for token in tokens:
        if (
            token.type == "fence"
            and token.info.strip() == "text"
            and out
            and previous is not None
            and previous.type in {"fence", "code_block"}
            and previous.map is not None
            and out[-1].line == previous.map[0] + 1
        ):
            out[-1] = dataclasses.replace(out[-1], shown=token.content)
        if token.type in {"fence", "code_block"} and token.map is not None:
            info = token.info if token.type == "fence" else ""
            lang, console = _kind(info, token.content)
            titled = TITLE.search(info)
            directives: list[tuple[str, str]] = []
            problem = ""
            if previous is not None and previous.type == "html_block":
                directives, problem = _directives(previous.content)
            out.append(
                Block(
                    page=page,
                    line=token.map[0] + 1,
                    lang=lang,
                    console=console,
                    source=token.content,
                    directives=tuple(directives),
                    problem=problem,
                    title=titled.group(1) if titled else "",
                )
            )
        if not (token.type.endswith("_open") or token.type.endswith("_close")):
            previous = token
    return out


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks_of(path)]


# --- substitutions -------------------------------------------------------------------


def substituted(block: Block) -> str:
    """The block's text with its ``set`` and ``replace`` directives applied."""
    text = block.source
    for value in block.all("replace"):
        old, _, new = (s.strip() for s in value.partition("=>"))
        if old not in text:
            raise DocsBlockError(f"{block.id}: docs-test replace: {old!r} is not in the block")
        text = text.replace(old, new)
    for value in block.all("set"):
        name, _, new = (s.strip() for s in value.partition("="))
        if block.lang == "shell":
            pattern = re.compile(rf"(--{re.escape(name)}(?:=|\s+))(\S+)")
        elif block.lang == "python":
            pattern = re.compile(rf"(\b{re.escape(name)}\s*=\s*)([^,)\s]+)")
        else:
            pattern = re.compile(rf"(?m)(^\s*\"?{re.escape(name)}\"?\s*=\s*)(.+)$")
        text, count = pattern.subn(lambda m, new=new: m.group(1) + new, text)
        if count == 0:
            raise DocsBlockError(f"{block.id}: docs-test set: no {name} in the block to set")
    return text


# --- commands ------------------------------------------------------------------------


def console_commands(text: str) -> list[tuple[str, list[str]]]:
    """``$ `` commands of a console block, each with the output lines shown after it."""
    commands: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command += "\n" + lines[i].removeprefix("> ")
            commands.append((command, []))
        elif commands:
            commands[-1][1].append(line)
        i += 1
    return commands


def _normal(line: str) -> str:
    """A line of output as compared: every number one token, an absolute path's folders
    one token, spaces collapsed."""
    line = re.sub(r"[-+]?(\d[\d,]*\.?\d*|\.\d+)([eE][-+]?\d+)?", "#", line)
    line = re.sub(r"[0-9a-f]{8}(?=-seed)", "#", line)  # a result file's scenario hash
    line = re.sub(r"(?<![\w.])/[^\s:'\"]*/", "/.../", line)  # a folder: the reader's own
    return " ".join(line.split())


def match_output(block: Block, expected: list[str], actual: str) -> None:
    """Every non-blank line shown must appear in the actual output, in order, every
    number a wildcard."""
    got = [_normal(line) for line in actual.splitlines() if line.strip()]
    at = 0
    for line in expected:
        want = _normal(line)
        if not want or want == "...":
            continue
        while at < len(got) and got[at] != want:
            at += 1
        if at == len(got):
            raise DocsBlockError(
                f"{block.id}: the output shown has a line the block does not print "
                f"(numbers aside):\n  shown: {line}\nthe command printed:\n"
                + textwrap.indent(actual, "  ")
            )
        at += 1


@dataclass
class PageState:
    """What a page's blocks share: its folder, the Python namespace, the shell's state."""

    page: str
    folder: Path
    state: Path  # the shell's exported variables and working folder, between blocks
    namespace: dict[str, Any] = field(default_factory=dict)
    done: int = 0  # blocks of the page handled so far (run, skipped or failed)

    @classmethod
    def create(cls, page: str, base: Path) -> PageState:
        folder = base / "work"
        folder.mkdir(parents=True)
        for name in COPIED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(
                    source,
                    folder / name,
                    ignore=shutil.ignore_patterns("__pycache__", "*.py", "*.pyc", "*.egg-info")
                    if name.startswith("privsim/")
                    else shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build"),
                )
        state = base / "state"
        state.mkdir()
        return cls(page=page, folder=folder, state=state, namespace={"__name__": "__main__"})


def environment() -> dict[str, str]:
    """The environment of a page's commands: this interpreter's scripts first on PATH,
    no progress output, plots off-screen, and the working folder kept off ``sys.path``
    (its ``privsim/`` folder of copied scenarios must not shadow the package)."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["PYTHONSAFEPATH"] = "1"
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def refuse_unmarked(block: Block, text: str) -> None:
    for pattern, what in NEVER_UNMARKED:
        if pattern.search(text):
            raise DocsBlockError(
                f"{block.id}: this block {what}; a docs test does not run it: put "
                "<!-- docs-test: skip REASON --> before it (or split the command out)"
            )


def run_shell(block: Block, state: PageState) -> str:
    text = substituted(block)
    refuse_unmarked(block, text)
    expected_exit = int(block.directive("exit") or 0)
    if block.console:
        commands = console_commands(text)
        if not commands:
            raise DocsBlockError(f"{block.id}: a console block without a '$ ' command")
        body = "\n".join(command for command, _ in commands)
    else:
        commands = []
        body = text
    env_file, cwd_file = state.state / "env.sh", state.state / "cwd"
    prelude = [
        "set -o pipefail" + ("" if block.directive("exit") else "; set -e"),
        f"[ -f {shlex.quote(str(env_file))} ] && . {shlex.quote(str(env_file))}",
        f'[ -f {shlex.quote(str(cwd_file))} ] && cd "$(cat {shlex.quote(str(cwd_file))})"',
        "__docs_save() { __rc=$?; export -p > "
        + shlex.quote(str(env_file))
        + "; pwd > "
        + shlex.quote(str(cwd_file))
        + "; exit $__rc; }",
        "trap __docs_save EXIT",
    ]
    timeout = SLOW_TIMEOUT if block.slow else TIMEOUT
    script = state.state / f"block-{block.line}.sh"
    script.write_text("\n".join(prelude) + "\n" + body + "\n")
    try:
        done = subprocess.run(
            ["bash", str(script)],
            cwd=state.folder,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a timeout ends the block's whole process group
        )
    except subprocess.TimeoutExpired as exc:
        raise DocsBlockError(
            f"{block.id}: still running after {timeout} s; mark it "
            "<!-- docs-test: slow --> or run it smaller (docs-test: set / replace)"
        ) from exc
    output = done.stdout + done.stderr
    if done.returncode != expected_exit:
        raise DocsBlockError(
            f"{block.id}: exit status {done.returncode}, the page expects {expected_exit}\n"
            f"--- the block\n{text}--- what it printed\n{output}"
        )
    if block.directive("output") is not None:
        if not block.console:
            raise DocsBlockError(f"{block.id}: docs-test output is for console blocks")
        expected = [line for _, shown in commands for line in shown]
        match_output(block, expected, done.stdout + done.stderr)
    return output


def _too_long(signum: int, frame: Any) -> None:
    raise TimeoutError("the block ran past its time limit")


def run_python(block: Block, state: PageState) -> None:
    text = substituted(block)
    code = compile(text, f"{block.page}:{block.line}", "exec")
    here = Path.cwd()
    os.chdir(state.folder)
    previous = signal.signal(signal.SIGALRM, _too_long)
    signal.alarm(SLOW_TIMEOUT if block.slow else TIMEOUT)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(code, state.namespace)
    except Exception as exc:
        raise DocsBlockError(
            f"{block.id}: the block raised {type(exc).__name__}: {exc}\n"
            + "".join(traceback.format_exception(exc)[-6:])
        ) from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(here)
        sys.stdout.write(printed.getvalue())  # shown by pytest on a failure
    if block.directive("output") is not None:
        if block.shown is None:
            raise DocsBlockError(f"{block.id}: docs-test output, but no ```text block follows")
        match_output(block, block.shown.splitlines(), printed.getvalue())


def _merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _looks_like(data: dict[str, Any]) -> str:
    if "grid" in data or "cases" in data or "base" in data:
        return "study"
    if "protocol" in data or "population" in data or "privacy" in data:
        return "scenario"
    return "other"


def check_toml(block: Block, state: PageState, path: Path | None = None) -> str:
    """Parse a TOML block; validate it when it is a scenario or a study. Returns what it was."""
    import tomli_w

    import privsim
    from privsim.runs import validate
    from privsim.scenarios.loader import builtin_scenario_path, load_scenario

    text = substituted(block)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DocsBlockError(f"{block.id}: not valid TOML: {exc}") from None
    merge = block.directive("merge")
    if merge:
        base_path = state.folder / merge
        if not base_path.is_file():
            base_path = builtin_scenario_path(merge)
        with open(base_path, "rb") as handle:
            data = _merge(tomllib.load(handle), data)
    kind = "scenario" if merge else _looks_like(data)
    if kind == "other":
        return "toml"
    here = Path.cwd()
    os.chdir(state.folder)
    try:
        target = path
        if target is None or merge:
            target = state.folder / f".docs-test-{block.line}.toml"
            target.write_text(tomli_w.dumps(data) if merge else text)
        try:
            if kind == "study":
                privsim.load_study(target)
            else:
                validate(load_scenario(target))
        except Exception as exc:
            raise DocsBlockError(
                f"{block.id}: this {kind} does not validate: {type(exc).__name__}: {exc}"
            ) from None
        finally:
            if target != path:
                target.unlink()
    finally:
        os.chdir(here)
    return kind


def check_quote(block: Block) -> None:
    """A block titled with a repository file's path must quote that file: its lines, in
    order and contiguous (a ``...`` line stands for lines left out), after trailing
    whitespace is stripped."""
    path = ROOT / block.title
    if not path.is_file():
        raise DocsBlockError(f"{block.id}: the block quotes {block.title}, which does not exist")
    lines = [line.rstrip() for line in path.read_text(encoding="utf-8").splitlines()]
    pieces: list[list[str]] = [[]]
    for line in block.source.splitlines():
        if ELISION.match(line):
            pieces.append([])
        else:
            pieces[-1].append(line.rstrip())
    at = 0
    for piece in (p for p in pieces if p):
        found = next(
            (
                i
                for i in range(at, len(lines) - len(piece) + 1)
                if lines[i : i + len(piece)] == piece
            ),
            None,
        )
        if found is None:
            first = piece[0]
            raise DocsBlockError(
                f"{block.id}: the block is not what {block.title} holds (from the line "
                f"{first!r} on, or those lines are out of order); copy it from the file"
            )
        at = found + len(piece)


def run_block(block: Block, state: PageState) -> str:
    """Run one block in its page's state; what ran ("python", "shell", "toml", "file",
    "quote")."""
    if block.problem:
        raise DocsBlockError(f"{block.id}: {block.problem}")
    if block.title and not block.directive("file"):
        check_quote(block)
        return "quote"
    target = block.directive("file")
    if target:
        path = state.folder / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(substituted(block))
        if block.lang == "toml":
            check_toml(block, state, path)
        return "file"
    if block.lang == "python":
        run_python(block, state)
    elif block.lang == "shell":
        run_shell(block, state)
    elif block.lang == "toml":
        check_toml(block, state)
    return block.lang


@dataclass
class Tally:
    """What the docs test did, for the session's summary line."""

    ran: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    slow_ran: set[str] = field(default_factory=set)
    skipped: int = 0  # blocks whose page marks them skip
    slow: int = 0  # blocks marked slow

    def line(self) -> str:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.ran.items()))
        total = sum(self.ran.values())
        return (
            f"docs: {total} code blocks executed ({kinds or 'none'}), {len(self.failed)} "
            f"failed; {self.skipped} marked skip; {self.slow - len(self.slow_ran)} of "
            f"{self.slow} slow blocks not run (-m slow runs them)"
        )


#: Where a session keeps its :class:`Tally` (``config.stash``), read by the summary hook.
TALLY_KEY = pytest.StashKey[Tally]()
