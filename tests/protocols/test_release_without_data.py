"""No release without data (issue 39): ``dca.on_excess_dropout = "release"`` releases a
sum missing more than T clients, never a sum nobody reached ("released" with 0 clients
included). Fedlearn's Poisson rounds, which release whatever reached the sum on purpose
(an abort would depend on the target's presence), refuse the option as meaningless."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from privsim.api import run
from privsim.protocols.dca import EXAMPLE as DCA
from privsim.protocols.fedlearn import EXAMPLE as FEDLEARN
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError, ScenarioError

RELEASE = {"dca.on_excess_dropout": "release"}


def _result(base: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(scenario_from_dict(set_fields(base, fields)), seed=0).to_dict()


def test_dca_releasing_beyond_t_aborts_when_every_client_is_absent() -> None:
    result = _result(DCA, RELEASE | {"faults.absent": 1.0})
    assert result["status"] == "aborted"
    assert result["abort"]["reason"] == "no_contributions"
    assert "never releases an empty sum" in result["abort"]["detail"]


def test_dca_releasing_beyond_t_still_releases_a_partial_sum() -> None:
    result = _result(DCA, RELEASE | {"faults.absent": 0.5})
    assert result["status"] == "released"


def test_fedlearn_fixed_cohort_dca_rounds_release_nothing_without_clients() -> None:
    fields = RELEASE | {"faults.absent": 1.0, "training.rounds": 2}
    result = _result(FEDLEARN, fields)
    assert result["status"] == "aborted" and result["accuracy"] is None
    assert "no_contributions" in result["abort"]["detail"]


def test_fedlearn_poisson_rounds_refuse_the_option_by_name() -> None:
    fields = RELEASE | {
        "training.sampling": "poisson",
        "privacy.neighbour": "add_remove",
        "training.rate": 0.33,
    }
    with pytest.raises((FieldError, ScenarioError)) as found:
        scenario_from_dict(set_fields(FEDLEARN, fields))
    assert found.value.field == "dca.on_excess_dropout"
