"""A threat study's report: a grid over a list-valued field (the colluding servers)
groups into cells instead of crashing, and the exposure metrics the protocol declares
are tabulated and drawn against the threat axes beside the achieved ε."""

from __future__ import annotations

import pandas as pd
import pytest

from privsim import registry
from privsim.analysis.summary import exposure_of, hashable_grid, summarise
from privsim.studies import load
from privsim.studies.report import write_report
from privsim.studies.study import study_from_dict
from privsim.studies.sweep import sweep

NODES = ["compute-0", "compute-1", "compute-2"]


def test_hashable_grid_writes_list_values_as_text_and_leaves_the_rest():
    frame = pd.DataFrame(
        {
            "grid.threat.colluding_servers": [[], NODES, NODES],
            "grid.dca.tolerated": [1, 2, 3],
            "status": ["released"] * 3,
        }
    )
    out = hashable_grid(frame)
    assert list(out["grid.threat.colluding_servers"]) == [
        "[]",
        "[compute-0, compute-1, compute-2]",
        "[compute-0, compute-1, compute-2]",
    ]
    assert list(out["grid.dca.tolerated"]) == [1, 2, 3]
    assert frame["grid.threat.colluding_servers"].iloc[1] == NODES  # the input is untouched
    plain = frame.drop(columns="grid.threat.colluding_servers")
    assert hashable_grid(plain) is plain


def _threat_study(tmp_path):
    study = study_from_dict(
        {
            "name": "threat-servers",
            "seed": 3,
            "replications": 2,
            "base": dict(registry.specs()["dca"].example),
            "grid": {"threat.colluding_servers": [[], NODES], "threat.colluding_clients": [0, 6]},
        }
    )
    summary = sweep(study, tmp_path / "out", workers=1, progress=None)
    assert (summary.total, summary.errors) == (8, 0)
    return tmp_path / "out"


def test_a_grid_over_colluding_servers_tabulates_the_declared_exposure(tmp_path):
    frame = load(_threat_study(tmp_path))
    declared = {f"coalition.exposure.{k}" for k in registry.get("dca").exposure}
    assert set(exposure_of(frame)) <= declared
    assert "coalition.exposure.target_noise_ratio" in exposure_of(frame)
    table = summarise(frame)
    reconstructed = table[table["metric"] == "coalition.exposure.inputs_reconstructed"]
    by_servers = reconstructed.groupby("grid.threat.colluding_servers")["median"].max()
    # every node colluding: every honest included client's input (30 − 6 at most)
    assert by_servers["[]"] == 0 and by_servers["[compute-0, compute-1, compute-2]"] >= 24


@pytest.mark.slow
def test_the_report_draws_the_exposure_against_the_threat_axes(tmp_path):
    md, figures = write_report(_threat_study(tmp_path))
    names = {p.name for p in figures}
    # one factor at a time, a panel per colluding-servers value (a text field)
    stem = "coalition_exposure_target_noise_ratio_vs_threat_colluding_clients"
    assert {f"{stem}.png", f"{stem}__compute-0_compute-1_compute-2.png"} <= names
    assert "privacy_achieved_epsilon_vs_threat_colluding_clients.png" in names
    assert "coalition exposure: target noise ratio" in md.read_text()
