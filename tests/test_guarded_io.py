"""The guarded reader (:mod:`privsim.inputs`) and writer (:mod:`privsim.outputs`), class
by class (issue 29, sections 1 and 2): each kind of file read, the size and depth caps,
the shapes, and each refusal of the writer, symbolic links included; then the call sites
through the real command line."""

from __future__ import annotations

import errno
import json
import os
import socket
import sqlite3
import stat
import sys
from pathlib import Path

import pytest

from privsim import inputs, outputs
from privsim.cli import EXIT_INVALID, main
from privsim.golden import GoldenError, read_golden
from privsim.inputs import (
    MAX_NESTING,
    InputFileError,
    InputKindError,
    InputMissingError,
    InputShapeError,
    InputSyntaxError,
    InputTooDeepError,
    InputTooLargeError,
    InputUnreadableError,
    Shape,
    parse_json,
    parse_toml,
    read_input_bytes,
    read_json,
    read_toml,
)
from privsim.outputs import (
    OutputError,
    UnsafePathError,
    check_output_folder,
    make_folder,
    open_lock,
    output_folder,
    refuse_links_out,
    write_bytes,
    write_text,
)
from privsim.studies.store import DB_NAME, LOCK_NAME, ResultStore, lock_directory
from privsim.studies.sweep import STUDY_FILE, read_study_file
from tests.cli.helpers import scenario_file, study_file

posix = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and devices")
as_root = hasattr(os, "geteuid") and os.geteuid() == 0


def _deep_json(levels: int, open_: str = "[", close: str = "]") -> str:
    return open_ * levels + close * levels


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.startswith("privsim: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


# ------------------------------------------------------------------------ the reader


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('{"name": "x"}')
    (tmp_path / "link.json").symlink_to(path)
    assert read_json(path, "study description") == {"name": "x"}
    assert read_json(tmp_path / "link.json", "study description") == {"name": "x"}


@posix
@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("directory", "a directory"),
        ("device", "a character device"),
        ("fifo", "a FIFO (named pipe)"),
        ("socket", "a socket"),
    ],
)
def test_a_special_file_is_named_without_reading_it(kind, words, tmp_path):
    path = tmp_path / "x.json"
    held = None
    if kind == "directory":
        path.mkdir()
    elif kind == "device":
        path = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)  # no writer: opened without waiting for one
    else:
        held = socket.socket(socket.AF_UNIX)
        try:
            held.bind(str(path))
        except OSError as exc:  # a path too long for AF_UNIX
            pytest.skip(f"cannot bind a socket here: {exc}")
    try:
        with pytest.raises(InputKindError) as info:
            read_json(path, "golden file")
    finally:
        if held is not None:
            held.close()
    assert f"golden file '{path}' is {words}, not a readable text file" in str(info.value)
    assert info.value.reason == words and "not a device, FIFO or directory" in info.value.fix


def test_a_missing_or_unreadable_path_is_named(tmp_path):
    with pytest.raises(InputMissingError) as info:
        read_toml(tmp_path / "none.toml", "scenario file")
    assert isinstance(info.value, FileNotFoundError) and "does not exist" in str(info.value)
    with pytest.raises(InputUnreadableError, match="File name too long"):
        read_toml(tmp_path / ("a" * 300), "scenario file")
    with pytest.raises(InputUnreadableError, match="cannot be read"):
        read_toml("a\x00b", "scenario file")
    assert inputs.input_exists(tmp_path / "none", "x") is False
    with pytest.raises(InputUnreadableError):
        inputs.input_exists(tmp_path / ("a" * 300), "x")


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def test_a_file_over_the_cap_is_refused_before_reading_with_the_cap_and_the_override(
    tmp_path, monkeypatch
):
    big = _sparse(tmp_path / "big.toml", inputs.MAX_TOML_BYTES + 1)
    with pytest.raises(InputTooLargeError) as info:
        read_toml(big, "scenario file")
    text = str(info.value)
    assert "more than the 4 MiB privsim reads as a scenario file" in text
    assert "raise the limit with PRIVSIM_MAX_INPUT_BYTES=BYTES" in text
    monkeypatch.setenv(inputs.MAX_INPUT_ENV, "100")
    small = tmp_path / "s.json"
    small.write_text('{"a": "' + "x" * 200 + '"}')
    with pytest.raises(InputTooLargeError, match="more than the 100 bytes"):
        read_json(small, "golden file")
    for bad in ("lots", "-1", "inf", "1e400", "0", "1.5"):
        monkeypatch.setenv(inputs.MAX_INPUT_ENV, bad)
        with pytest.raises(InputFileError, match="is not a number of bytes"):
            read_json(small, "golden file")
    monkeypatch.setenv(inputs.MAX_DATA_ENV, "10")
    with pytest.raises(InputTooLargeError, match="PRIVSIM_MAX_DATA_BYTES"):
        read_input_bytes(
            small,
            "CSV file",
            limit=inputs.input_limit(10, inputs.MAX_DATA_ENV),
            env=inputs.MAX_DATA_ENV,
        )


@pytest.mark.parametrize("levels", [MAX_NESTING + 1, 985, 100_000])
def test_json_nested_past_the_cap_is_refused_without_recursion(levels):
    for text in (_deep_json(levels), '{"a":' * levels + "1" + "}" * levels):
        with pytest.raises(InputTooDeepError) as info:
            parse_json(text, "golden file", source="g.json")
        assert f"more than {MAX_NESTING} levels" in str(info.value)


def test_json_at_the_cap_is_read_and_brackets_in_strings_do_not_count():
    assert parse_json(_deep_json(MAX_NESTING), "x") is not None
    text = json.dumps({"a": "[" * 1000, "b": "]" * 1000 + '"\\', "c": [[1]]})
    assert parse_json(text, "x")["c"] == [[1]]
    # closing brackets in a string cannot hide an opening run after it
    hidden = '["' + "]" * 500 + '", ' + _deep_json(MAX_NESTING + 5) + "]"
    with pytest.raises(InputTooDeepError):
        parse_json(hidden, "x")


@pytest.mark.parametrize(
    "text",
    [
        "x = " + _deep_json(995),  # arrays
        "x = " + "{a = " * 995 + "1" + "}" * 995,  # inline tables
        "a." * 995 + "b = 1",  # dotted keys (tomllib: time and memory quadratic in them)
        "[" + ".".join(["t"] * 995) + "]\nv = 1",  # a table header
        "[" + ".".join(["t"] * 40) + "]\n" + ".".join(["u"] * 40) + " = 1",  # both together
    ],
    ids=["arrays", "inline-tables", "dotted-keys", "header", "header+key"],
)
def test_toml_nested_past_the_cap_is_refused(text):
    with pytest.raises(InputTooDeepError, match="nests lists or tables too deeply"):
        parse_toml(text, "base scenario file", source="base.toml")


def test_toml_strings_comments_and_floats_do_not_count_as_nesting():
    text = (
        'a = "' + "[" * 200 + '"\n'
        "b = '" + "{" * 200 + "'\n"
        'c = """\n' + "[" * 200 + '\\"""\n"""\n'
        "d = '''" + "]" * 200 + "'''\n"
        "# " + "[" * 200 + "\n"
        "e = [" + ", ".join(["1.5"] * 300) + "]\n"
        '"f.g.h" = 1\n'
    )
    data = parse_toml(text, "study file")
    assert len(data["e"]) == 300 and data["f.g.h"] == 1 and data["a"] == "[" * 200


def test_syntax_and_encoding_errors_are_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a": \xff}')
    with pytest.raises(InputSyntaxError, match="not UTF-8 text: undecodable byte at offset 6"):
        read_json(bad, "golden file")
    with pytest.raises(InputSyntaxError, match="is not valid JSON"):
        parse_json("{", "golden file")
    with pytest.raises(InputSyntaxError, match="is not valid TOML"):
        parse_toml("a = ", "scenario file")
    with pytest.raises(InputSyntaxError, match="is not valid JSON"):
        parse_json("1" * 5000, "golden file")  # past Python's 4300 digits


def test_a_shape_names_the_field():
    shape = Shape(
        top=dict,
        required={"name": str, "seed": int},
        optional={"ratio": float, "m.*.flag": (bool, type(None))},
    )
    good = {"name": "x", "seed": 1, "ratio": 2, "m": {"a": {"flag": None}, "b": {}}}
    inputs.check_shape(good, shape, "study description", "s.json")
    cases = [
        ([1], "", "a list, not an object"),
        ("x", "", "a string, not an object"),
        ({"seed": 1}, "name", "has no field 'name'"),
        ({"name": "x", "seed": True}, "seed", "field 'seed' is a boolean, not an integer"),
        ({"name": "x", "seed": 1, "ratio": "1"}, "ratio", "is a string, not a number"),
        ({"name": "x", "seed": 1, "m": {"z": {"flag": "yes"}}}, "m.z.flag", "a string"),
    ]
    for data, field, words in cases:
        with pytest.raises(InputShapeError) as info:
            inputs.check_shape(data, shape, "study description", "s.json")
        assert info.value.field == field and words in str(info.value), str(info.value)


# ------------------------------------------------------------------------ the writer


def test_an_empty_path_is_refused(tmp_path):
    for call in (
        lambda: output_folder(""),
        lambda: check_output_folder(""),
        lambda: write_bytes("", b"x"),
        lambda: write_bytes("a.json", b"x", within=""),
    ):
        with pytest.raises(OutputError, match="is an empty path"):
            call()


def test_an_output_under_a_plain_file_or_with_a_long_name_is_named(tmp_path):
    (tmp_path / "plain").write_text("mine")
    with pytest.raises(OutputError, match=r"'plain' is a file, not a directory|Not a directory"):
        write_bytes("r.json", b"x", within=tmp_path / "plain" / "out")
    with pytest.raises(OutputError, match="a part of its path is a file"):
        output_folder(tmp_path / "plain" / "out")
    with pytest.raises(OutputError, match="is a file, not a directory"):
        check_output_folder(tmp_path / "plain" / "out")
    with pytest.raises(OutputError, match="longer than the file system allows"):
        check_output_folder(tmp_path / ("a" * 300))
    with pytest.raises(OutputError, match="longer than the file system allows"):
        output_folder(tmp_path / ("a" * 300))
    with pytest.raises(OutputError, match="longer than the file system allows"):
        write_bytes("b" * 300, b"x", within=tmp_path)
    assert (tmp_path / "plain").read_text() == "mine"


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS])
def test_a_read_only_output_is_named_with_the_reason(code, tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "mkdir", refuse)
    with pytest.raises(OutputError) as info:
        output_folder(tmp_path / "new" / "out")
    assert os.strerror(code) in str(info.value) and "new" in str(info.value)
    monkeypatch.undo()
    real_open = os.open

    def refuse_temporary(path, flags, *args, **kwargs):
        if str(path).endswith(".tmp"):
            raise OSError(code, os.strerror(code))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse_temporary)
    with pytest.raises(OutputError, match=f"cannot write the result file .*{os.strerror(code)}"):
        write_bytes("r.json", b"x", within=tmp_path, what="result file")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(as_root or sys.platform == "win32", reason="root writes anywhere")
def test_a_really_read_only_directory_is_named(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match=r"Permission denied|not writable"):
            write_bytes("r.json", b"x", within=ro)
        with pytest.raises(OutputError, match="not writable"):
            check_output_folder(ro / "sub")
    finally:
        ro.chmod(0o755)


def test_a_write_goes_through_a_temporary_file_and_leaves_none(tmp_path):
    assert write_text("r.json", "{}", within=tmp_path) == tmp_path / "r.json"
    assert write_text(tmp_path / "g.json", "{}") == tmp_path / "g.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "r.json"]
    (tmp_path / "d.json").mkdir()  # a directory in the file's place
    with pytest.raises(OutputError, match="a directory is in its place"):
        write_text("d.json", "{}", within=tmp_path)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _outside(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("the user's own file")
    return outside, victim


def test_a_link_at_the_file_name_is_replaced_never_written_through(tmp_path):
    _, victim = _outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "r.json").symlink_to(victim)
    write_text("r.json", "{}", within=out)
    assert victim.read_text() == "the user's own file"
    assert not (out / "r.json").is_symlink() and (out / "r.json").read_text() == "{}"


def test_a_link_on_the_way_out_of_the_folder_is_refused(tmp_path):
    outside, _ = _outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "sub").symlink_to(outside, target_is_directory=True)
    (out / "inner").mkdir()
    (out / "in-link").symlink_to(out / "inner", target_is_directory=True)
    for call in (
        lambda: write_text("sub/r.json", "{}", within=out),
        lambda: make_folder(out, "sub"),
        lambda: write_text("../r.json", "{}", within=out),
    ):
        with pytest.raises(UnsafePathError, match="outside the output directory"):
            call()
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    write_text("in-link/r.json", "{}", within=out)  # a link that stays inside is fine
    assert (out / "inner" / "r.json").read_text() == "{}"


def test_a_link_swapped_in_on_the_way_is_refused_by_the_no_follow_walk(tmp_path):
    outside, _ = _outside(tmp_path)
    (tmp_path / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(OutputError):
        outputs._walk(tmp_path, ("sub",), "directory", tmp_path / "sub")


def test_a_lock_is_opened_without_following_a_link(tmp_path):
    _, victim = _outside(tmp_path)
    (tmp_path / LOCK_NAME).symlink_to(victim)
    with pytest.raises(UnsafePathError, match="is a symbolic link; privsim does not write"):
        open_lock(tmp_path, LOCK_NAME)
    with pytest.raises(UnsafePathError), lock_directory(tmp_path):
        pass
    assert victim.read_text() == "the user's own file"
    (tmp_path / LOCK_NAME).unlink()
    (tmp_path / LOCK_NAME).mkdir()
    with pytest.raises(OutputError, match=r"a directory is in its place|not a regular file"):
        open_lock(tmp_path, LOCK_NAME)
    (tmp_path / LOCK_NAME).rmdir()
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / LOCK_NAME)
        with pytest.raises(OutputError, match="not a regular file"):
            open_lock(tmp_path, LOCK_NAME)


def test_store_files_linked_outside_are_refused(tmp_path):
    outside, victim = _outside(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / (DB_NAME + "-wal")).symlink_to(victim)
    with pytest.raises(UnsafePathError, match="leading outside"):
        ResultStore(out)
    (out / (DB_NAME + "-wal")).unlink()
    (out / DB_NAME).symlink_to(outside / "new.sqlite")  # dangling: SQLite would create it
    with pytest.raises(UnsafePathError, match="leading outside"):
        ResultStore(out)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    refuse_links_out(out, ("absent",))  # nothing there: nothing to refuse


# ------------------------------------------------------------- through the command line


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small study's results directory, made once (copied by the tests that change it)."""
    root = tmp_path_factory.mktemp("results")
    assert main(["sweep", str(study_file(root, replications=1)), "--out", str(root / "out"),
                 "--workers", "1", "--no-progress"]) == 0  # fmt: skip
    return root / "out"


def _copy(results: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(results, to, symlinks=True)
    (to / LOCK_NAME).unlink(missing_ok=True)
    return to


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[1]", "does not describe a study (a list, not an object)"),
        ('"x"', "does not describe a study (a string, not an object)"),
        ('{"name": 3}', "field 'name' is an integer"),
        (_deep_json(100_000), "nested more than 64 lists or tables deep"),
        (None, "is a directory"),
    ],
)
def test_a_damaged_study_json_is_named_by_report_replay_and_sweep(
    content, words, results, tmp_path, capsys
):
    out = _copy(results, tmp_path / "out")
    (out / STUDY_FILE).unlink()
    if content is None:
        (out / STUDY_FILE).mkdir()
    else:
        (out / STUDY_FILE).write_text(content)
    study = study_file(tmp_path, replications=1)
    for argv in (["report", str(out)], ["report", str(out), "--html"],
                 ["replay", "x-r0", "--out", str(out)], ["sweep", str(study), "--out", str(out)]):  # fmt: skip
        assert main(argv) == EXIT_INVALID, argv
        err = _one_line_error(capsys)
        assert words in err and str(out / STUDY_FILE) in err and "--out" in err, err
    assert not (out / "report").exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"privacy": {"guarantee_met": "yes"}}, "privacy.guarantee_met"),
        ({"status": 1}, "status"),
        ({"privacy": {"non_private": 0}}, "privacy.non_private"),
    ],
)
def test_a_stored_row_of_the_wrong_shape_is_named(change, field, results, tmp_path, capsys):
    out = _copy(results, tmp_path / "out")
    db = sqlite3.connect(out / DB_NAME)
    row_id, text = db.execute("SELECT row_id, row FROM rows ORDER BY row_id").fetchone()
    row = json.loads(text)
    for key, value in change.items():
        row[key] = {**row[key], **value} if isinstance(value, dict) else value
    db.execute("UPDATE rows SET row = ? WHERE row_id = ?", (json.dumps(row), row_id))
    db.commit()
    db.close()
    for argv in (["report", str(out)], ["replay", row_id, "--out", str(out)]):
        assert main(argv) == EXIT_INVALID
        err = _one_line_error(capsys)
        assert f"field '{field}'" in err and row_id in err and DB_NAME in err, err


def test_a_deep_golden_file_or_study_base_is_named(tmp_path, capsys):
    scenario = scenario_file(tmp_path)
    golden = tmp_path / "g.json"
    golden.write_text('{"result": ' + '{"a": ' * 985 + "1" + "}" * 985 + "}")
    assert main(["check", str(scenario), "--golden", str(golden)]) == EXIT_INVALID
    assert "golden file" in _one_line_error(capsys)
    with pytest.raises(GoldenError, match="too deeply"):
        read_golden(golden)
    golden.write_text("[1, 2]")
    with pytest.raises(GoldenError, match="is a list, not an object"):
        read_golden(golden)
    study = tmp_path / "study.toml"
    study.write_text('name = "s"\nbase = "base.toml"\n[grid]\n"privacy.epsilon" = [1.0]\n')
    for base in ("[" + ".".join(["t"] * 995) + "]\nv = 1\n", "x = " + _deep_json(995)):
        (tmp_path / "base.toml").write_text(base)
        assert main(["sweep", str(study), "--out", str(tmp_path / "o")]) == EXIT_INVALID
        err = _one_line_error(capsys)
        assert "base scenario file" in err and "too deeply" in err


def test_a_csv_through_the_guarded_reader(tmp_path, monkeypatch):
    from privsim.data.registry import DataError, DataFormatError, load_csv

    good = tmp_path / "d.csv"
    good.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 5}\n" for i in range(30)))
    assert len(load_csv(good, features=["a", "b"], target="y")) == 30
    with pytest.raises(DataError, match="is a character device"):
        load_csv("/dev/zero", features=["a"], target="y")
    monkeypatch.setenv(inputs.MAX_DATA_ENV, "50")
    with pytest.raises(DataFormatError, match="PRIVSIM_MAX_DATA_BYTES"):
        load_csv(good, features=["a", "b"], target="y")


def test_output_refusals_through_the_command_line(tmp_path, capsys, monkeypatch):
    scenario = scenario_file(tmp_path)
    study = study_file(tmp_path, replications=1)
    (tmp_path / "plain").write_text("mine")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    long = str(tmp_path / ("a" * 300))
    for argv, words in [
        (["run", str(scenario), "--out", ""], "is an empty path"),
        (["audit", str(scenario), "--trials", "8", "--out", ""], "is an empty path"),
        (["sweep", str(study), "--out", ""], "is an empty path"),
        (["run", str(scenario), "--out", "plain/x"], "is a file, not a directory"),
        (["run", str(scenario), "--out", long], "longer than the file system allows"),
        (["audit", str(scenario), "--trials", "8", "--out", long], "longer than"),
        (["check", str(scenario), "--golden", "plain/g.json", "--update"], "is a file"),
        (["check", str(scenario), "--golden", "", "--update"], "is an empty path"),
    ]:
        assert main(argv) == EXIT_INVALID, argv
        assert words in _one_line_error(capsys), argv
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing in the cwd
    assert (tmp_path / "plain").read_text() == "mine"


def test_report_writes_stay_inside_the_results_directory(results, tmp_path, capsys):
    outside, victim = _outside(tmp_path)
    out = _copy(results, tmp_path / "out")
    (out / "report").symlink_to(outside, target_is_directory=True)
    assert main(["report", str(out)]) == EXIT_INVALID
    assert "outside the output directory" in _one_line_error(capsys)
    assert main(["report", str(out), "--html"]) == EXIT_INVALID
    _one_line_error(capsys)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    (out / "report").unlink()
    (out / "report").mkdir()
    names = ["summary.md", "index.html", "index.html.partial", "privacy_achieved_epsilon_vs_privacy_epsilon.png"]  # fmt: skip
    for name in names:
        (out / "report" / name).symlink_to(victim)
    assert main(["report", str(out), "--html"]) == 0
    assert victim.read_text() == "the user's own file"
    for name in names[:2] + names[3:]:
        path = out / "report" / name
        assert not path.is_symlink() and stat.S_ISREG(path.stat().st_mode), name
    assert (out / "report" / "index.html.partial").is_symlink()  # never written any more


def test_a_symlinked_sweep_lock_is_refused_and_its_target_kept(results, tmp_path, capsys):
    _, victim = _outside(tmp_path)
    out = _copy(results, tmp_path / "out")
    (out / LOCK_NAME).symlink_to(victim)
    study = study_file(tmp_path, replications=1)
    assert main(["sweep", str(study), "--out", str(out)]) == EXIT_INVALID
    assert "sweep lock file" in _one_line_error(capsys)
    assert victim.read_text() == "the user's own file"


def test_read_study_file_missing_ok(tmp_path):
    assert read_study_file(tmp_path / STUDY_FILE, missing_ok=True) == {}
    with pytest.raises(Exception, match="does not exist"):
        read_study_file(tmp_path / STUDY_FILE)
