"""How the summarization set-ups' features are scaled (issue 23, "No data-dependent
scaling"): by the public seed set by default, as given, or — only to reproduce the
study tables of docs/reproductions/summarization.md — by the owners' own statistics, which the ledger records as a
non-private release."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

from privsim.api import run
from privsim.protocols.summarization import SUMMARIZATION
from privsim.protocols.summarization.accounting import OWNERS_STANDARDISED, STANDARDISATION
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.protocols.summarization.data import SetUp, _scaled, build_setup
from privsim.protocols.summarization.experiment import plan_ledger
from privsim.protocols.summarization.report import report_lines
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError
from privsim.sim.ledger import Status
from tests.conftest import needs_data


def _data(**changes: Any) -> dict[str, Any]:
    return set_fields(SUMMARIZATION.example, changes)


def _run(**changes: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(scenario_from_dict(_data(**changes))).to_dict()


def _setup(seed_x: np.ndarray, rng: np.random.Generator) -> SetUp:
    owners = tuple((rng.normal(5.0, 3.0, (40, 3)), np.zeros(40)) for _ in range(2))
    return SetUp(
        name="made-up",
        owners=owners,
        validation=rng.normal(4.0, 2.0, (10, 3)),
        test=(rng.normal(4.0, 2.0, (10, 3)), np.zeros(10)),
        seed=(seed_x, np.zeros(len(seed_x))),
    )


@pytest.mark.parametrize(("given", "read"), [(True, "seed"), (False, "none"), ("none", "none")])
def test_the_booleans_of_the_csv_input_still_read(given, read):
    assert SummarizationConfig(standardise=given).standardise == read
    assert SummarizationConfig().standardise == "seed"


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"summarization.standardise": "mean"}, "summarization.standardise", "unknown choice"),
        (
            {"summarization.standardise": "owners"},
            "summarization.standardise",
            "public scale",
        ),
        (
            {"summarization.dataset": "digits", "summarization.standardise": "owners"},
            "summarization.standardise",
            "occupancy and wine set-ups only",
        ),
        (
            {
                "summarization.dataset": "wine",
                "summarization.seed_size": 1,
            },
            "summarization.seed_size",
            "spread is 0",
        ),
    ],
)
def test_a_wrong_choice_is_a_named_error(changes, field, words):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(_data(**changes))
    assert info.value.field == field and words in str(info.value), str(info.value)


def test_a_users_csv_is_never_standardised_by_its_owners():
    with pytest.raises(FieldError, match="never standardised by the owners' own") as info:
        SummarizationConfig(
            dataset="csv", csv_path="x.csv", features=("a",), target="y", standardise="owners"
        )
    assert info.value.field == "summarization.standardise"


def test_seed_scaling_uses_the_seed_set_only():
    """Every part is scaled by the seed set's mean and sd: the seed set comes out with
    mean 0 and sd 1, and a change to an owner's record (the one holding a maximum)
    moves no other point."""
    rng = np.random.default_rng(3)
    seed_x = rng.uniform(-4.0, 4.0, (30, 3))
    raw = _setup(seed_x, rng)
    cfg = SummarizationConfig(dataset="wine", standardise="seed")
    scaled = _scaled(raw, cfg, np.zeros(3), np.ones(3))
    np.testing.assert_allclose(scaled.seed[0].mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(scaled.seed[0].std(0), 1.0, rtol=1e-12)
    mean, sd = seed_x.mean(0), seed_x.std(0)
    np.testing.assert_allclose(scaled.owners[1][0], (raw.owners[1][0] - mean) / sd)
    np.testing.assert_allclose(scaled.validation, (raw.validation - mean) / sd)

    x0 = raw.owners[0][0].copy()
    top = int(np.argmax(x0[:, 0]))
    x0[top, 0] += 100.0
    neighbour = SetUp(
        name=raw.name,
        owners=((x0, raw.owners[0][1]), raw.owners[1]),
        validation=raw.validation,
        test=raw.test,
        seed=raw.seed,
    )
    other = _scaled(neighbour, cfg, np.zeros(3), np.ones(3))
    keep = np.arange(len(x0)) != top
    np.testing.assert_array_equal(other.owners[0][0][keep], scaled.owners[0][0][keep])
    np.testing.assert_array_equal(other.owners[1][0], scaled.owners[1][0])
    np.testing.assert_array_equal(other.validation, scaled.validation)


def test_none_keeps_the_data_and_owners_uses_the_statistics_given():
    rng = np.random.default_rng(4)
    raw = _setup(rng.uniform(-4.0, 4.0, (30, 3)), rng)
    kept = _scaled(
        raw, SummarizationConfig(dataset="wine", standardise="none"), np.zeros(3), np.ones(3)
    )
    assert kept is raw
    mean, sd = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 8.0])
    owners = _scaled(raw, SummarizationConfig(dataset="wine", standardise="owners"), mean, sd)
    np.testing.assert_allclose(owners.owners[0][0], (raw.owners[0][0] - mean) / sd)


def test_a_seed_set_constant_in_a_feature_is_a_named_error():
    rng = np.random.default_rng(5)
    seed_x = rng.uniform(-4.0, 4.0, (30, 3))
    seed_x[:, 2] = 1.5
    with pytest.raises(FieldError, match=r"constant in feature 2") as info:
        _scaled(
            _setup(seed_x, rng),
            SummarizationConfig(dataset="wine"),
            np.zeros(3),
            np.ones(3),
        )
    assert info.value.field == "summarization.seed_size"


def test_owners_scaling_is_recorded_as_a_non_private_release():
    ledger = plan_ledger(
        scenario_from_dict(
            _data(**{"summarization.dataset": "wine", "summarization.standardise": "owners"})
        )
    )
    entry = {e.label: e for e in ledger.entries}[STANDARDISATION]
    assert entry.status is Status.NON_PRIVATE and entry.reason == OWNERS_STANDARDISED
    assert "owners' own mean and sd, outside the ledger" in OWNERS_STANDARDISED
    for choice in ("seed", "none"):
        plain = plan_ledger(
            scenario_from_dict(
                _data(**{"summarization.dataset": "wine", "summarization.standardise": choice})
            )
        )
        assert STANDARDISATION not in {e.label for e in plain.entries}


@needs_data
@pytest.mark.parametrize("dataset", ["occupancy", "wine"])
def test_registry_set_ups_scale_by_the_seed_set_and_owners_reports_infinity(dataset):
    cfg = SummarizationConfig(dataset=dataset)
    setup = build_setup(cfg, np.random.default_rng(0))
    np.testing.assert_allclose(setup.seed[0].mean(0), 0.0, atol=1e-9)
    np.testing.assert_allclose(setup.seed[0].std(0), 1.0, rtol=1e-9)
    owners_cfg = SummarizationConfig(dataset=dataset, standardise="owners")
    old = build_setup(owners_cfg, np.random.default_rng(0))
    assert not np.allclose(old.seed[0].mean(0), 0.0, atol=1e-3)  # the source's statistics

    changes = {"summarization.dataset": dataset, "summarization.summary_size": 10}
    private = _run(**changes)
    leaky = _run(**changes, **{"summarization.standardise": "owners"})
    assert private["status"] == leaky["status"] == "released"
    assert math.isfinite(private["privacy"]["achieved_epsilon"])
    assert leaky["privacy"]["achieved_epsilon"] in (math.inf, "inf")
    reasons = {e["label"]: e.get("reason") for e in leaky["privacy"]["events"]}
    assert reasons[STANDARDISATION] == OWNERS_STANDARDISED
    assert any("owners' own mean and sd" in line for line in report_lines(leaky))
    assert any("seed set's mean and sd (public)" in line for line in report_lines(private))
