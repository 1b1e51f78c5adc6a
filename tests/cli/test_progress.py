"""Progress through rich: shown on a terminal, quiet elsewhere unless asked."""

from __future__ import annotations

import io

import pytest

from privsim.cli import main
from privsim.progress import RowBar, mode, track, working
from tests.cli.helpers import scenario_file, study_file


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_mode_follows_the_stream_and_the_request():
    assert mode(_Terminal()) == "live"
    assert mode(io.StringIO()) == "off"  # a log or a pipe: quiet by default
    assert mode(io.StringIO(), show=True) == "log"
    assert mode(_Terminal(), show=False) == "off"
    assert mode(None, show=True) == "off"


def test_a_bar_on_a_terminal_draws_rows_rate_and_errors():
    stream = _Terminal()
    with RowBar("study", total=4, completed=1, stream=stream) as bar:
        for error in (False, True, False):
            bar.advance(error)
    text = stream.getvalue()
    assert "4/4" in text and "1 errors" in text and "rows/s" in text


def test_a_bar_off_a_terminal_writes_lines_only_when_asked():
    quiet = io.StringIO()
    with RowBar("study", total=3, stream=quiet) as bar:
        for _ in range(3):
            bar.advance()
    assert quiet.getvalue() == ""
    log = io.StringIO()
    with RowBar("study", total=3, stream=log, show=True) as bar:
        for _ in range(3):
            bar.advance(error=True)
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("study: 1/3 rows") and lines[-1].startswith("study: 3/3 rows")
    assert lines[-1].endswith("3 errors")


def test_working_shows_nothing_for_a_short_run_and_a_line_for_a_long_one():
    import time

    stream = io.StringIO()
    with working("quick", stream=stream, show=True, delay=5.0):
        pass
    assert stream.getvalue() == ""
    with working("long", stream=stream, show=True, delay=0.0):
        time.sleep(0.2)
    assert stream.getvalue().startswith("long: running, elapsed 0:00:00")


@pytest.mark.parametrize("flag", [[], ["--no-progress"]])
def test_sweep_is_quiet_when_stderr_is_not_a_terminal(flag, tmp_path, capsys):
    study = study_file(tmp_path, replications=1)
    assert main(["sweep", str(study), "--out", str(tmp_path / "o"), *flag]) == 0
    assert "rows" not in capsys.readouterr().err


def test_sweep_progress_when_asked(tmp_path, capsys):
    study = study_file(tmp_path, replications=1)
    assert main(["sweep", str(study), "--out", str(tmp_path / "o"), "--progress"]) == 0
    assert "cli-study: 2/2 rows" in capsys.readouterr().err


def test_run_is_quiet_off_a_terminal(tmp_path, capsys):
    assert main(["run", str(scenario_file(tmp_path)), "--out", str(tmp_path)]) == 0
    assert "running" not in capsys.readouterr().err


def test_track_gives_a_loop_its_bar():
    stream = io.StringIO()
    assert list(track(range(3), "figure", 3, stream=stream, show=True)) == [0, 1, 2]
    assert stream.getvalue().splitlines()[-1].startswith("figure: 3/3 steps")
