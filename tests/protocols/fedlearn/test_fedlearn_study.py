"""A fedlearn study end to end: every replication keeps its per-round curves, the report
writes them as one long table and draws the learning curves (accuracy by round, the
privacy–utility curve, ε by round) as PNGs and in the HTML page, with their replication
bands; and the bands are the percentiles they claim to be."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import tomli_w

from privsim import registry
from privsim.analysis.curves import CURVES, curves_table
from privsim.cli import main
from privsim.protocols.fedlearn import EXAMPLE
from privsim.protocols.fedlearn.figures import PLOTS, curves_of, html_figures
from privsim.studies import load
from privsim.studies.study import apply_fields

ROUNDS, REPLICATIONS = 3, 2
CELLS = ("dca", "trusted")
FIGURES = {plot.name for plot in PLOTS}  # accuracy_vs_round, accuracy_vs_epsilon, ...


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny fedlearn study (2 aggregations × 2 replications × 3 rounds) swept and
    reported through the command line, HTML page included."""
    root = tmp_path_factory.mktemp("fedlearn-study")
    base = apply_fields(EXAMPLE, {"training.rounds": ROUNDS, "network.encryption": "none"})
    (root / "base.toml").write_text(tomli_w.dumps(base), encoding="utf-8")
    study = {
        "name": "fedlearn-curves",
        "seed": 5,
        "replications": REPLICATIONS,
        "base": "base.toml",
        "grid": {"training.aggregation": list(CELLS)},
    }
    (root / "study.toml").write_text(tomli_w.dumps(study), encoding="utf-8")
    out = root / "out"
    assert main(["sweep", str(root / "study.toml"), "--out", str(out), "--workers", "1"]) == 0
    assert main(["report", str(out), "--html"]) == 0
    return out


def test_the_study_view_keeps_the_curves_and_draws_them():
    view = registry.get("fedlearn").study
    assert view.curves == "curves"
    assert view.figures is not None and view.html_figures is not None


def test_every_replication_keeps_its_rounds(study_dir: Path):
    frame = load(study_dir)
    assert len(frame) == len(CELLS) * REPLICATIONS
    assert set(frame["status"]) == {"released"}
    for rounds in frame[CURVES]:
        assert [r["round"] for r in rounds] == list(range(1, ROUNDS + 1))
        assert {"epsilon", "test_accuracy", "bytes", "status"} <= set(rounds[0])


def test_the_curves_table_has_a_line_per_cell_replication_and_round(study_dir: Path):
    path = study_dir / "report" / "curves.csv"
    table = pd.read_csv(path)
    assert len(table) == len(CELLS) * REPLICATIONS * ROUNDS
    assert not table.duplicated(["cell", "replication", "round"]).any()
    per_run = table.groupby(["cell", "replication"])["round"].apply(sorted)
    assert len(per_run) == len(CELLS) * REPLICATIONS
    assert all(rounds == list(range(1, ROUNDS + 1)) for rounds in per_run)
    assert set(table["grid.training.aggregation"]) == set(CELLS)
    for column in ("row_id", "seed", "run_status", "epsilon", "test_accuracy", "bytes.client"):
        assert column in table, column
    # the file holds what the rows hold: ε so far grows round by round in every run
    assert (table.groupby("row_id")["epsilon"].diff().dropna() >= 0).all()
    frame = load(study_dir)
    assert len(curves_table(frame)) == len(table)
    assert "curves.csv" in (study_dir / "report" / "summary.md").read_text(encoding="utf-8")


def test_the_curve_figures_are_written(study_dir: Path):
    report = study_dir / "report"
    for name in FIGURES:
        png = report / f"{name}.png"
        assert png.is_file() and png.stat().st_size > 1000, name
    # the final accuracy against the grid field, from the summary
    assert (report / "accuracy_test_accuracy_vs_training_aggregation.png").stat().st_size > 1000


def test_the_html_page_draws_the_curves_with_their_bands(study_dir: Path):
    page = (study_dir / "report" / "index.html").read_text(encoding="utf-8")
    assert page.count('data-kind="protocol"') == len(FIGURES)
    for i in range(len(FIGURES)):
        assert f'id="protocol-figure-{i}"' in page
    assert "Test accuracy by round" in page
    assert '"fill":"tonexty"' in page.replace(" ", "")  # the bands
    # every figure id on the page is unique (the page's own and the protocol's)
    ids = [part.split('"', 1)[0] for part in page.split('<div id="')[1:]]
    assert len(ids) == len(set(ids))


def _kit(rows: list[dict]) -> SimpleNamespace:
    """A report kit over hand-made rows (one per replication)."""
    frame = pd.DataFrame(rows)
    return SimpleNamespace(
        frame=frame,
        curves=curves_table(frame),
        describe=lambda cols, vals: ", ".join(
            f"{c} = {v}" for c, v in zip(cols, vals, strict=True)
        ),
    )


def test_the_bands_are_the_10th_and_90th_percentiles_over_replications():
    accuracies = [0.1, 0.2, 0.3, 0.4, 0.5]
    rows = [
        {
            "row_id": f"c-r{i}",
            "cell": "c",
            "replication": i,
            "seed": i,
            "protocol": "fedlearn",
            "status": "released",
            "grid.training.aggregation": "dca",
            "privacy.target_epsilon": 4.0,
            CURVES: [
                {"round": 1, "epsilon": 1.0 + i, "test_accuracy": a},
                {"round": 2, "epsilon": "inf" if i == 0 else 2.0, "test_accuracy": a + 0.1},
            ],
        }
        for i, a in enumerate(accuracies)
    ]
    kit = _kit(rows)
    [by_round], dropped = curves_of(kit, "round", "test_accuracy")
    assert dropped == 0 and list(by_round.rounds) == [1, 2] and list(by_round.n) == [5, 5]
    assert by_round.y[0] == pytest.approx(0.3)
    assert by_round.y_lo[0] == pytest.approx(np.percentile(accuracies, 10))  # 0.14
    assert by_round.y_hi[0] == pytest.approx(np.percentile(accuracies, 90))  # 0.46
    assert by_round.target == 4.0 and by_round.label == "median"  # one cell: no grid words
    # the privacy-utility curve: median ε of the round; ε = ∞ left out and counted
    [utility], dropped = curves_of(kit, "epsilon", "test_accuracy")
    assert dropped == 1 and list(utility.n) == [5, 4]
    assert utility.x[0] == pytest.approx(3.0) and utility.x[1] == pytest.approx(2.0)
    titles = [title for title, _ in html_figures(kit)]
    assert any("1 round points with ε = ∞ left out" in t for t in titles)
    assert all(math.isfinite(v) for t in html_figures(kit) for d in t[1]["data"] for v in d["y"])


def test_aborted_and_other_protocols_rows_are_not_in_the_curves():
    rows = [
        {"row_id": "a", "protocol": "fedlearn", "status": "aborted",
         CURVES: [{"round": 1, "test_accuracy": 0.9, "epsilon": 1.0}]},
        {"row_id": "b", "protocol": "dca", "status": "released"},
        {"row_id": "c", "protocol": "fedlearn", "status": "released",
         CURVES: [{"round": 1, "test_accuracy": 0.5, "epsilon": 1.0}]},
    ]  # fmt: skip
    kit = _kit(rows)
    assert list(kit.curves["row_id"]) == ["a", "c"]  # the table keeps every run's rounds
    [curve], _ = curves_of(kit, "round", "test_accuracy")
    assert list(curve.y) == [0.5]  # the figures, only the released runs'


def test_the_curves_csv_escapes_cells_a_spreadsheet_would_run(tmp_path: Path):
    """A grid value or round detail that starts like a formula is written with a leading
    quote (the CSV-export convention), numbers (negative ones too) as they are."""
    from privsim.analysis.curves import write_curves

    rows = [
        {
            "row_id": '=HYPERLINK("http://x")',
            "protocol": "fedlearn",
            "status": "released",
            "grid.dataset.path": "@SUM(A1:A9)",
            CURVES: [{"round": 1, "test_loss": -0.5, "detail": "+cmd|' /C calc'!A0"}],
        }
    ]
    path = write_curves(pd.DataFrame(rows), tmp_path)
    assert path is not None
    table = pd.read_csv(path)
    assert table["row_id"].tolist() == ['\'=HYPERLINK("http://x")']
    assert table["grid.dataset.path"].tolist() == ["'@SUM(A1:A9)"]
    assert table["detail"].tolist() == ["'+cmd|' /C calc'!A0"]
    assert table["test_loss"].tolist() == [-0.5]


def test_the_round_statistics_are_numpys_percentiles_round_by_round():
    """The grouped pass gives, per round, NumPy's percentiles of that round's points
    (rounds of unequal counts, in any order), to the last bit or within 1e-12."""
    from privsim.protocols.fedlearn.figures import HIGH, LOW, _round_stats

    rng = np.random.default_rng(5)
    rounds = rng.integers(1, 40, size=500)
    xs, ys = rng.normal(size=500), rng.exponential(size=500)
    stats = _round_stats(rounds, xs, ys)
    assert stats.shape == (8, np.unique(rounds).size)
    for column, r in enumerate(np.unique(rounds)):
        at = rounds == r
        expected = [
            r,
            *np.percentile(xs[at], [50.0, LOW, HIGH]),
            *np.percentile(ys[at], [50.0, LOW, HIGH]),
            at.sum(),
        ]
        np.testing.assert_allclose(stats[:, column], expected, rtol=1e-12, atol=1e-15)
