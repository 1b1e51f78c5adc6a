"""Step 3's projection bounds with unequal feature and target fractions.

The threshold search of the golden test happens to pick p_x = p_y, and the protocol test
compares the published bounds with ``projection_bounds`` itself, so a bound computed with
the wrong fraction would pass both. Here the expected bounds are written out: p_x·σ̂_j for
every feature, p_y·σ̂ for the target (the last column), never wider than the assumed ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from privsim.protocols.blr.experiment import _Budget, _central, prepare
from privsim.protocols.blr.maths import marginal_std, moment_sensitivity
from privsim.protocols.blr.regression import moment_release, projection_bounds
from privsim.protocols.blr.search import ThresholdChoice
from privsim.sim.streams import Streams
from tests.protocols.test_blr_protocol import P_X, P_Y, SEED, _scenario, _two_rounds


def test_features_and_target_use_their_own_fraction():
    std = np.array([1.0, 2.0, 4.0, 3.0])  # three features, then the target
    assumed = np.full(4, 100.0)
    np.testing.assert_array_equal(projection_bounds(std, 0.5, 2.0, assumed), [0.5, 1.0, 2.0, 6.0])
    np.testing.assert_array_equal(projection_bounds(std, 2.0, 0.5, assumed), [2.0, 4.0, 8.0, 1.5])


def test_bounds_never_exceed_the_assumed_ones_column_by_column():
    std = np.array([1.0, 2.0, 4.0, 3.0])
    assumed = np.array([10.0, 1.5, 10.0, 4.0])
    np.testing.assert_array_equal(projection_bounds(std, 0.5, 2.0, assumed), [0.5, 1.0, 2.0, 4.0])


def test_distributed_projection_publishes_p_x_and_p_y_bounds():
    """Algorithm 2 on the bus (the protocol test's fractions: p_x = 0.8 != p_y = 1.1)."""
    assert P_X != P_Y
    scenario = _scenario()
    _, data = prepare(scenario, SEED)
    _, _, outcome = _two_rounds(scenario, data, moment_noise=0.0, multiplier=0.0)
    fractions = np.array([P_X] * data.dimension + [P_Y])
    assumed = np.full(data.dimension + 1, scenario.blr.assumed_bound)
    np.testing.assert_array_equal(outcome.bounds, np.minimum(fractions * outcome.std, assumed))
    assert np.all(outcome.bounds < assumed)  # the fractions, not the assumption, decided


@pytest.mark.parametrize("method", ["proj_NP", "proj_TA"])
def test_central_projection_uses_the_chosen_fractions(method):
    scenario = _scenario()
    _, data = prepare(scenario, SEED)
    choice = ThresholdChoice(feature=0.3, target=0.9, errors=np.zeros((1, 1)))
    run = _central(method, scenario, data, _Budget(scenario), choice, Streams(SEED))
    bounds = np.array(run.details["bounds"])
    d, n = data.dimension, data.x_train.shape[0]
    assumed = np.full(d + 1, scenario.blr.assumed_bound)
    if method == "proj_NP":  # σ̂_j = sqrt(mean v_ij²) of the training data
        std = np.sqrt(np.mean(np.column_stack([data.x_train, data.y_train]) ** 2, axis=0))
    else:  # σ̂ from the noisy moments, drawn from the method's own noise stream
        rng = Streams(SEED).generator("blr", method, "noise")
        budget = _Budget(scenario)
        moments = moment_release(
            data.x_train, data.y_train, assumed, budget.moments * moment_sensitivity(assumed), rng
        )
        std = marginal_std(moments, n, scenario.blr.variance_floor)
    np.testing.assert_allclose(bounds[:d], np.minimum(0.3 * std[:d], assumed[:d]), rtol=1e-12)
    np.testing.assert_allclose(bounds[d], min(0.9 * std[d], assumed[d]), rtol=1e-12)
    assert bounds[d] < assumed[d]
