"""Scenario, study, golden and study-description files are read only when they are
regular files of at most MAX_TOML_BYTES (4 MiB, TOML) or MAX_INPUT_BYTES (64 MiB, JSON): a device (/dev/zero), a FIFO, a
directory or a huge file is a named error (exit 2) naming the file and the fix, and
nothing hangs. The inputs that could hang run in a child process with a timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from privsim.cli import EXIT_INVALID, main
from privsim.golden import GoldenError, read_golden
from privsim.scenarios import ScenarioError, load_scenario
from privsim.scenarios.loader import (
    MAX_INPUT_BYTES,
    MAX_TOML_BYTES,
    InputFileError,
    read_input_text,
)
from privsim.studies.study import StudyError, load_study
from tests.cli.helpers import privsim_process, scenario_file, study_file

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and /dev/zero")

#: Seconds a refused input may take in a child process (Python's start-up included).
LIMIT = 60


def _fifo(directory: Path, name: str = "pipe.toml") -> Path:
    path = directory / name
    os.mkfifo(path)
    return path


def _sparse(path: Path, size: int = MAX_INPUT_BYTES + 1) -> Path:
    """A file of ``size`` bytes that takes no disk space (a hole)."""
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def _privsim(*args: str, cwd: Path) -> tuple[int, str]:
    """``privsim ARGS`` in a child process: exit status and stderr; a hang fails."""
    proc = privsim_process(*args, cwd=cwd, stdout=subprocess.DEVNULL)
    try:
        _, err = proc.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"privsim {' '.join(args)} still running after {LIMIT} s") from None
    return proc.returncode, err


def _hostile(kind: str, directory: Path) -> Path:
    if kind == "device":
        return Path("/dev/zero")
    if kind == "fifo":
        return _fifo(directory)
    path = directory / "adir.toml"
    path.mkdir()
    return path


@posix_only
@pytest.mark.parametrize(
    ("command", "what", "kind", "words"),
    [
        ("validate", "scenario file", "device", "a character device"),
        ("validate", "scenario file", "fifo", "a FIFO"),
        ("run", "scenario file", "fifo", "a FIFO"),
        ("sweep", "study file", "device", "a character device"),
        ("sweep", "study file", "fifo", "a FIFO"),
    ],
)
def test_a_device_or_fifo_is_refused_without_reading_it(command, what, kind, words, tmp_path):
    path = _hostile(kind, tmp_path)
    extra = ["--out", str(tmp_path / "out")] if command == "sweep" else []
    code, err = _privsim(command, str(path), *extra, cwd=tmp_path)
    assert code == EXIT_INVALID, err
    assert f"{what} '{path}' is {words}" in err and "not a readable text file" in err
    assert "not a device, FIFO or directory" in err and "Traceback" not in err


@posix_only
def test_a_golden_file_that_is_a_fifo_or_dev_zero_is_refused(tmp_path):
    scenario = scenario_file(tmp_path)
    hostile = ((_fifo(tmp_path, "g.json"), "a FIFO"), ("/dev/zero", "a character device"))
    for golden, words in hostile:
        code, err = _privsim("check", str(scenario), "--golden", str(golden), cwd=tmp_path)
        assert code == EXIT_INVALID, err
        assert f"golden file '{golden}' is {words}" in err and "--update" in err


@posix_only
def test_a_study_whose_base_is_a_fifo_is_refused(tmp_path):
    _fifo(tmp_path, "base.toml")
    study = tmp_path / "study.toml"
    study.write_text('name = "s"\nbase = "base.toml"\n[grid]\n"privacy.epsilon" = [1.0]\n')
    code, err = _privsim("sweep", str(study), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert code == EXIT_INVALID, err
    assert "base scenario file" in err and "is a FIFO" in err


@posix_only
def test_a_results_directory_whose_study_json_is_a_fifo_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    _fifo(out, "study.json")
    code, err = _privsim("replay", "x-r0", "--out", str(out), cwd=tmp_path)
    assert code == EXIT_INVALID, err
    assert "study description" in err and "is a FIFO" in err and "--out" in err


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_directory_as_scenario_is_named(command, tmp_path, capsys):
    path = _hostile("directory", tmp_path)
    argv = [command, str(path)] + (["--out", str(tmp_path)] if command == "run" else [])
    assert main(argv) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"scenario file '{path}' is a directory, not a readable text file" in err


def test_a_directory_as_study_or_golden_is_named(tmp_path, capsys):
    path = _hostile("directory", tmp_path)
    assert main(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    assert f"study file '{path}' is a directory" in capsys.readouterr().err
    with pytest.raises(GoldenError, match="is a directory, not a readable text file"):
        read_golden(path)


def test_a_file_over_its_limit_is_refused_unread(tmp_path, capsys):
    # TOML (scenario, study) is capped at 4 MiB: tomllib parses about 1 MB/s
    big = _sparse(tmp_path / "big.toml", MAX_TOML_BYTES + 1)
    size = f"{MAX_TOML_BYTES + 1:,} bytes, more than the 4 MiB privsim reads"
    assert main(["validate", str(big)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"scenario file '{big}' is {size} as a scenario file" in err
    assert "Fix: give the path of a scenario file (a few kB of text)" in err
    assert "raise the limit with PRIVSIM_MAX_INPUT_BYTES=BYTES" in err
    assert main(["sweep", str(big), "--out", str(tmp_path / "out")]) == EXIT_INVALID
    assert f"study file '{big}' is {size}" in capsys.readouterr().err
    # JSON (a golden file, study.json) at 64 MiB
    size = f"{MAX_INPUT_BYTES + 1:,} bytes, more than the 64 MiB privsim reads"
    scenario = scenario_file(tmp_path)
    assert main(["check", str(scenario), "--golden", str(_sparse(tmp_path / "g.json"))]) == 2
    assert f"golden file '{tmp_path / 'g.json'}' is {size}" in capsys.readouterr().err


def test_the_limit_is_raised_by_its_environment_variable(tmp_path, monkeypatch, capsys):
    big = _sparse(tmp_path / "big.toml", MAX_TOML_BYTES + 1)
    monkeypatch.setenv("PRIVSIM_MAX_INPUT_BYTES", str(MAX_TOML_BYTES + 1))
    assert main(["validate", str(big)]) == EXIT_INVALID  # read now: NUL bytes are not TOML
    assert "is not valid TOML" in capsys.readouterr().err
    monkeypatch.setenv("PRIVSIM_MAX_INPUT_BYTES", "lots")
    assert main(["validate", str(big)]) == EXIT_INVALID
    assert "PRIVSIM_MAX_INPUT_BYTES='lots' is not a number of bytes" in capsys.readouterr().err


def test_the_limit_is_inclusive_and_errors_are_typed(tmp_path):
    exact = tmp_path / "exact.toml"
    exact.write_text("x = 1234\n")  # 9 bytes
    assert read_input_text(exact, "scenario file", limit=9) == "x = 1234\n"
    with pytest.raises(InputFileError, match="is 9 bytes, more than the 8 bytes privsim reads"):
        read_input_text(exact, "scenario file", limit=8)
    with pytest.raises(ScenarioError, match="is a directory"):
        load_scenario(tmp_path)
    with pytest.raises(StudyError, match="is a directory"):
        load_study(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_input_text(tmp_path / "missing.toml", "scenario file")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_file_that_reports_size_0_is_still_capped():
    # /proc files report st_size 0: the read itself stops one byte past the limit
    with pytest.raises(InputFileError, match=r"is at least 11 bytes, more than"):
        read_input_text("/proc/self/status", "scenario file", limit=10)


def test_a_regular_scenario_and_study_still_load(tmp_path):
    assert load_scenario(scenario_file(tmp_path)).name == "test"
    assert load_study(study_file(tmp_path, replications=1)).name == "cli-study"
