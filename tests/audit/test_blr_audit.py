"""Auditing BLR's statistics release (DDP and TA) and the trusted aggregator: below
their claims, for both neighbour relations."""

from __future__ import annotations

import pytest

from privsim import registry
from privsim.audit import audit
from privsim.scenarios import scenario_from_dict


@pytest.mark.parametrize("neighbour", ["replace_one", "add_remove"])
@pytest.mark.parametrize("methods", [["NP", "DDP"], ["TA"]])
def test_blr_release_stays_below_its_claim(neighbour, methods):
    ex = dict(registry.get("blr").example)
    scenario = scenario_from_dict(
        {
            **ex,
            "privacy": {"epsilon": 1.0, "delta": 1e-4, "neighbour": neighbour},
            "blr": {**ex["blr"], "methods": methods},
            "threat": {"colluding_clients": 20},
            "dca": {"tolerated": 20},
        }
    )
    result = audit(scenario, 300_000, seed=1)
    assert result.lower_bound < result.claimed_epsilon <= 1.0 + 1e-9
    assert result.lower_bound > 0.2  # not vacuous


def test_trusted_aggregator_stays_below_its_claim():
    scenario = scenario_from_dict(dict(registry.get("trusted_aggregator").example))
    result = audit(scenario, 1_000_000, seed=1)
    assert result.claimed_epsilon == pytest.approx(1.0)
    assert 0.5 < result.lower_bound < 1.0  # the curator's release is the reference Gaussian
