"""The hostile corpus of files and paths (issue 29, sections 1 and 2), beside the corpus
of hostile values (``test_hostile.py``).

Every file privsim reads — a scenario, a study, a study's base, a golden file, a results
directory's ``study.json``, a user's CSV, a stored row — is replaced by a hostile one:
each kind of file (regular, empty, a device, a FIFO, a socket, a directory, a link inside
or outside, a dangling link, a missing path), of sizes past the cap and of nesting depths
around it and far past it, of the wrong shape or not text at all. And every output the
commands write — ``run``, ``sweep``, ``audit`` and ``check --update`` outputs, ``report``
and ``report --html`` — goes to a hostile path: empty, too long, under a plain file,
read-only, a link elsewhere, or a directory holding links that lead out of it.

The real command line runs in-process on each case. It must end with success or a named
error (exit 2, one line, no traceback), never an exception, never a hang (SIGALRM, as in
``test_hostile.py``), and no file outside the output directory may change: a sentinel
directory beside it is compared before and after. The sample is fixed (derandomised);
``PRIVSIM_HOSTILE_FILES_EXAMPLES`` draws more.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from privsim.cli import main
from privsim.inputs import MAX_DATA_BYTES, MAX_INPUT_BYTES, MAX_NESTING, MAX_TOML_BYTES
from privsim.studies.store import DB_NAME, LOCK_NAME
from privsim.studies.sweep import STUDY_FILE
from tests.cli.helpers import scenario_file, study_file
from tests.conftest import make_scenario
from tests.hostile_helpers import Hang, deadline

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs, devices, links")

#: A case taking longer than this is a hang.
HANG_SECONDS = 60
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
VICTIM_TEXT = "the user's own file: privsim must never write it"

CI = settings(
    max_examples=int(os.environ.get("PRIVSIM_HOSTILE_FILES_EXAMPLES", "150")),
    deadline=None,  # a hang is caught by the alarm; wall times vary between machines
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ------------------------------------------------------------------------- the template


class Template:
    """Valid inputs, made once: a scenario, a study, a golden file, a results directory
    (with its row ids), a BLR scenario reading a CSV."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.scenario = scenario_file(root)
        self.scenario_text = self.scenario.read_text()
        self.study_text = study_file(root, replications=1).read_text()
        self.golden = root / "golden.json"
        self.results = root / "results"
        quiet = ["--no-progress"]
        with _quiet():
            assert main(["check", str(self.scenario), "--golden", str(self.golden), "--update", *quiet]) == 0  # fmt: skip
            assert main(["sweep", str(root / "study.toml"), "--out", str(self.results), "--workers", "1", *quiet]) == 0  # fmt: skip
        (self.results / LOCK_NAME).unlink(missing_ok=True)
        db = sqlite3.connect(self.results / DB_NAME)
        self.rows = [r for (r,) in db.execute("SELECT row_id FROM rows ORDER BY row_id")]
        self.row_text = db.execute("SELECT row FROM rows WHERE row_id = ?", (self.rows[0],)).fetchone()[0]  # fmt: skip
        db.close()
        self.csv_text = "a,b,y\n" + "".join(f"{i % 7},{(i * 3) % 5},{i % 11}\n" for i in range(200))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return Template(tmp_path_factory.mktemp("hostile-files-template"))


@contextlib.contextmanager
def _quiet() -> Iterator[io.StringIO]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        yield err


class Workspace:
    """One case's directory: ``cwd`` (the command's working directory, which must stay
    empty), ``outside`` (the sentinel: must not change), ``elsewhere`` (where a link that
    the user gave as the output directory leads), ``in`` (inputs) and outputs."""

    def __init__(self, parent: Path) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ws", dir=parent))
        for name in ("cwd", "outside", "elsewhere", "in"):
            (self.root / name).mkdir()
        self.victim = self.root / "outside" / "victim.txt"
        self.victim.write_text(VICTIM_TEXT)
        (self.root / "outside" / "dir").mkdir()
        (self.root / "outside" / "dir" / "kept.txt").write_text(VICTIM_TEXT)

    def snapshot(self) -> dict[str, Any]:
        """Everything in ``outside`` and ``cwd`` (names, kinds, contents, link targets)."""
        seen: dict[str, Any] = {}
        for top in ("outside", "cwd"):
            for dirpath, dirnames, filenames in os.walk(self.root / top):
                for name in dirnames + filenames:
                    path = Path(dirpath) / name
                    key = str(path.relative_to(self.root))
                    if path.is_symlink():
                        seen[key] = ("link", os.readlink(path))
                    elif path.is_file():
                        seen[key] = ("file", path.read_bytes())
                    else:
                        seen[key] = ("dir", None)
        return seen

    def close(self) -> None:
        for dirpath, dirnames, _ in os.walk(self.root):
            for name in dirnames:
                path = Path(dirpath) / name
                if not path.is_symlink():
                    with contextlib.suppress(OSError):
                        os.chmod(path, 0o755)
        shutil.rmtree(self.root, ignore_errors=True)


def _run(ws: Workspace, argv: list[str]) -> tuple[int, str]:
    """``privsim ARGV`` in-process in ``ws.cwd``: its exit status and stderr. An exception
    (a traceback) or a hang fails the case; so does a write outside."""
    before = ws.snapshot()
    old = os.getcwd()
    os.chdir(ws.root / "cwd")
    try:
        with deadline(HANG_SECONDS), _quiet() as err:
            code = main(argv)
    except Hang as exc:
        raise AssertionError(f"privsim {' '.join(argv)[:300]}: {exc}") from None
    except SystemExit as exc:  # argparse: not expected from any case here
        raise AssertionError(f"privsim {' '.join(argv)[:300]}: exit {exc.code}") from None
    finally:
        os.chdir(old)
    text = err.getvalue()
    assert code in (0, 1, 2, 3, 4), (argv, code, text)
    if code == 2:
        last = text.rstrip("\n").split("\n")[-1]
        assert last.startswith("privsim: error: "), text
        assert "Traceback" not in text, text
    after = ws.snapshot()
    assert after == before, f"privsim {' '.join(argv)[:300]} changed files outside: " + str(
        sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
    )
    return code, text


# ------------------------------------------------------------------------------- reads

#: The file each role reads: its format, and the commands that read it.
ROLES = {
    "scenario": "toml",
    "study": "toml",
    "base": "toml",
    "golden": "json",
    "study.json": "json",
    "csv": "csv",
    "row": "json",
}
KINDS = [
    "regular",
    "link-inside",
    "link-outside",
    "empty",
    "over-cap",
    "device",
    "fifo",
    "socket",
    "directory",
    "dangling-link",
    "missing",
    "too-long",
    "under-a-file",
]
CONTENTS = ["valid", "deep", "deep-keys", "shape", "garbage", "not-utf8"]
DEPTHS = [1, 8, MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1, 200, 985, 5000, 100_000]
CAPS = {"toml": MAX_TOML_BYTES, "json": MAX_INPUT_BYTES, "csv": MAX_DATA_BYTES}


def _nested(fmt: str, depth: int, keys: bool) -> str:
    if fmt == "toml":
        if keys:
            return "a." * depth + "b = 1\n"
        return "x = " + "[" * depth + "]" * depth + "\n"
    if keys:
        return '{"a": ' * depth + "1" + "}" * depth
    return "[" * depth + "]" * depth


def _content(template: Template, role: str, content: str, depth: int, garbage: bytes) -> bytes:
    fmt = ROLES[role]
    if content == "garbage":
        return garbage
    if content == "not-utf8":
        return b"name = '\xff\xfe'\n" if fmt == "toml" else b'{"name": "\xff\xfe"}'
    if fmt == "csv":
        bad = {"deep": "a,b,y\n1,2,3\n1,2,3,4,5\n", "deep-keys": "a,b,y\n", "shape": "a,c\n1,2\n"}
        return (template.csv_text if content == "valid" else bad[content]).encode()
    if content in ("deep", "deep-keys"):
        return _nested(fmt, depth, content == "deep-keys").encode()
    if content == "shape":
        wrong = {
            "scenario": "name = 3\n",
            "study": "name = ['x']\n",
            "base": "population = 3\n",
            "golden": '{"result": [1], "seed": "x"}',
            "study.json": '[{"name": "x"}]',
            "row": json.dumps(
                {**json.loads(template.row_text), "privacy": {"guarantee_met": "yes"}}
            ),
        }
        return wrong[role].encode()
    valid = {
        "scenario": template.scenario_text,
        "study": template.study_text,
        "base": template.scenario_text,
        "golden": template.golden.read_text(),
        "study.json": (template.results / STUDY_FILE).read_text(),
        "row": template.row_text,
    }
    return valid[role].encode()


def _place(ws: Workspace, role: str, kind: str, data: bytes) -> Path:
    """The hostile file of ``kind`` (holding ``data`` when it is one) at ``ws/in/h.*``."""
    fmt = ROLES[role]
    path = ws.root / "in" / f"h.{fmt}"
    if kind in ("regular", "empty"):
        path.write_bytes(data if kind == "regular" else b"")
    elif kind == "over-cap":
        with path.open("wb") as fh:
            fh.truncate(CAPS[fmt] + 1)  # sparse: no disk space
    elif kind == "device":
        return Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        held = socket.socket(socket.AF_UNIX)
        try:
            held.bind(str(path))  # the file stays after the socket is closed
        except OSError:  # a path too long for AF_UNIX: a FIFO instead
            os.mkfifo(path)
        finally:
            held.close()
    elif kind == "directory":
        path.mkdir()
    elif kind == "link-inside":
        (ws.root / "in" / "target").write_bytes(data)
        path.symlink_to(ws.root / "in" / "target")
    elif kind == "link-outside":
        (ws.root / "elsewhere" / "target").write_bytes(data)
        path.symlink_to(ws.root / "elsewhere" / "target")
    elif kind == "dangling-link":
        path.symlink_to(ws.root / "outside" / "nothing")
    elif kind == "too-long":
        return path.with_name("a" * 300 + path.suffix)
    elif kind == "under-a-file":
        (ws.root / "in" / "plain").write_text("a file")
        return ws.root / "in" / "plain" / path.name
    return path


def _read_argv(
    ws: Workspace, template: Template, role: str, path: Path, command: str, results: Path
) -> list[str]:
    out = str(ws.root / "out")
    quiet = ["--no-progress"]
    if role == "scenario":
        if command == "run":
            return ["run", str(path), "--out", out, *quiet]
        if command == "audit":
            return ["audit", str(path), "--trials", "8", "--out", out]
        return ["validate", str(path)]
    if role in ("study", "base"):
        study = path
        if role == "base":
            study = ws.root / "in" / "study.toml"
            study.write_text(
                f'name = "b"\nreplications = 1\nbase = "{path}"\n[grid]\n"privacy.epsilon" = [1.0]\n'
            )
        return ["sweep", str(study), "--out", out, "--workers", "1", *quiet]
    if role == "golden":
        return ["check", str(template.scenario), "--golden", str(path), *quiet]
    if role == "csv":
        scenario = ws.root / "in" / "blr.toml"
        data = make_scenario().to_dict()
        data.update(protocol="blr", population={"clients": 60})
        data["blr"] = {
            "dataset": "csv",
            "csv_path": str(path),
            "features": ["a", "b"],
            "target": "y",
            "test": 20,
            "grid_points": 3,
            "grid_repeats": 2,
        }
        data.pop("dca", None)
        scenario.write_text(tomli_w.dumps(data))
        return ["validate", str(scenario)]
    # study.json and rows: a copy of a real results directory
    if command == "report":
        return ["report", str(results)]
    if command == "sweep":
        return ["sweep", str(template.root / "study.toml"), "--out", str(results), "--workers", "1", *quiet]  # fmt: skip
    return ["replay", template.rows[0], "--out", str(results)]


@st.composite
def read_cases(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(sorted(ROLES)))
    kind = "regular" if role == "row" else draw(st.sampled_from(KINDS))
    commands = {
        "scenario": ["validate", "validate", "run", "audit"],
        "study.json": ["replay", "replay", "sweep", "report"],
        "row": ["replay", "replay", "replay", "report"],
    }
    return {
        "role": role,
        "kind": kind,
        "content": draw(st.sampled_from(CONTENTS)),
        "depth": draw(st.sampled_from(DEPTHS)),
        "garbage": draw(st.binary(max_size=64)),
        "command": draw(st.sampled_from(commands.get(role, ["-"]))),
    }


def _expect_read(case: dict[str, Any], code: int, text: str) -> None:
    kind, content, depth = case["kind"], case["content"], case["depth"]
    refused_kinds = {"empty", "over-cap", "device", "fifo", "socket", "directory", "dangling-link", "missing", "too-long", "under-a-file"}  # fmt: skip
    # an empty TOML file is a table of defaults, valid or not by its fields
    empty_is_named = ROLES[case["role"]] != "toml"
    if kind in refused_kinds - {"empty"} or (kind == "empty" and empty_is_named):
        if case["role"] == "study.json" and kind in ("missing", "dangling-link"):
            return  # a results directory without a study.json: report and sweep go on
        assert code == 2, (case, code, text)
    readable = kind in ("regular", "link-inside", "link-outside")
    if readable and content == "valid":
        assert code != 2, (case, text)  # the guard refuses nothing it should read
    deep = content in ("deep", "deep-keys") and depth > MAX_NESTING
    if readable and deep and ROLES[case["role"]] != "csv":
        assert code == 2 and ("too deeply" in text or "nested" in text), (case, text)


@CI
@given(read_cases())
def test_hostile_input_files_are_read_or_named(template, case):
    ws = Workspace(template.root)
    try:
        role = case["role"]
        data = _content(template, role, case["content"], case["depth"], case["garbage"])
        results = ws.root / "results"
        if role == "study.json" and case["kind"] == "too-long":
            results = ws.root / ("a" * 300)  # the results directory's own path
        elif role == "study.json" and case["kind"] == "under-a-file":
            (ws.root / "in" / "plain").write_text("a file")
            results = ws.root / "in" / "plain" / "results"
        elif role in ("study.json", "row"):
            shutil.copytree(template.results, results, symlinks=True)
        if role == "row":
            db = sqlite3.connect(ws.root / "results" / DB_NAME)
            db.execute(
                "UPDATE rows SET row = ? WHERE row_id = ?",
                (data.decode("utf-8", "replace"), template.rows[0]),
            )
            db.commit()
            db.close()
            path = ws.root / "results" / DB_NAME
        elif role == "study.json" and case["kind"] in ("too-long", "under-a-file"):
            path = results / STUDY_FILE
        elif role == "study.json":
            target = ws.root / "results" / STUDY_FILE
            target.unlink()
            path = _place(ws, role, case["kind"], data)
            if case["kind"] != "missing":
                (target.symlink_to(path) if case["kind"] == "device" else path.rename(target))
            path = target
        else:
            path = _place(ws, role, case["kind"], data)
        argv = _read_argv(ws, template, role, path, case["command"], results)
        code, text = _run(ws, argv)
        event(f"read {role} {case['kind']}: exit {code}")
        _expect_read(case, code, text)
    finally:
        ws.close()


# ------------------------------------------------------------------------------ writes

COMMANDS = ["run", "sweep", "audit", "check-update", "report", "report-html"]
PATHS = [
    "fresh",
    "nested-fresh",
    "existing",
    "empty",
    "too-long",
    "under-a-file",
    "read-only",
    "link-elsewhere",
]
#: Links a hostile co-user may plant in an existing output directory, per command:
#: (name, where it leads: the victim file, the outside directory, or nothing outside).
PLANTS = {
    "run": [("{result}", "victim"), ("{result}", "fifo")],
    "audit": [("{audit}", "victim")],
    "sweep": [
        (LOCK_NAME, "victim"),
        (LOCK_NAME, "fifo"),
        (STUDY_FILE, "victim"),
        (DB_NAME, "nothing"),
        (DB_NAME + "-wal", "victim"),
    ],
    "check-update": [("golden.json", "victim")],
    "report": [
        ("report", "dir"),
        ("report/summary.md", "victim"),
        ("report/summary.md", "fifo"),
        ("report/privacy_achieved_epsilon_vs_privacy_epsilon.png", "victim"),
    ],
    "report-html": [
        ("report", "dir"),
        ("report/index.html", "victim"),
        ("report/index.html.partial", "victim"),
    ],
}


@st.composite
def write_cases(draw: st.DrawFn) -> dict[str, Any]:
    command = draw(st.sampled_from(COMMANDS))
    return {
        "command": command,
        "path": draw(st.sampled_from(PATHS)),
        "plants": sorted(draw(st.sets(st.sampled_from(PLANTS[command])))),
    }


def _output_dir(ws: Workspace, template: Template, case: dict[str, Any]) -> str:
    kind, report = case["path"], case["command"].startswith("report")
    out = ws.root / "out"
    if kind == "empty":
        return ""
    if kind == "too-long":
        return str(ws.root / ("a" * 300))
    if kind == "under-a-file":
        (ws.root / "plain").write_text("a file")
        return str(ws.root / "plain" / "out")
    if kind == "nested-fresh":
        out = ws.root / "a" / "b" / "out"
    if kind == "link-elsewhere":
        (ws.root / "out").symlink_to(ws.root / "elsewhere", target_is_directory=True)
        out = ws.root / "elsewhere"
    if report:
        if out.exists():
            out.rmdir()
        shutil.copytree(template.results, out, symlinks=True)
        if kind == "link-elsewhere":
            out = ws.root / "out"
    elif kind in ("existing", "read-only", "link-elsewhere"):
        out.mkdir(exist_ok=True)
    return str(out)


def _plant(ws: Workspace, template: Template, out: Path, case: dict[str, Any]) -> None:
    from privsim.overrides import scenario_hash
    from privsim.scenarios import load_scenario

    scenario = load_scenario(template.scenario)
    names = {
        "{result}": f"{scenario.name}-{scenario_hash(scenario)}-seed{scenario.seed}.json",
        "{audit}": f"audit-{scenario.name}-seed{scenario.seed}-trials8.json",
    }
    leads = {
        "victim": ws.victim,
        "dir": ws.root / "outside" / "dir",
        "nothing": ws.root / "outside" / "made.sqlite",
    }
    for name, where in case["plants"]:
        link = out / names.get(name, name)
        if link.parent != out and link.parent.is_symlink():
            continue  # report/x planted when report/ itself is a link: that one wins
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            shutil.rmtree(link) if link.is_dir() and not link.is_symlink() else link.unlink()
        if where == "fifo":  # a FIFO in the file's place: replaced, or refused; never a hang
            os.mkfifo(link)
            continue
        link.symlink_to(leads[where], target_is_directory=where == "dir")


def _write_argv(template: Template, command: str, out: str) -> list[str]:
    quiet = ["--no-progress"]
    if command == "run":
        return ["run", str(template.scenario), "--out", out, *quiet]
    if command == "audit":
        return ["audit", str(template.scenario), "--trials", "8", "--out", out]
    if command == "sweep":
        return ["sweep", str(template.root / "study.toml"), "--out", out, "--workers", "1", *quiet]  # fmt: skip
    if command == "check-update":
        golden = str(Path(out) / "golden.json") if out else ""
        return ["check", str(template.scenario), "--golden", golden, "--update", *quiet]
    return ["report", out, *(["--html"] if command == "report-html" else [])]


@settings(CI, max_examples=max(20, CI.max_examples * 3 // 5))
@given(write_cases())
def test_hostile_output_paths_are_written_inside_or_named(template, case):
    ws = Workspace(template.root)
    try:
        out = _output_dir(ws, template, case)
        if out and case["plants"] and case["path"] in ("existing", "read-only", "link-elsewhere"):
            _plant(ws, template, Path(out), case)
        if case["path"] == "read-only":
            os.chmod(out, 0o555)
        code, text = _run(ws, _write_argv(template, case["command"], out))
        event(f"write {case['command']} to {case['path']}: exit {code}")
        if case["path"] in ("empty", "too-long", "under-a-file"):
            assert code == 2, (case, text)
        if case["path"] == "read-only" and not AS_ROOT:
            assert code == 2, (case, text)
        leads_out = {p for p in case["plants"] if p[1] in ("dir", "nothing")}
        leads_out |= {
            p for p in case["plants"] if p[0] in (LOCK_NAME, DB_NAME + "-wal") and p[1] != "fifo"
        }
        if leads_out and case["path"] in ("existing", "link-elsewhere") and code != 2:
            raise AssertionError(f"{case}: a link out of the output directory was accepted")
        if not case["plants"] and case["path"] in ("fresh", "nested-fresh", "existing"):
            assert code in (0, 3, 4), (case, text)  # nothing over-refused
    finally:
        ws.close()


def test_the_sentinel_sees_a_write_outside(template):
    """The check of the corpus itself: a write through a link is seen."""
    ws = Workspace(template.root)
    try:
        before = ws.snapshot()
        ws.victim.write_text("overwritten")
        assert ws.snapshot() != before
    finally:
        ws.close()
