"""The BCD protocol's registry entry: its example, checks, preflight, report lines, row
columns, study section and figures."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from privsim import registry
from privsim.protocols.bcd import BCD
from privsim.protocols.bcd.figures import draw_coefficients, draw_iterations, draw_study
from privsim.protocols.bcd.study_checks import TITLE, bcd_sections
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.scenarios.schema import Scenario


def _example(**changes):
    scenario = Scenario.from_dict(BCD.example)
    return scenario.replace(changes) if changes else scenario


def test_the_registry_finds_bcd_and_its_table():
    assert registry.get("bcd") is BCD
    assert registry.tables()["bcd"] is BCD.tables["bcd"]


def test_the_example_is_fast_and_releases():
    scenario = _example()
    started = time.perf_counter()
    result = BCD.run(scenario, scenario.seed).to_dict()
    assert time.perf_counter() - started < 1.0
    assert result["status"] == "released"
    assert result["protocol"] == "bcd" and result["bcd"]["steps"] == 2 * 2
    assert result["privacy"]["achieved_epsilon"] == pytest.approx(1.0)


def test_report_lines_say_what_is_specific_and_leave_the_common_lines_out():
    result = BCD.run(_example(), 3).to_dict()
    lines = BCD.report(result)
    text = "\n".join(lines)
    assert lines[0].startswith("  method dp-bcd; data synthetic: 200 records, 4 predictors")
    assert "published after 2 iterations (4 steps)" in text
    assert "R² " in text and "AAPD" in text
    assert "ε 0.25 per step" in text and "party-0 0.5, party-1 0.5" in text
    assert not any(line.startswith(("Privacy", "Traffic", "Time")) for line in lines)
    plain = BCD.report(BCD.run(_example(**{"bcd.method": "bcd"}), 3).to_dict())
    assert any("no perturbation" in line for line in plain)
    prose = BCD.report(BCD.run(_example(**{"bcd.abort_rule": False}), 3).to_dict())
    assert any("not a valid guarantee: abort rule off" in line for line in prose)


def test_report_lines_of_an_aborted_run_give_the_reason():
    scenario = _example(
        **{"bcd.records": 60, "bcd.gamma": 1.01, "bcd.iterations": 5, "privacy.epsilon": 0.2}
    )
    result = BCD.run(scenario, 1).to_dict()
    assert result["status"] == "aborted"
    assert any(
        line.startswith("Result      aborted:") and "> ξ" in line for line in BCD.report(result)
    )


def test_flatten_gives_only_the_protocols_own_columns():
    result = BCD.run(_example(), 3).to_dict()
    columns = BCD.flatten(result)
    assert set(columns) == {"bcd"}  # every column under the protocol's name
    bcd = columns["bcd"]
    assert (bcd["iterations"], bcd["steps"]) == (2, 4)
    assert set(bcd["reference"]) == {"r2_central", "beta_central"}
    assert bcd["dataset"] == {"columns": ["x0", "x1", "x2", "x3"]}
    assert len(bcd["r2_by_iteration"]) == 2


def test_check_rejects_a_coalition_of_parties_that_do_not_exist():
    with pytest.raises(ScenarioError, match="colluding_servers"):
        _example(**{"threat.colluding_servers": ["compute-0"]})
    with pytest.raises(ScenarioError, match="colluding_clients"):
        _example(**{"threat.colluding_clients": 1})
    assert _example(**{"threat.colluding_clients": ["party-0"]}).threat.colluding_clients == (
        "party-0",
    )


def test_preflight_checks_named_data_only():
    BCD.preflight(_example())  # synthetic: nothing to load
    # a missing file is named, with the field that names it (issue 16)
    with pytest.raises(FieldError, match=r"bcd\.csv_path.*/nonexistent/bcd\.csv.*does not exist"):
        BCD.preflight(
            _example(
                **{
                    "bcd.dataset": "csv",
                    "bcd.csv_path": "/nonexistent/bcd.csv",
                    "bcd.features": ["a", "b"],
                    "bcd.target": "y",
                }
            )
        )


def _frame():
    import pandas as pd

    rows = []
    for dataset in ("forestfires", "synthetic"):
        for eps in (1.0, 10.0):
            for rep in range(4):
                released = rep != 3
                rows.append(
                    {
                        "grid.bcd.dataset": dataset,
                        "grid.privacy.epsilon": eps,
                        "status": "released" if released else "aborted",
                        "accuracy.r2": 0.2 + 0.01 * rep if released else None,
                        "accuracy.aapd": 0.5 if released else None,
                        "accuracy.beta_abs_error": 0.1 if released else None,
                        "accuracy.beta": [1.0 + 0.1 * rep, -1.0, 0.5] if released else None,
                        "bcd.reference.beta_central": [1.1, -1.0, 0.4],
                        "bcd.reference.r2_central": 0.3,
                        "bcd.dataset.columns": ["a", "b", "c"],
                        "bcd.r2_by_iteration": [0.1, 0.2, 0.25][: 3 - (rep == 3)],
                    }
                )
    return pd.DataFrame(rows)


class _Kit:
    """The two drawing primitives of the study report's kit, and the rows."""

    def __init__(self, frame, out: Path) -> None:
        self.frame, self.out, self.calls = frame, out, []

    def figure(self, width, height):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt.subplots(figsize=(width, height))

    def finish(self, fig, ax, name, legend_size=8):
        import matplotlib.pyplot as plt

        ax.legend(fontsize=legend_size)
        path = self.out / f"{name}.png"
        fig.savefig(path)
        plt.close(fig)
        return path

    def one_factor(self, metric, *, reference=None):
        self.calls.append((metric, reference))
        return []


def test_coefficient_figures_are_drawn_per_cell_of_fixed_data(tmp_path):
    kit = _Kit(_frame(), tmp_path)
    drawn = draw_coefficients(kit, kit.frame)
    # synthetic cells draw a new data set every replication: no coefficient figure
    assert sorted(p.name for p in drawn) == [
        "coefficients_forestfires_10_0.png",
        "coefficients_forestfires_1_0.png",
    ]
    assert all(p.is_file() for p in drawn)


def test_r2_by_iteration_figures_one_per_data_set(tmp_path):
    kit = _Kit(_frame(), tmp_path)
    drawn = draw_iterations(kit, kit.frame)
    assert sorted(p.name for p in drawn) == [
        "r2_by_iteration_forestfires.png",
        "r2_by_iteration_synthetic.png",
    ]
    assert draw_iterations(kit, kit.frame.drop(columns=["grid.privacy.epsilon"])) == []


def test_the_study_figures_ask_the_kit_for_the_one_factor_plots(tmp_path):
    kit = _Kit(_frame(), tmp_path)
    drawn = draw_study(kit, None)
    assert kit.calls == [("accuracy.r2", "bcd.reference.r2_central"), ("accuracy.aapd", None)]
    assert len(drawn) == 4  # two coefficient and two R²-by-iteration figures
    assert BCD.study.figures is draw_study


def test_the_study_section_tabulates_aborts_r2_and_aapd_per_cell():
    ((title, body),) = bcd_sections(_frame())
    assert title == TITLE
    assert "‖v_out‖ > ξ" in body
    table = [line for line in body.splitlines() if line.startswith("| forestfires | 1.0")]
    assert table and "| 4 | 25.0% |" in table[0]
    assert bcd_sections(_frame().drop(columns=["accuracy.r2"])) == []
