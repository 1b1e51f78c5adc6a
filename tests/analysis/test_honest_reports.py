"""Study reports show what did not release and what did not hold: abort, release and
guarantee-met rates per cell, aborted cells in tables and figures, the target ε on
ε figures, non-private baselines labelled as such, integer grid fields on categorical
axes, medians with reproducible bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privsim.analysis.figures import (
    ABORTED_LABEL,
    BASELINE_SUFFIX,
    INFINITE_LABEL,
    OVER_LABEL,
    TARGET_LABEL,
    StudyFigures,
    draw_with,
)
from privsim.analysis.summary import summarise
from privsim.studies.report import metric_table

ABSENT = (0.0, 0.1, 0.5)  # at 0.5 every replication aborts
COLLUDING = (0, 2, 10)
REPS = 4


def _dropout_frame() -> pd.DataFrame:
    """A DCA dropout sweep: absent × colluding × 4 replications. Nothing releases at
    absent = 0.5; at absent = 0.1 one replication in four aborts; with 10 colluders one
    released replication in each cell misses its guarantee (ε 1.2 > 1)."""
    rng = np.random.default_rng(15)
    rows = []
    for absent in ABSENT:
        for colluding in COLLUDING:
            for rep in range(REPS):
                released = absent < 0.5 and not (absent == 0.1 and rep == 0)
                over = colluding == 10 and rep == 1
                rows.append(
                    {
                        "protocol": "dca",
                        "status": "released" if released else "aborted",
                        "replication": rep,
                        "grid.faults.absent": absent,
                        "grid.threat.colluding_clients": colluding,
                        "accuracy.rmse": float(rng.uniform(1, 2)) if released else np.nan,
                        "privacy.achieved_epsilon": (1.2 if over else 0.9) if released else np.nan,
                        "privacy.target_epsilon": 1.0,
                        "privacy.guarantee_met": (not over) if released else None,
                        "privacy.non_private": False,
                        "communication.roles.client.bytes_sent_mean": 100.0 + colluding,
                    }
                )
    return pd.DataFrame(rows)


def _cell(summary: pd.DataFrame, metric: str, absent: float, colluding: int) -> pd.Series:
    rows = summary[
        (summary["metric"] == metric)
        & (summary["grid.faults.absent"] == absent)
        & (summary["grid.threat.colluding_clients"] == colluding)
    ]
    assert len(rows) == 1
    return rows.iloc[0]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _dropout_frame()


@pytest.fixture(scope="module")
def summary(frame: pd.DataFrame) -> pd.DataFrame:
    return summarise(frame)


def test_the_summary_carries_abort_release_and_met_rates(summary):
    for column in ("abort_rate", "release_rate", "met_rate", "median_lo", "median_hi"):
        assert column in summary
    partial = _cell(summary, "accuracy.rmse", 0.1, 10)
    assert partial["rows"] == REPS and partial["released"] == 3 and partial["aborted"] == 1
    assert partial["abort_rate"] == pytest.approx(0.25)
    assert partial["release_rate"] == pytest.approx(0.75)
    assert partial["met_rate"] == pytest.approx(2 / 3)  # one of three released is over
    assert _cell(summary, "accuracy.rmse", 0.0, 0)["met_rate"] == 1.0


def test_an_aborted_cell_stays_in_the_summary_and_the_table(summary):
    for colluding in COLLUDING:
        gone = _cell(summary, "accuracy.rmse", 0.5, colluding)
        assert gone["n"] == 0 and gone["abort_rate"] == 1.0 and np.isnan(gone["median"])
    rows = summary[summary["metric"] == "accuracy.rmse"]
    table = metric_table(rows, ["grid.faults.absent", "grid.threat.colluding_clients"])
    assert len(table) == len(ABSENT) * len(COLLUDING)
    aborted = table[table["grid.faults.absent"] == 0.5]
    assert list(aborted["median [95% CI]"]) == ["no release"] * len(COLLUDING)
    assert list(aborted["abort rate"]) == ["100%"] * len(COLLUDING)
    assert list(aborted["released"]) == [0] * len(COLLUDING)


def _marks(ax, marker_label: str) -> int:
    """Points drawn by the scatters of ``marker_label``'s colour (the first carries the
    label, one scatter call per line)."""
    colour = {ABORTED_LABEL: "dimgrey", OVER_LABEL: "red"}[marker_label]
    from matplotlib.colors import to_rgba

    return sum(
        len(c.get_offsets())
        for c in ax.collections
        if len(c.get_facecolors()) and tuple(c.get_facecolors()[0]) == to_rgba(colour)
    )


def test_aborted_cells_are_plotted_on_the_floor(frame, summary, tmp_path):
    kit = StudyFigures(frame, summary, tmp_path)
    (path,) = kit.series(["accuracy.rmse"], axes=["grid.faults.absent"])
    fig = kit.drawn[path]
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_label().startswith("colluding")]
    assert len(lines) == len(COLLUDING)
    # every cell is on the x axis: 2 released cells per line, 1 aborted mark per line
    assert all(np.isfinite(line.get_ydata()).sum() == 2 for line in lines)
    assert _marks(ax, ABORTED_LABEL) == len(COLLUDING)
    assert ABORTED_LABEL in ax.get_legend_handles_labels()[1]
    assert len(fig.axes) == 2  # the rate panel: some cells did not release
    assert "released" in fig.axes[1].get_legend_handles_labels()[1]


def test_the_target_epsilon_is_drawn_and_over_budget_cells_marked(frame, summary, tmp_path):
    kit = StudyFigures(frame, summary, tmp_path)
    (path,) = kit.series(["privacy.achieved_epsilon"], axes=["grid.faults.absent"])
    ax = kit.drawn[path].axes[0]
    targets = [line for line in ax.get_lines() if line.get_label() == TARGET_LABEL]
    assert targets and all(np.allclose(line.get_ydata(), 1.0) for line in targets)
    # T = 10 misses its guarantee at absent = 0 and 0.1 (released), not at 0.5 (none)
    assert _marks(ax, OVER_LABEL) == 2


def test_integer_grid_fields_sit_on_a_categorical_axis(frame, summary, tmp_path):
    kit = StudyFigures(frame, summary, tmp_path)
    (path,) = kit.series(["accuracy.rmse"], axes=["grid.threat.colluding_clients"])
    fig = kit.drawn[path]
    low = fig.axes[-1]  # the x axis is shared; its ticks are on the lowest panel
    assert list(low.get_xticks()) == [0, 1, 2]
    assert [t.get_text() for t in low.get_xticklabels()] == ["0", "2", "10"]
    line = next(x for x in fig.axes[0].get_lines() if x.get_label().startswith("probability"))
    assert list(line.get_xdata()) == [0.0, 1.0, 2.0]
    # legends in words: the axis label, not the field path
    assert line.get_label() == "probability a client is absent = 0"


def test_the_protocol_figures_and_the_communication_figure(frame, summary, tmp_path):
    kit = StudyFigures(frame, summary, tmp_path)
    drawn = draw_with(kit)
    names = {p.name for p in drawn}
    assert "privacy_achieved_epsilon_vs_faults_absent.png" in names
    eps = kit.drawn[tmp_path / "privacy_achieved_epsilon_vs_faults_absent.png"].axes[0]
    assert TARGET_LABEL in eps.get_legend_handles_labels()[1]
    assert all("grid." not in label for label in eps.get_legend_handles_labels()[1])


def test_a_communication_figure_per_size_axis(tmp_path):
    frame = _dropout_frame()
    frame["grid.population.clients"] = frame["grid.threat.colluding_clients"] * 10 + 20
    frame["communication.roles.compute.bytes_sent_mean"] = 3.0 * frame["grid.population.clients"]
    frame = frame.drop(columns=["grid.threat.colluding_clients"])
    kit = StudyFigures(frame, summarise(frame), tmp_path)
    (path,) = kit.communication()
    assert path.name == "bytes_per_party_vs_population_clients.png"
    ax = kit.drawn[path].axes[0]
    roles = {t.get_text() for t in ax.get_legend().get_texts()}
    assert roles == {"client", "compute"}
    assert [t.get_text() for t in ax.get_xticklabels()] == ["20", "40", "120"]
    assert ax.get_yscale() == "log"


def _blr_frame() -> pd.DataFrame:
    """Two methods side by side: NP (non-private; its guarantee_met is False, as a
    release without a guarantee) and TA, over budget at ε = 10 in every replication."""
    rows = []
    for eps in (1.0, 10.0):
        for rep in range(3):
            rows.append(
                {
                    "protocol": "blr",
                    "status": "released",
                    "grid.privacy.epsilon": eps,
                    "methods.NP.accuracy.mae": 1.0 + 0.01 * rep,
                    "methods.NP.privacy.non_private": True,
                    "methods.NP.privacy.guarantee_met": False,
                    "methods.TA.accuracy.mae": 2.0 + 0.1 * rep,
                    "methods.TA.privacy.non_private": False,
                    "methods.TA.privacy.guarantee_met": eps < 5,
                    "methods.TA.privacy.target_epsilon": eps,
                }
            )
    return pd.DataFrame(rows)


def test_a_non_private_baseline_is_labelled_not_marked_over_budget(tmp_path):
    frame = _blr_frame()
    summary = summarise(frame)
    np_row = summary[summary["metric"] == "methods.NP.accuracy.mae"]
    assert np_row["non_private"].all() and np_row["met_rate"].isna().all()
    kit = StudyFigures(frame, summary, tmp_path)
    (path,) = kit.by_method("accuracy.mae", {"NP": ("black", "-"), "TA": ("tab:blue", "-")})
    ax = kit.drawn[path].axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "NP" + BASELINE_SUFFIX in labels
    # one red mark: TA at ε = 10; none on NP
    assert _marks(ax, OVER_LABEL) == 1
    (x, y) = next(c for c in ax.collections if c.get_label() == OVER_LABEL).get_offsets()[0]
    assert (x, y) == (10.0, pytest.approx(2.1))


def test_bootstrap_interval_covers_the_median_and_is_reproducible():
    from privsim.kit.stats import bootstrap_median_ci

    values = np.random.default_rng(3).lognormal(0.0, 1.0, size=60)
    lo, hi = bootstrap_median_ci(values, name=("x",))
    assert lo <= np.median(values) <= hi
    assert (lo, hi) == bootstrap_median_ci(values, name=("x",))
    a = summarise(_dropout_frame())
    b = summarise(_dropout_frame())
    pd.testing.assert_frame_equal(a, b)
    ok = a[a["n"] > 0]
    assert ((ok["median_lo"] <= ok["median"]) & (ok["median"] <= ok["median_hi"])).all()


def test_bootstrap_interval_has_its_nominal_coverage():
    """200 samples of n = 50 from N(0, 1): the 95% interval should cover the true median
    0 in about 190. The percentile bootstrap of a median is close to nominal at n = 50;
    the binomial sd of the count is sqrt(200·0.95·0.05) ≈ 3.1, so 175–199 allows for
    ±5 sd around a coverage between 0.92 and 0.97."""
    from privsim.kit.stats import bootstrap_median_ci

    rng = np.random.default_rng(12)
    covered = 0
    for i in range(200):
        lo, hi = bootstrap_median_ci(rng.normal(size=50), resamples=500, name=("cov", i))
        covered += lo <= 0.0 <= hi
    assert 175 <= covered <= 199


def test_the_paired_test_detects_a_shift_and_reports_its_power():
    from privsim.kit.stats import paired_test

    rng = np.random.default_rng(5)
    b = rng.lognormal(0.0, 0.5, size=100)
    noise = rng.normal(0.0, 0.05, size=100)
    shifted = paired_test(b * 1.3 + noise, b, alternative="greater", shift=0.1, name=("s",))
    assert shifted.p < 1e-6 and shifted.median_diff > 0
    assert shifted.diff_ci[0] > 0
    same = paired_test(b + noise, b, shift=0.1, name=("n",))
    # a 0.1 shift is two sd of the paired noise: with 100 pairs the test all but always
    # finds it
    assert same.power > 0.9 and same.p > 0.001


def test_a_heavy_tailed_single_draw_is_flagged_in_the_run_report():
    from privsim.analysis.report import outlier_lines

    result = {
        "methods": {
            "NP": {"accuracy": {"mae": 0.37}},
            "TA": {"accuracy": {"mae": 501.5}},
            "proj_TA": {"accuracy": {"mae": 0.51}},
            "input_perturbation": {"accuracy": {"mae": 9.2}},
        }
    }
    (line,) = outlier_lines(result)
    assert line.startswith("Outlier     TA: mae 501.5")
    result["methods"]["TA"]["accuracy"]["mae"] = 2.1
    assert outlier_lines(result) == []


def _figure2_frame(pairs: int = 40) -> pd.DataFrame:
    """One Figure 2 cell: TA lognormal, DDP = TA times a 5% multiplicative jitter (no
    shift), the projected methods at half the error, input perturbation at three times
    DDP's."""
    rng = np.random.default_rng(2017)
    ta = rng.lognormal(1.0, 0.5, size=pairs)
    ddp = ta * rng.lognormal(0.0, 0.05, size=pairs)
    rows = {
        "protocol": "blr",
        "status": "released",
        "grid.privacy.epsilon": 1.0,
        "methods.TA.accuracy.mae": ta,
        "methods.DDP.accuracy.mae": ddp,
        "methods.proj_TA.accuracy.mae": 0.5 * ta,
        "methods.proj_DDP.accuracy.mae": 0.5 * ddp,
        "methods.input_perturbation.accuracy.mae": 3.0 * ddp,
    }
    return pd.DataFrame(rows)


def test_the_figure2_checks_state_intervals_tests_power_and_verdicts():
    from privsim.protocols.blr.study_checks import figure2_checks

    text = figure2_checks(_figure2_frame())
    # DDP − TA: a 5% jitter without a shift is not a difference; a 10% shift of the
    # median (~0.27 on medians near 2.7, against a paired spread of ~0.14) is found
    # with power near 1 by 40 pairs
    assert "- distributed ≠ trusted aggregator: 0 of 2 comparisons" in text
    assert "- projection lowers the MAE: 2 of 2 comparisons" in text
    assert "- input perturbation worse than DDP: 1 of 1 cells" in text
    row = next(line for line in text.splitlines() if line.startswith("| 1.0 | 40 |"))
    assert row.count("[") == 6  # medians and the differences carry their intervals
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[6]) >= 0.9 and float(cells[11]) >= 0.9  # power of both tests
    ratio = next(line for line in text.splitlines() if "3.00 [3.00, 3.00]" in line)
    assert ratio  # input perturbation / DDP = 3 exactly in every pair


def test_the_blr_section_names_its_test():
    from privsim.protocols.blr.study_checks import sections

    ((title, body),) = sections(_figure2_frame())
    assert title.startswith("Distributed against trusted aggregator")
    assert "Wilcoxon signed-rank test of the paired MAE differences" in body
    assert "Holm" in body and "power" in body


def test_cells_with_an_infinite_epsilon_are_kept_and_drawn_at_the_top(tmp_path):
    """Every compute node colluding makes ε = ∞ in each replication: the cell keeps its
    rows (n counts them, ``infinite`` says how many are ∞, the median is ∞) and the
    figure marks it at the top of the axes instead of leaving a gap."""
    rows = [
        {
            "protocol": "dca",
            "status": "released",
            "replication": rep,
            "grid.threat.colluding_servers": servers,
            "privacy.achieved_epsilon": np.inf if servers == "all" else 0.9 + 0.01 * rep,
            "privacy.target_epsilon": 1.0,
            "privacy.guarantee_met": servers != "all",
            "privacy.non_private": False,
        }
        for servers in ("none", "all")
        for rep in range(REPS)
    ]
    frame = pd.DataFrame(rows)
    summary = summarise(frame)
    broken = summary[summary["grid.threat.colluding_servers"] == "all"].iloc[0]
    assert broken["n"] == REPS and broken["infinite"] == REPS
    assert np.isposinf(broken["median"]) and np.isposinf(broken["median_hi"])
    assert broken["met_rate"] == 0.0
    honest = summary[summary["grid.threat.colluding_servers"] == "none"].iloc[0]
    assert honest["infinite"] == 0 and np.isfinite(honest["median"])
    kit = StudyFigures(frame, summary, tmp_path)
    (path,) = kit.series(["privacy.achieved_epsilon"], axes=["grid.threat.colluding_servers"])
    ax = kit.drawn[path].axes[0]
    assert INFINITE_LABEL in ax.get_legend_handles_labels()[1]
    tops = [c for c in ax.collections if c.get_label() == INFINITE_LABEL]
    assert len(tops) == 1 and len(tops[0].get_offsets()) == 1
