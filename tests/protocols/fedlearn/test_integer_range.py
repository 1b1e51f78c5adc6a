"""Integer rounds with a clipping norm or noise beyond the modulus (issue 39): a named
error naming the field, never an OverflowError or a bare ModulusTooSmallError."""

from __future__ import annotations

from typing import Any

import pytest

from privsim.protocols.fedlearn import EXAMPLE
from privsim.protocols.fedlearn.integer import integer_plan
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError, ScenarioError

SECAGG_PLUS = {
    "training.aggregation": "secagg_plus",
    "training.sampling": "poisson",
    "privacy.neighbour": "add_remove",
    "training.rate": 0.33,
    "training.rounds": 2,
    "training.modulus_bits": 64,
}


@pytest.mark.parametrize("given", [{}, {"training.noise_multiplier": 1.0}])
def test_a_clip_norm_of_1e300_with_64_bits_is_refused_by_name(given: dict[str, Any]) -> None:
    fields = SECAGG_PLUS | {"training.clip_norm": 1e300} | given
    with pytest.raises((FieldError, ScenarioError), match="modulus") as found:
        scenario_from_dict(set_fields(EXAMPLE, fields))
    assert found.value.field == "training.clip_norm"
    assert "Fix: set training.clip_norm below 1.96e+17" in str(found.value)


def _plan(**changed: Any) -> Any:
    args: dict[str, Any] = {
        "bits": 64,
        "clip": 1.0,
        "dimension": 33,
        "cohort_max": 47,
        "honest": 19,
        "rate": 0.33,
        "rounds": 2,
        "epsilon": 4.0,
        "delta": 1e-5,
        "multiplier": 1.0,
    }
    return integer_plan("discrete_gaussian", **(args | changed))


@pytest.mark.parametrize(
    ("clip", "field"),
    [
        # the clipped sum alone fits (47·1.95e17 < 2^63), with the noise z·C it does not
        (1.95e17, "training.noise_multiplier"),
        # the clipped sum alone is past the widest modulus: the clip is what to lower
        (1e300, "training.clip_norm"),
    ],
)
def test_the_planner_names_a_clip_the_modulus_cannot_hold(clip: float, field: str) -> None:
    with pytest.raises(FieldError) as found:
        _plan(clip=clip)
    assert found.value.field == field


def test_a_large_multiplier_is_planned_at_a_coarser_scale_not_refused() -> None:
    """z = 10⁶ at 64 bits: a scale whose sum needs more than a 64-bit word is one that
    does not fit (it once escaped as ModulusTooSmallError); another scale fits."""
    plan = _plan(multiplier=1e6)
    assert plan.modulus.bits <= 64
