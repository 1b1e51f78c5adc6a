"""BCD studies: rows, the per-cell table and the figures; the command line."""

from __future__ import annotations

import json

import pytest

from privsim.cli import main
from privsim.studies import load
from privsim.studies.report import write_report
from privsim.studies.study import study_from_dict
from privsim.studies.sweep import sweep

BASE = {
    "name": "bcd-small",
    "seed": 1,
    "protocol": "bcd",
    "population": {"clients": 2},
    "privacy": {"epsilon": 1.0, "delta": 1e-5},
    "network": {"encryption": "none"},
    "bcd": {"records": 300, "predictors": 4},
}


def test_bcd_sweep_tabulates_aborts_r2_and_draws_one_factor_figures(tmp_path):
    study = study_from_dict(
        {
            "name": "bcd-cells",
            "seed": 2,
            "replications": 6,
            "base": BASE,
            "grid": {"privacy.epsilon": [0.5, 50.0], "bcd.gamma": [1.2, 2.0]},
        }
    )
    summary = sweep(study, tmp_path / "out", workers=1, progress=None)
    assert summary.errors == 0 and summary.total == 24
    frame = load(tmp_path / "out")
    released = frame[frame["status"] == "released"]
    assert len(released) > 0
    assert released["accuracy.r2"].notna().all()
    # a published run took all k·T steps: simple composition spends exactly the target ε
    # (δ = 0); where the worst-case pair's PLD at δ is over 1 % tighter (10 steps of
    # 0.05: 0.49 at 1e-5), that is reported instead, at δ, and stays within the target
    eps = released["privacy.achieved_epsilon"].astype(float)
    target = released["grid.privacy.epsilon"]
    pure = released["privacy.delta"] == 0.0
    assert (eps[pure] - target[pure]).abs().max() < 1e-9
    assert ((eps[~pure] < 0.99 * target[~pure]) & (released["privacy.delta"][~pure] == 1e-5)).all()
    assert released["privacy.guarantee_met"].all()
    # the protocol's own columns (bcd flatten): steps, the centralised reference, R² path
    assert (released["bcd.steps"] == 2 * 5).all() and (released["bcd.iterations"] == 5).all()
    assert released["bcd.reference.r2_central"].notna().all()
    assert released["bcd.r2_by_iteration"].map(len).eq(5).all()
    assert (frame["coalition.exposure.remainders_received"] >= 0).all()
    md, figures = write_report(tmp_path / "out")
    text = md.read_text()
    assert "Block coordinate descent: aborts, R² and AAPD per cell" in text
    # one R² and one AAPD figure per numeric factor
    names = sorted(p.name for p in figures)
    assert "accuracy_r2_vs_privacy_epsilon.png" in names
    assert "accuracy_r2_vs_bcd_gamma.png" in names


def test_bcd_scenario_runs_from_the_command_line(tmp_path, capsys):
    import tomli_w

    path = tmp_path / "bcd.toml"
    path.write_text(tomli_w.dumps(BASE))
    assert main(["run", str(path), "--out", str(tmp_path)]) == 4  # it aborts; file written
    out = capsys.readouterr().out
    assert "method dp-bcd" in out and "locally sensitive" in out
    result = json.loads(next(tmp_path.glob("bcd-small-*-seed1.json")).read_text())
    assert result["protocol"] == "bcd"
    assert result["privacy"]["details"]["epsilon_per_step"] == 0.1
    # ε spent by the steps taken (this seed aborts after a few): 0.1 each
    steps = result["bcd"]["steps"]
    assert result["privacy"]["achieved_epsilon"] == pytest.approx(0.1 * steps)
