"""`privsim run`'s exit status: 0 released, 3 guarantee not met, 4 aborted (documented)."""

from __future__ import annotations

import json

import pytest

from privsim.cli import EXIT_ABORTED, EXIT_NOT_MET, build_parser, main
from tests.cli.helpers import scenario_file

#: 90% of the 40 clients never show up, with T = 5 tolerated: DCA aborts.
ABORTING = {"faults": {"absent": 0.9}, "dca": {"tolerated": 5, "on_excess_dropout": "abort"}}


def test_an_aborted_run_exits_4_and_still_writes_its_result(tmp_path, capsys):
    path = scenario_file(tmp_path, **ABORTING)
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == EXIT_ABORTED == 4
    err = capsys.readouterr().err
    assert "the run aborted (too_many_dropouts" in err and "--allow-abort" in err
    [written] = (tmp_path / "out").glob("test-*-seed11.json")
    assert json.loads(written.read_text())["status"] == "aborted"


def test_allow_abort_accepts_an_aborted_run(tmp_path, capsys):
    path = scenario_file(tmp_path, **ABORTING)
    assert main(["run", str(path), "--out", str(tmp_path), "--allow-abort"]) == 0
    assert "Allowed by --allow-abort" in capsys.readouterr().err


def test_a_released_run_exits_0(tmp_path):
    assert main(["run", str(scenario_file(tmp_path)), "--out", str(tmp_path)]) == 0


def test_a_guarantee_not_met_still_exits_3_and_abort_does_not_hide_it(tmp_path):
    # 30 of 40 clients collude with T = 5: the realised noise is below the target.
    path = scenario_file(
        tmp_path, threat={"colluding_clients": 30}, privacy={"on_overspend": "warn"}
    )
    assert main(["run", str(path), "--out", str(tmp_path)]) == EXIT_NOT_MET == 3
    assert main(["run", str(path), "--out", str(tmp_path), "--allow-abort"]) == 3


@pytest.mark.parametrize("command", ["run", "check"])
def test_help_documents_every_exit_status(command, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = capsys.readouterr().out
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "130", "141"):
        assert f"\n  {code}" in text, code
    assert "--allow-abort" in text or command == "check"
