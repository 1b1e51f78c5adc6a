"""Summarisation on a user's own CSV (issue 23): the file is the set-up, it runs the
protocol exactly as the built-in set-up does, the paper's claims hold on it, and every
bad input is a named error before a run."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privsim.api import load_scenario, run, validate
from privsim.kit.result import without_timing
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.protocols.summarization.data import SetUp, build_setup
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.sim.streams import Streams

FEATURES = ["x0", "x1", "x2", "x3", "x4"]

#: §4's parameters, as the built-in scenario has them (the synthetic set-up, K = 4,
#: p = 100, d = 140, T_init = d^1.5), with ε_auc = 0.5 (the studies' value) and a budget
#: the ledger's composition of them fits.
PAPER: dict[str, Any] = {
    "name": "my-covariate-shift",
    "seed": 2019,
    "protocol": "summarization",
    "population": {"clients": 4},
    "privacy": {"epsilon": 100.0, "delta": 1e-4, "neighbour": "add_remove"},
    "network": {"encryption": "none"},
    "summarization": {
        "dataset": "synthetic",
        "synthetic_records": 4000,
        "owners": 4,
        "summary_size": 100,
        "dimension": 140,
        "gamma": 0.1,
        "eta": 0.05,
        "t_init": 1656,
        "t_sub": 5,
        "epsilon_validation": 0.01,
        "epsilon_first": 0.05,
        "summary_scale": 0.01,
        "auction_epsilon": 0.5,
        "tau": 3,
        "seed_size": 150,
    },
}


def _scenario(base: dict[str, Any], **table: Any) -> dict[str, Any]:
    return {**base, "summarization": {**base["summarization"], **table}}


def _run(data: dict[str, Any], seed: int) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(scenario_from_dict(data), seed).to_dict()


def write_setup_csv(path: Path, setup: SetUp, rng: np.random.Generator) -> None:
    """``setup`` as a user would hand it over: one row per point with a ``role`` column,
    the roles interleaved at random (each role's rows keep their order), the validation
    and seed rows unlabelled, and a text column the scenario does not name."""
    blocks: list[tuple[str, Any, Any]] = [
        (f"owner-{k}", x, y) for k, (x, y) in enumerate(setup.owners)
    ]
    blocks += [
        ("validation", setup.validation, None),
        ("test", *setup.test),
        ("seed", setup.seed[0], None),
    ]
    lines = {
        role: iter(
            [
                ",".join(repr(float(v)) for v in row)
                + f",{'' if y is None else int(y[i])},{role},note {i}"
                for i, row in enumerate(x)
            ]
        )
        for role, x, y in blocks
    }
    order = rng.permutation(np.repeat([r for r, _, _ in blocks], [len(x) for _, x, _ in blocks]))
    body = [next(lines[role]) for role in order]
    path.write_text("\n".join([",".join([*FEATURES, "label", "role", "comment"]), *body]) + "\n")


def _paper_csv(tmp_path: Path, seed: int) -> tuple[Path, dict[str, Any]]:
    """The built-in synthetic set-up of replication ``seed`` written as a user's CSV, and
    the scenario that reads it."""
    cfg = SummarizationConfig(**PAPER["summarization"])
    setup = build_setup(cfg, Streams(seed).generator("summarization", "data"))
    path = tmp_path / "shift.csv"
    write_setup_csv(path, setup, np.random.default_rng(seed))
    data = _scenario(PAPER, dataset="csv", csv_path=str(path), features=FEATURES, target="label")
    return path, data


def test_a_csv_of_the_built_in_set_up_gives_the_built_in_run(tmp_path):
    """The same points (written with repr, read back exactly), unstandardised, at the same
    seed: the whole result agrees with the synthetic set-up's but for the data's name."""
    _, data = _paper_csv(tmp_path, 5)
    mine = _run(_scenario(data, standardise=False), 5)
    builtin = _run(PAPER, 5)
    assert mine["summarization"].pop("dataset") == "shift"
    assert builtin["summarization"].pop("dataset") == "synthetic"
    for result in (mine, builtin):
        result.pop("scenario")
    assert without_timing(mine) == without_timing(builtin)


SEEDS = range(10)


@pytest.fixture(scope="module")
def paper_runs(tmp_path_factory) -> tuple[list[dict[str, Any]], float]:
    """Ten replications (seeds 0–9: h1, the MWEM noise, the coins and the uniform draw
    vary; the file, i.e. the split, is fixed) of §4's parameters on one user-shaped CSV,
    its features standardised (the default), about 1.5 s each; and the test set's
    majority-class rate (0.764: the owners' rows are 72 % positive, the target's 24 %)."""
    path, data = _paper_csv(tmp_path_factory.mktemp("paper"), 2019)
    table = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8")
    test = table["label"][table["role"] == "test"]
    majority = max(float(np.mean(test == 1)), float(np.mean(test == 0)))
    return [_run(data, seed) for seed in SEEDS], majority


# The tolerances below come from the replications' own spread: a mean over the seeds is
# compared with a bar of a few standard errors of that mean (sd/√10). The figures quoted
# were measured on seeds 0–11 of the same file, features scaled by the seed rows.


def test_on_a_users_csv_the_private_summary_sits_between_greedy_and_uniform_in_mmd(
    paper_runs,
):
    """The claim the built-in set-up's test checks, greedy ≤ private < uniform in MMD² to
    D_v: greedy ≤ private at every seed, and the paired difference uniform − private
    must exceed 4 standard errors of its mean (a one-sided z of 4). Measured: private
    0.158 ± 0.087, uniform 0.566 ± 0.029, greedy 0.0001; the paired difference 0.408,
    sd 0.096, so the bar, ≈ 0.12 at 10 seeds, is under a third of the margin."""
    runs, _ = paper_runs
    mmd = np.array(
        [
            [r["methods"][m]["accuracy"]["mmd2"] for m in ("greedy", "private", "uniform")]
            for r in runs
        ]
    )
    greedy, private, uniform = mmd.T
    assert np.all(greedy <= private)
    gap = uniform - private
    assert gap.mean() > 4 * gap.std(ddof=1) / np.sqrt(len(gap))
    assert all(r["methods"]["greedy"]["privacy"]["non_private"] for r in runs)


def test_on_a_users_csv_the_curator_is_parsimonious_and_the_budget_holds(paper_runs):
    """Parsimony (§3, redone for the private coins in docs/reproductions/summarization-details.md): the owners'
    points accessed have expectation at most ``parsimony_bound`` (p·Σp_i + K·⌊p/τ⌋);
    their mean over the seeds may exceed it by at most 3 standard errors (measured:
    176 ± 6 against a bound of 268.8). The guarantee is met in every replication and
    the run holds the file's split."""
    runs, _ = paper_runs
    accessed = np.array([r["summarization"]["owner_points_accessed"] for r in runs])
    bound = runs[0]["summarization"]["parsimony_bound"]
    assert accessed.mean() <= bound + 3 * accessed.std(ddof=1) / np.sqrt(len(accessed))
    for r in runs:
        d = r["summarization"]
        assert r["status"] == "released" and r["privacy"]["guarantee_met"] is True
        # The generator's 4000 owner points, a quarter of the 300 target points owner 0
        # does not hold as D_v (the rest the test set), 150 seed points.
        assert d["dataset"] == "shift" and sum(d["owner_points"]) == 4000
        assert (d["validation_points"], d["seed_points"]) == (75, 150)
        assert d["points_accessed"] == d["owner_points_accessed"] + d["validation_points"]
        assert r["accuracy"]["size"] == d["summary_size"] - d["empty_epochs"]


def test_on_a_users_csv_the_private_summary_is_as_accurate_as_uniform(paper_runs):
    """The paper's other claim, private greedy beating uniform in target accuracy, does
    not hold on the built-in set-ups (docs/reproductions/summarization-details.md, Results) and is not asserted
    here. Checked: the private summary loses nothing against uniform (the paired
    difference private − uniform in linear-SVM accuracy may fall below 0 by at most 3
    standard errors of its mean) and its classifier beats predicting the test set's
    majority class (by 3 standard errors). Measured on the 225 test points: private
    0.815 ± 0.028, uniform 0.810 ± 0.030, greedy 0.839 ± 0.015; the majority class
    0.764, so the bar (≈ 0.79 at 10 seeds) sits 2.7 standard errors under the expected
    mean."""
    runs, majority = paper_runs
    acc = np.array(
        [
            [r["methods"][m]["accuracy"]["svm_accuracy"] for m in ("private", "uniform")]
            for r in runs
        ]
    )
    private, uniform = acc.T
    gap = private - uniform
    assert gap.mean() > -3 * gap.std(ddof=1) / np.sqrt(len(gap))
    assert private.mean() > majority + 3 * private.std(ddof=1) / np.sqrt(len(private))


# ------------------------------------------------------------------ named errors

#: The small example's set-up (K = 3, p = 5): owners 0–2 hold 10 rows each, then 4
#: validation (unlabelled), 4 test and 3 seed rows.
HEADER = "a,b,y,role"


def _rows(per_owner: int = 10) -> list[list[str]]:
    rng = np.random.default_rng(0)
    rows = []
    for k in range(3):
        for i in range(per_owner):
            rows.append([f"{rng.normal():.4f}", f"{rng.normal():.4f}", str(i % 2), f"owner-{k}"])
    for role, n in (("validation", 4), ("test", 4), ("seed", 3)):
        for i in range(n):
            label = "" if role == "validation" else str(i % 2)
            rows.append([f"{rng.normal():.4f}", f"{rng.normal():.4f}", label, role])
    return rows


SMALL: dict[str, Any] = {
    "name": "small-csv",
    "seed": 3,
    "protocol": "summarization",
    "population": {"clients": 3},
    "privacy": {"epsilon": 40.0, "delta": 1e-5},
    "network": {"encryption": "none"},
    "summarization": {
        "dataset": "csv",
        "features": ["a", "b"],
        "target": "y",
        "owners": 3,
        "summary_size": 5,
        "dimension": 16,
        "t_init": 64,
    },
}


def _small(path: Path, **table: Any) -> dict[str, Any]:
    return _scenario(SMALL, **{"csv_path": str(path), **table})


def _write(path: Path, rows: list[list[str]], header: str = HEADER) -> Path:
    path.write_text("\n".join([header, *(",".join(r) for r in rows)]) + "\n", encoding="utf-8")
    return path


def _edit(row: int, column: int, value: str) -> list[list[str]]:
    rows = _rows()
    rows[row][column] = value
    return rows


def test_the_small_csv_validates_and_runs(tmp_path):
    result = _run(_small(_write(tmp_path / "ok.csv", _rows())), 3)
    assert result["status"] == "released"
    assert result["summarization"]["owner_points"] == [10, 10, 10]
    assert result["summarization"]["validation_points"] == 4
    assert result["summarization"]["seed_points"] == 3


def test_a_relative_path_is_read_from_the_working_directory_and_validate_passes(
    tmp_path, monkeypatch
):
    """As BLR's csv_path: relative to where privsim runs, not to the scenario file."""
    (tmp_path / "data").mkdir()
    _write(tmp_path / "data" / "mine.csv", _rows())
    toml = tmp_path / "mine.toml"
    toml.write_text(
        """name = "mine"
protocol = "summarization"
[population]
clients = 3
[privacy]
epsilon = 40.0
delta = 1e-5
[network]
encryption = "none"
[summarization]
dataset = "csv"
csv_path = "data/mine.csv"
features = ["a", "b"]
target = "y"
owners = 3
summary_size = 5
dimension = 16
t_init = 64
"""
    )
    monkeypatch.chdir(tmp_path)
    assert validate(load_scenario(toml)).name == "mine"
    monkeypatch.chdir(tmp_path / "data")
    with pytest.raises(ScenarioError) as info:
        load_scenario(toml)
    assert info.value.field == "summarization.csv_path" and "does not exist" in str(info.value)


def test_a_changed_file_is_read_again(tmp_path):
    path = _write(tmp_path / "mine.csv", _rows())
    scenario_from_dict(_small(path))
    _write(path, _edit(0, 1, "a lot"))  # another size: a new version of the file
    with pytest.raises(ScenarioError, match="not numeric"):
        scenario_from_dict(_small(path))


FILE_CASES = {
    "missing": (None, "summarization.csv_path", "does not exist"),
    "directory": ("<dir>", "summarization.csv_path", "is a directory"),
    "empty": ("", "summarization.csv_path", "the file is empty"),
    "header only": (HEADER + "\n", "summarization.csv_path", "no data rows"),
    "ragged": (HEADER + "\n1,2,0,owner-0,9,9\n", "summarization.csv_path", "not a well-formed CSV"),
}


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_a_bad_file_is_a_named_error(tmp_path, case):
    content, field, words = FILE_CASES[case]
    path = tmp_path / "bad.csv"
    if content == "<dir>":
        path.mkdir()
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(_small(path))
    assert info.value.field == field and words in str(info.value) and "Fix:" in str(info.value)


def test_a_file_that_is_not_utf8_is_a_named_error(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes((HEADER + "\n1,2,0,owner-0\n").encode() + b"\xff\xfe,1,0,test\n")
    with pytest.raises(ScenarioError, match=r"not UTF-8 text.*Fix: save it as a UTF-8 CSV"):
        scenario_from_dict(_small(path))


#: (rows or header change, table changes, field named, words in the message).
CASES: dict[str, tuple[Any, dict[str, Any], str, str]] = {
    "no feature column": (None, {"features": ["a", "c"]}, "summarization.features", "['c']"),
    "no label column": (None, {"target": "label"}, "summarization.target", "['label']"),
    "no role column": (None, {"role_column": "split"}, "summarization.role_column", "['split']"),
    "text in a feature": (_edit(3, 0, "SECRET-42"), {}, "summarization.features", "data row 4"),
    "NaN in a feature": (_edit(3, 1, "nan"), {}, "summarization.features", "NaN"),
    "inf in a feature": (_edit(3, 1, "inf"), {}, "summarization.features", "infinite"),
    "empty feature cell": (_edit(33, 0, ""), {}, "summarization.features", "data row 34"),
    "empty role": (_edit(5, 3, ""), {}, "summarization.role_column", "data row 6"),
    "unknown role": (_edit(5, 3, "SECRET-42"), {}, "summarization.role_column", "not a role"),
    "owner beyond K": (_edit(5, 3, "owner-7"), {}, "summarization.owners", "owner-7's"),
    "owner with no rows": (
        None,
        {"owners": 4, "population.clients": 4},
        "summarization.owners",
        "no row is owner-3's",
    ),
    "no validation rows": (
        [r for r in _rows() if r[3] != "validation"],
        {},
        "summarization.role_column",
        "'validation'",
    ),
    "no test rows": (
        [r for r in _rows() if r[3] != "test"],
        {},
        "summarization.role_column",
        "'test'",
    ),
    "no seed rows": (
        [r for r in _rows() if r[3] != "seed"],
        {},
        "summarization.role_column",
        "'seed'",
    ),
    "text label": (_edit(2, 2, "yes"), {}, "summarization.target", "not numeric"),
    "missing owner label": (_edit(2, 2, ""), {}, "summarization.target", "data row 3"),
    "missing test label": (_edit(35, 2, ""), {}, "summarization.target", "data row 36"),
    "fractional label": (_edit(2, 2, "0.5"), {}, "summarization.target", "class label"),
    "one class": (
        [[a, b, "1" if role.startswith("owner") else y, role] for a, b, y, role in _rows()],
        {},
        "summarization.target",
        "1 class(es)",
    ),
    "a regression target": (
        [[a, b, str(i), role] for i, (a, b, _, role) in enumerate(_rows(per_owner=40))],
        {},
        "summarization.target",
        "120 class(es)",
    ),
    "constant feature": (
        [[a, "1.0", y, role] for a, _, y, role in _rows()],
        {},
        "summarization.features",
        "constant over the seed rows",
    ),
    "summary larger than the owners' rows": (
        None,
        {"summary_size": 31},
        "summarization.summary_size",
        "owners holding 30",
    ),
    "no csv_path": (None, {"csv_path": ""}, "summarization.csv_path", "needs csv_path"),
    "label is a feature": (None, {"features": ["a", "y"]}, "summarization.target", "also listed"),
    "feature twice": (None, {"features": ["a", "a"]}, "summarization.features", "listed twice"),
    "role is a feature": (
        None,
        {"role_column": "a"},
        "summarization.role_column",
        "also a feature",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_contents_and_fields_are_named_errors(tmp_path, case):
    rows, changes, field, words = CASES[case]
    path = _write(tmp_path / "bad.csv", _rows() if rows is None else rows)
    data = _small(path, **{k: v for k, v in changes.items() if "." not in k})
    if "population.clients" in changes:
        data["population"] = {"clients": changes["population.clients"]}
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data)
    message = str(info.value)
    assert info.value.field == field, message
    assert words in message and "Fix:" in message
    assert "SECRET" not in message  # the file's contents are never echoed


def test_validation_and_seed_rows_need_no_label(tmp_path):
    """D_v is unlabelled and the seed set's labels are not used: empty cells are fine
    there, and a standardised run is scaled by the seed rows' spread."""
    rows = [[a, b, "" if role == "seed" else y, role] for a, b, y, role in _rows()]
    result = _run(_small(_write(tmp_path / "ok.csv", rows)), 1)
    assert result["status"] == "released" and result["methods"]["private"]["status"] == "released"
