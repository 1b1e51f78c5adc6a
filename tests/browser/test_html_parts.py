"""The HTML report's parts without a browser: the rates per cell, the tables' exact
values, the Markdown of the protocols' sections, escaping, and the paper's values the
BLR, BCD and RACE study views set beside a study's rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privsim import registry
from privsim.analysis.html import render_html, with_base
from privsim.analysis.html_tables import cell_rates, markdown_to_html, sortable_table


def _rows(**columns: list[object]) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    frame = pd.DataFrame(columns)
    if "row_id" not in frame:
        frame["row_id"] = [f"r{i}" for i in range(n)]
    if "seed" not in frame:
        frame["seed"] = list(range(n))
    return frame


def test_rates_count_releases_aborts_and_met_guarantees_per_cell() -> None:
    frame = _rows(
        **{
            "grid.privacy.epsilon": [1.0, 1.0, 1.0, 1.0, 2.0, 2.0],
            "status": ["released", "released", "aborted", "error", "released", "released"],
            "privacy.guarantee_met": [True, False, None, None, False, True],
            "privacy.non_private": [False, False, None, None, True, False],
        }
    )
    rates = cell_rates(frame).set_index("grid.privacy.epsilon")
    one, two = rates.loc[1.0], rates.loc[2.0]
    assert (one["rows"], one["released"], one["aborted"], one["errors"]) == (4, 2, 1, 1)
    assert one["release rate"] == 0.5 and one["abort rate"] == 0.25
    assert one["guarantee-met rate"] == 0.5  # one of the two released runs
    # the non-private baseline claims nothing: the rate is over the one private run
    assert two["non_private"] == 1 and two["guarantee-met rate"] == 1.0


def test_tables_carry_every_digit_and_escape_text() -> None:
    frame = pd.DataFrame({"name": ["<b>x</b>"], "value": [0.1 + 0.2], "rate": [0.125]})
    page = sortable_table(frame, name="t")
    assert 'data-value="0.30000000000000004">0.3</td>' in page
    assert ">12.5%</td>" in page  # a column named ...rate shows a percentage
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_markdown_sections_become_tables_lists_and_paragraphs() -> None:
    text = (
        "Medians per cell, **bold** and `code`.\n\n"
        "| a | b |\n|---|---|\n| 1 | <script>x</script> |\n\n"
        "- one\n- two"
    )
    page = markdown_to_html(text)
    assert "<strong>bold</strong>" in page and "<code>code</code>" in page
    assert '<table class="sortable">' in page and "<td>1</td>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count("<li>") == 2


def test_the_page_escapes_the_study_it_shows() -> None:
    frame = _rows(
        **{
            "protocol": ["dca", "dca"],
            "status": ["released", "released"],
            "grid.privacy.epsilon": [1.0, 2.0],
            "accuracy.rmse": [3.0, 2.0],
        }
    )
    study = {"name": "<script>alert(1)</script>", "grid": {"privacy.epsilon": [1.0, 2.0]}}
    page = render_html(frame, results_dir="out", study=study)
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count('class="plot"') >= 1


def test_the_study_base_fills_the_fields_outside_the_grid() -> None:
    frame = _rows(**{"status": ["released"], "grid.privacy.epsilon": [1.0]})
    study = {"base": {"bcd": {"dataset": "forestfires", "gamma": 1.2}, "privacy": {"epsilon": 9}}}
    out = with_base(frame, study)
    assert out["base.bcd.dataset"].tolist() == ["forestfires"]
    assert out["base.bcd.gamma"].tolist() == [1.2]
    assert "base.privacy.epsilon" in out  # the grid's column still wins where both exist


def _reference(protocol: str):
    reference = registry.get(protocol).study.reference
    assert reference is not None
    return reference


def test_bcd_sets_the_papers_forest_fire_medians_beside_the_proven_reading() -> None:
    r2 = [-0.5, -0.1, 0.0, 0.2, 9.0, 9.0]
    frame = _rows(
        **{
            "protocol": ["bcd"] * 6,
            "status": ["released", "released", "released", "aborted", "released", "released"],
            "grid.privacy.epsilon": [1.0] * 6,
            "grid.bcd.abort_rule": [True, True, True, True, False, False],
            "accuracy.r2": r2,
            "accuracy.r2_central": [0.0742] * 6,
        }
    )
    frame = with_base(frame, {"base": {"bcd": {"dataset": "forestfires"}}})
    [(title, table)] = _reference("bcd")(frame)
    assert "de Jong" in title
    row = table.set_index("quantity").loc["median R², forest fires, ε = 1 (§3.3)"]
    # the abort-rule-off reading (R² 9.0) is not the paper's: only the first four rows count
    assert row["paper"] == "−4.07" and row["ours"] == pytest.approx(-0.1)
    assert row["runs"] == 4 and row["abort rate"] == 0.25
    assert "median R², forest fires, ε = 2 (§3.3)" not in table["quantity"].tolist()
    central = table.set_index("quantity").iloc[-1]
    assert central["paper"] == "0.07" and central["ours"] == pytest.approx(0.0742)


def test_race_sets_algorithm_1s_noise_beside_the_measured() -> None:
    frame = _rows(
        **{
            "protocol": ["race"] * 3,
            "status": ["released"] * 3,
            "grid.race.mode": ["curator", "local", "dca"],
            "accuracy.noise_sd_per_cell": [113.0, 226.0, 130.0],
            "parties.included": [4, 4, 4],
            "privacy.target_epsilon": [1.0] * 3,
        }
    )
    base = {
        "base": {
            "race": {"rows": 80, "owners": 4, "noise": "laplace"},
            "privacy": {"neighbour": "add_remove"},
            "dca": {"tolerated": 1},
        }
    }
    [(_, table)] = _reference("race")(with_base(frame, base))
    table = table.set_index("grid.race.mode")
    once = math.sqrt(2) * 80  # Laplace scale R/ε, sd √2·b
    assert table.loc["curator", "paper: noise sd per cell"] == pytest.approx(once)
    assert table.loc["local", "paper: noise sd per cell"] == pytest.approx(2 * once)  # √K, K = 4
    # DCA split over K − T = 3 owners, all 4 present: √(4/3) times one Laplace
    expected = table.loc["dca", "expected here (DCA: × √(K′/(K − T)))"]
    assert expected == pytest.approx(once * math.sqrt(4 / 3))


def test_blr_counts_the_papers_findings_per_cell() -> None:
    rng = np.random.default_rng(5)
    n = 10
    frame = _rows(
        **{
            "protocol": ["blr"] * (2 * n),
            "status": ["released"] * (2 * n),
            "grid.privacy.epsilon": [1.0] * n + [4.0] * n,
            "methods.TA.accuracy.mae": list(rng.normal(3.0, 0.5, 2 * n)),
            "methods.DDP.accuracy.mae": list(rng.normal(3.0, 0.5, 2 * n)),
            "methods.proj_TA.accuracy.mae": list(rng.normal(1.0, 0.1, 2 * n)),
            "methods.proj_DDP.accuracy.mae": list(rng.normal(1.0, 0.1, 2 * n)),
        }
    )
    [(_, table)] = _reference("blr")(frame)
    found = table.set_index("quantity")["this study"]
    # projected MAEs (mean 1.0, sd 0.1) sit 4 sd of the unprojected below them
    assert found["projection lowers the median MAE (TA and DDP)"] == "2 of 2 cells"
    assert found["repetitions per cell"] == "10–10 released"
    assert found["DDP indistinguishable from TA"].startswith(("1 of 2", "2 of 2"))


def test_a_study_without_rows_still_gives_a_page() -> None:
    page = render_html(pd.DataFrame(), results_dir="out", study={"name": "empty"})
    assert "Study report: empty" in page and 'class="plot"' not in page


def test_a_grid_over_a_list_valued_field_gives_a_page() -> None:
    """``threat.colluding_servers`` takes lists: the page groups cells by their text."""
    frame = _rows(
        **{
            "protocol": ["dca"] * 4,
            "grid.threat.colluding_servers": [[], [], ["compute-0"], ["compute-0"]],
            "status": ["released"] * 4,
            "privacy.achieved_epsilon": [0.9, 0.95, float("inf"), float("inf")],
            "privacy.target_epsilon": [1.0] * 4,
            "privacy.guarantee_met": [True, True, False, False],
            "privacy.non_private": [False] * 4,
        }
    )
    page = render_html(frame, results_dir="out", study={"name": "servers"})
    assert "[compute-0]" in page and "Study report: servers" in page
