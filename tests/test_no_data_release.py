"""No release without data (issue 29, section 6): a protocol whose output party received
no client's data aborts — status "aborted", exit status 4 — naming why, with no
accuracy; every built-in protocol and the test plug-ins, with every client absent and
with every message lost. And BCD's R² with a constant target is a named error, not a
division by zero."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomli_w

from privsim import registry
from privsim.api import run
from privsim.cli import EXIT_ABORTED, EXIT_INVALID, main
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.scenarios.convert import set_fields

PLUGIN = Path(__file__).parent / "plugins" / "noisy_sum"
BUILT_IN = sorted(registry.specs())


@pytest.fixture(params=[*BUILT_IN, "noisy_sum", "noisy_rr"])
def spec(request, monkeypatch):
    """Each built-in protocol, and each test plug-in (registered for the test)."""
    if request.param in registry.specs():
        return registry.get(request.param)
    monkeypatch.syspath_prepend(str(PLUGIN))
    from privsim_noisy_sum import PROTOCOL as NOISY_SUM
    from privsim_noisy_sum.rr import PROTOCOL as NOISY_RR

    monkeypatch.setattr(registry, "_specs", dict(registry.specs()))
    monkeypatch.setattr(registry, "_tables", registry.tables())
    plugin = {"noisy_sum": NOISY_SUM, "noisy_rr": NOISY_RR}[request.param]
    registry.register(plugin)
    return plugin


def _holders(spec: Any) -> list[str]:
    if spec.parties is None:
        return ["client"]
    roles = sorted(spec.parties(scenario_from_dict(spec.example)))
    return ["client"] if "client" in roles else roles


CASES = {
    "every client absent": lambda spec: {"faults.absent": 1.0, "faults.roles": _holders(spec)},
    "every message lost": lambda spec: {"network.link.loss": 1.0},
}


def _run(data: dict[str, Any]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(scenario_from_dict(data)).to_dict()


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_data_means_no_release(spec, case):
    data = set_fields(spec.example, {"threat.colluding_clients": 0, **CASES[case](spec)})
    result = _run(data)
    assert result["status"] == "aborted", (case, result["abort"])
    assert result["accuracy"] is None
    assert result["abort"]["reason"] and result["abort"]["detail"], result["abort"]
    for name, method in result["methods"].items():
        if method["status"] == "released" and spec.name == "summarization":
            continue  # its non-private baselines are labelled references, not releases
        assert method["status"] != "released", (case, name)


def test_blr_with_every_client_absent_exits_4_naming_why(tmp_path, capsys):
    data = set_fields(registry.get("blr").example, {"faults.absent": 1.0})
    path = tmp_path / "absent.toml"
    path.write_text(tomli_w.dumps(data))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == EXIT_ABORTED
    err = capsys.readouterr().err
    assert "no_data: every client is absent" in err and "nothing was released" in err
    (written,) = (tmp_path / "out").glob("*.json")
    result = json.loads(written.read_text())
    assert result["status"] == "aborted" and result["abort"]["reason"] == "no_data"
    assert {m["status"] for m in result["methods"].values()} == {"aborted"}
    assert all(m["accuracy"] is None for m in result["methods"].values())


def test_blr_central_methods_still_release_when_some_clients_are_present():
    data = set_fields(registry.get("blr").example, {"faults.absent": 0.5})
    result = _run(data)
    assert result["methods"]["NP"]["status"] == "released"
    assert result["methods"]["TA"]["accuracy"]["mae"] > 0


def _constant_target_csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    path = tmp_path / "constant.csv"
    rows = "\n".join(",".join(f"{v:.4f}" for v in r) + ",3.5" for r in rng.normal(size=(80, 4)))
    path.write_text("a,b,c,d,y\n" + rows + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["validate", "run"])
def test_bcd_with_a_constant_target_is_a_named_error(tmp_path, capsys, command):
    data = set_fields(
        registry.get("bcd").example,
        {
            "bcd.dataset": "csv",
            "bcd.csv_path": str(_constant_target_csv(tmp_path)),
            "bcd.features": ["a", "b", "c", "d"],
            "bcd.target": "y",
        },
    )
    path = tmp_path / "bcd.toml"
    path.write_text(tomli_w.dumps(data))
    out = ["--out", str(tmp_path / "out")] if command == "run" else []
    assert main([command, str(path), *out]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "bcd.target" in err and "constant" in err and "R²" in err
    assert "Traceback" not in err and "ZeroDivisionError" not in err
    with pytest.raises(ScenarioError, match="undefined"):
        run(scenario_from_dict(data))
