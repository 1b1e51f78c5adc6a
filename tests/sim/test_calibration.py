import math
import warnings

import pytest

from privsim.sim.calibration import (
    ClassicCalibrationWarning,
    classic_sigma,
    exact_sigma,
    gaussian_epsilon,
    gaussian_sigma,
)


def test_exact_sigma_gives_exactly_the_target_epsilon():
    for eps, delta in [(0.1, 1e-5), (1.0, 1e-5), (10.0, 1e-4)]:
        sigma = exact_sigma(eps, delta)
        assert gaussian_epsilon(sigma, delta) == pytest.approx(eps, rel=1e-8)


def test_exact_sigma_scales_with_sensitivity():
    assert exact_sigma(1.0, 1e-5, 3.0) == pytest.approx(3.0 * exact_sigma(1.0, 1e-5))


def test_classic_values_quoted_by_the_paper_reproduction():
    # At delta = 1e-4: classic sigma 0.434 at eps = 10 where exact needs 0.455; at
    # eps = 31.62 the classic sigma delivers only eps ~ 52.8.
    assert classic_sigma(10.0, 1e-4) == pytest.approx(0.434, abs=5e-4)
    assert exact_sigma(10.0, 1e-4) == pytest.approx(0.455, abs=5e-4)
    assert gaussian_epsilon(classic_sigma(31.62, 1e-4), 1e-4) == pytest.approx(52.8, abs=0.05)
    assert classic_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)


def test_classic_warns_where_not_proven_and_names_the_shortfall():
    with pytest.warns(ClassicCalibrationWarning, match="delivers only eps = 10.62"):
        gaussian_sigma(10.0, 1e-4, method="classic")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gaussian_sigma(0.5, 1e-4, method="classic")  # proven regime: silent
        gaussian_sigma(10.0, 1e-4, method="exact")


@pytest.mark.parametrize("args", [(0.0, 1e-5), (1.0, 0.0), (1.0, 1.0), (-1.0, 1e-5)])
def test_invalid_budgets_are_refused(args):
    with pytest.raises(ValueError):
        exact_sigma(*args)
