"""Edges of the Gaussian calibration: defaults, sensitivity scaling in every path, the
validity checks and their messages, and where the classic formula's warning starts."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest

import privsim.sim.calibration as calibration_module
from privsim.sim.calibration import (
    ClassicCalibrationWarning,
    classic_sigma,
    exact_sigma,
    gaussian_epsilon,
    gaussian_sigma,
    split_gaussian,
)

#: Under mutmut the module runs from its ``mutants/`` copy behind a trampoline frame.
_UNDER_MUTMUT = "mutants" in Path(calibration_module.__file__).parts


def test_defaults_are_unit_sensitivity_and_exact_calibration():
    assert gaussian_sigma(1.0, 1e-5) == exact_sigma(1.0, 1e-5) == exact_sigma(1.0, 1e-5, 1.0)


@pytest.mark.parametrize("method", ["exact", "classic"])
def test_sigma_is_linear_in_the_sensitivity_for_both_methods(method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClassicCalibrationWarning)
        one = gaussian_sigma(0.5, 1e-5, 1.0, method)
        assert gaussian_sigma(0.5, 1e-5, 3.0, method) == pytest.approx(3.0 * one, rel=1e-12)
    assert classic_sigma(0.5, 1e-5, 3.0) == pytest.approx(
        3.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-12
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0, 1e-5, 1.0), r"^epsilon must be a finite number > 0, got 0.0$"),
        ((math.inf, 1e-5, 1.0), r"^epsilon must be a finite number > 0, got inf$"),
        ((1.0, 0.0, 1.0), r"^delta must be in \(0, 1\), got 0.0$"),
        ((1.0, 1e-5, 0.0), r"^sensitivity must be a finite number > 0, got 0.0$"),
        ((1.0, 1e-5, math.inf), r"^sensitivity must be a finite number > 0, got inf$"),
        ((1.0, 1e-5, -1.0), r"^sensitivity must be a finite number > 0, got -1.0$"),
    ],
)
def test_invalid_inputs_are_named(args, message):
    for f in (exact_sigma, classic_sigma):
        with pytest.raises(ValueError, match=message):
            f(*args)


def test_a_zero_noise_multiplier_is_infinite_epsilon():
    assert gaussian_epsilon(0.0, 1e-5) == math.inf
    assert gaussian_epsilon(-1.0, 1e-5) == math.inf


@pytest.mark.parametrize("epsilon", [1.0, 1.5])
def test_classic_warns_from_epsilon_one_on(epsilon):
    with pytest.warns(ClassicCalibrationWarning, match=f"at eps = {epsilon:g},"):
        gaussian_sigma(epsilon, 1e-5, method="classic")


def test_classic_warning_states_the_delivered_epsilon_for_any_sensitivity():
    # At δ = 1e-5 and ε = 2 the classic σ over-noises (exact accounting: ε = 1.61), and
    # says so; the delivered ε does not depend on Δ (σ scales with it).
    delivered = gaussian_epsilon(classic_sigma(2.0, 1e-5), 1e-5)
    assert delivered < 2.0
    with pytest.warns(ClassicCalibrationWarning) as caught:
        gaussian_sigma(2.0, 1e-5, 3.0, method="classic")
    (warning,) = caught
    assert f"it over-noises here (exact accounting: eps = {delivered:.4g})" in str(warning.message)
    # It is reported where gaussian_sigma was called, not inside the calibration module.
    if not _UNDER_MUTMUT:  # mutmut's trampolines add a frame
        assert warning.filename == __file__
    # Under-noising: at δ = 1e-4, ε = 10 the classic σ delivers only ε = 10.62.
    with pytest.warns(ClassicCalibrationWarning, match=r"it delivers only eps = 10\.62"):
        gaussian_sigma(10.0, 1e-4, 4.0, method="classic")


def test_split_gaussian_checks_its_shares():
    assert len(split_gaussian(1.0, 1e-5, (0.25, 0.75))) == 2
    for shares in [(), (0.5, 0.6), (0.0, 1.0), (-0.5, 1.5)]:
        with pytest.raises(ValueError, match="budget shares must be positive and sum to 1"):
            split_gaussian(1.0, 1e-5, shares)
