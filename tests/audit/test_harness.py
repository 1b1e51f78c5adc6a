"""The audit harness: reproducible, the same wherever its batches run, and reachable
from the command line with its rows written inside --out."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import tomli_w

from privsim import registry
from privsim.audit import audit
from privsim.audit.harness import audit_plan
from privsim.audit.reference import gaussian_plan
from privsim.cli import main
from privsim.scenarios import scenario_from_dict


def test_same_seed_same_bound_and_batches_do_not_matter():
    plan = gaussian_plan(1.0, 1e-5)
    a = audit_plan(plan, None, 10_000, seed=7)
    b = audit_plan(plan, None, 10_000, seed=7)
    assert a.row() | {"seconds": 0} == b.row() | {"seconds": 0}


def test_study_path_gives_the_in_process_statistics():
    """Two local worker processes run the batches as study tasks: same counts."""
    scenario = scenario_from_dict(dict(registry.get("trusted_aggregator").example))
    here = audit(scenario, 3_000, seed=1)
    there = audit(scenario, 3_000, seed=1, workers=2)
    assert here.test == there.test


def test_every_builtin_protocol_declares_an_audit():
    for name in ("dca", "trusted_aggregator", "race", "blr", "bcd"):
        assert registry.get(name).audit is not None, name


def test_cli_prints_claim_and_bound_and_writes_rows(tmp_path: Path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(dict(registry.get("dca").example)), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["audit", str(path), "--trials", "2000", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "claimed epsilon" in text and "audited epsilon >=" in text
    (written,) = out.glob("audit-*.json")
    row = json.loads(written.read_text())["rows"][0]
    assert row["trials_per_side"] == 2000
    assert row["lower_bound"] < row["claimed_epsilon"]
    assert np.isfinite(row["threshold"])


def test_cli_exits_3_when_the_bound_exceeds_the_claim(tmp_path: Path):
    """The BCD example (ε_step = 0.25) exceeds its claim (see test_bcd_audit.py)."""
    path = tmp_path / "bcd.toml"
    path.write_text(tomli_w.dumps(dict(registry.get("bcd").example)), encoding="utf-8")
    code = main(["audit", str(path), "--trials", "20000", "--out", str(tmp_path / "o")])
    assert code == 3


def test_cli_names_the_auditable_protocols(tmp_path: Path, capsys, monkeypatch):
    without = [s for s in registry.specs().values() if s.audit is None]
    if not without:  # every built-in audits: register, for this test, one that does not
        base = registry.get("secagg_plus")
        example = {**base.example, "protocol": "unaudited"}
        spec = dataclasses.replace(base, name="unaudited", audit=None, example=example)
        monkeypatch.setattr(registry, "_specs", dict(registry.specs()))
        monkeypatch.setattr(registry, "_tables", registry.tables())
        registry.register(spec)
        without = [spec]
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(dict(without[0].example)), encoding="utf-8")
    assert main(["audit", str(path), "--trials", "100", "--out", str(tmp_path)]) == 2
    assert "declares no audit plan" in capsys.readouterr().err


def test_cli_warns_when_the_trials_cannot_resolve_the_claim(tmp_path: Path, capsys):
    """10 trials (5 counted per side) cap any bound far below ε ≈ 0.94: a warning with a
    trial count that could; the rows name their trial count, so runs do not overwrite."""
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(dict(registry.get("dca").example)), encoding="utf-8")
    assert main(["audit", str(path), "--trials", "10", "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "10 trials cannot resolve the claim" in err and "use --trials" in err
    assert [p.name.endswith("-trials10.json") for p in (tmp_path / "o").glob("audit-*")] == [True]
    assert main(["audit", str(path), "--trials", "1", "--out", str(tmp_path / "o")]) == 2
    assert "--trials 1: an audit needs at least 4 trials" in capsys.readouterr().err
