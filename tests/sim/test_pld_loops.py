"""The vectorised ε-for-δ walk and self-convolution bounds, and the shared forward
differences of the bound for sampling without replacement, are dp-accounting's own, bit
for bit: the same ε from sampled and composed PLDs at several δ (walks that stop in the
first chunk, far into a later one, and never), an infinite mass above δ, a δ so large
that ε is 0, losses so high that exp(−loss) is 0, negative FFT residues; and the same
truncation bounds for those PLDs' arrays, with and without zero masses."""

from __future__ import annotations

import functools

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_module

from privsim.sim import events, pld_loops  # events installs both


def _library_epsilon(pmf: pld_pmf.DensePLDPmf, delta: float) -> float:
    assert pld_loops._LIBRARY_EPSILON is not None
    return pld_loops._LIBRARY_EPSILON(pmf, delta)


@functools.cache
def _plds() -> tuple[pld_pmf.DensePLDPmf, ...]:
    sampled = events.leaf_pld(
        dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(0.8)),
        1,
        "add_remove",
    )
    composed = sampled.self_compose(3)
    wor = events.leaf_pld(
        dp_accounting.SampledWithoutReplacementDpEvent(60, 20, dp_accounting.GaussianDpEvent(0.5)),
        2,
        "replace_one",
        1e-3,
    )
    gaussian = pld_module.from_gaussian_mechanism(0.3, value_discretization_interval=1e-3)
    high = pld_pmf.DensePLDPmf(1.0, 700, np.array([0.5, 0.3, 0.2]), 1e-7, True)  # exp(−loss) ≈ 0
    higher = pld_pmf.DensePLDPmf(1.0, 800, np.array([0.5, 0.3, 0.2]), 1e-7, True)  # exp(−loss) = 0
    # the walk stops near the top, but a chunk reads losses down to −989 (exp(989) = ∞)
    deep = pld_pmf.DensePLDPmf(1.0, -989, np.concatenate([np.zeros(998), [0.5, 0.5]]), 0.0, True)
    rng = np.random.default_rng(37)
    noisy = rng.random(20_000)
    noisy[::5] = -1e-18  # an FFT's rounding below zero
    residues = pld_pmf.DensePLDPmf(1e-4, -3000, noisy / noisy.sum(), 0.0, True)
    out = []
    for pld in (sampled, composed, wor, gaussian):
        out += [pld._pmf_remove.to_dense_pmf(), pld._pmf_add.to_dense_pmf()]
    return (*out, high, residues, higher, deep)


DELTAS = [1e-12, 1e-6, 1e-5, 1e-3, 0.3, 0.99, 1.0]


@pytest.mark.parametrize("libm", [True, False])
@pytest.mark.parametrize("index", range(12))
def test_the_same_epsilon_as_the_librarys(index: int, libm: bool, monkeypatch) -> None:
    """With NumPy's exp and log where they are the C library's, or math's (elsewhere)."""
    monkeypatch.setattr(pld_loops, "_NUMPY_IS_LIBM", pld_loops._NUMPY_IS_LIBM and libm)
    pmf = _plds()[index]
    compared = 0
    for delta in DELTAS:
        try:
            theirs = _library_epsilon(pmf, delta)
        except OverflowError:  # the library's loop reached exp(989): nothing to compare
            continue
        compared += 1
        ours = pmf.get_epsilon_for_delta(delta)  # the installed walk
        assert ours == theirs or (np.isnan(ours) and np.isnan(theirs)), (delta, ours, theirs)
    assert compared >= 3  # the deep case too: the library stops early at the large δ


def test_an_infinite_mass_above_delta_is_infinite() -> None:
    pmf = pld_pmf.DensePLDPmf(1e-2, 0, np.array([0.9]), 0.1, True)
    assert pmf.get_epsilon_for_delta(0.01) == _library_epsilon(pmf, 0.01) == np.inf


@pytest.mark.parametrize("index", range(10))
def test_the_same_bounds_as_the_librarys(index: int) -> None:
    assert pld_loops._LIBRARY_BOUNDS is not None
    probs = np.asarray(_plds()[index]._probs, dtype=np.float64)
    probs = probs[:: max(1, probs.size // 20_000)].copy()  # the library's bounds are slow
    padded = np.concatenate([np.zeros(50), probs, np.zeros(7)])
    for array, num_times in ((probs, 2), (probs, 30), (padded, 7)):
        for truncation in (1e-15, 1e-3, 0.0):
            ours = pld_loops.self_convolve_bounds(array, num_times, truncation)
            theirs = pld_loops._LIBRARY_BOUNDS(array, num_times, truncation)
            assert ours == theirs, (truncation, ours, theirs)


def test_installed_for_this_release_only() -> None:
    from importlib import metadata

    from dp_accounting.pld import common

    installed = metadata.version("dp-accounting") == pld_loops.FOR_VERSION
    assert (common.compute_self_convolve_bounds is pld_loops.self_convolve_bounds) is installed
    assert (
        pld_pmf.DensePLDPmf.get_epsilon_for_delta is pld_loops._dense_epsilon_for_delta
    ) is installed


@pytest.mark.parametrize(("q", "z"), [(0.01, 0.55), (1 / 3, 0.1)])
def test_the_same_wor_rdp_curve_as_the_librarys(q: float, z: float) -> None:
    """dp-accounting's bound for sampling without replacement, with the forward
    differences shared between orders: the same figures at every order the ledger reads."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_module

    grid = np.asarray(events.WOR_INTEGER_ORDERS, dtype=np.float64)
    theirs = rdp_module._compute_rdp_sample_wor_gaussian(q, z, grid)
    assert np.array_equal(events.wor_gaussian_rdp(q, z, grid), theirs)
    odd = np.array([2.5, 300.0])  # fractional and beyond 256: the library's own
    assert np.array_equal(
        events.wor_gaussian_rdp(q, z, odd), rdp_module._compute_rdp_sample_wor_gaussian(q, z, odd)
    )


@pytest.mark.parametrize("sigma", [0.065, 0.55, 20.0])
def test_the_same_forward_differences_as_the_librarys(sigma: float) -> None:
    """The vectorised passes of the forward differences of exp(cgf), every order to 257."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_module

    def cgf(x: float) -> float:
        return x * 1.0 * (x + 1) / (2.0 * sigma**2)

    theirs = rdp_module._get_forward_diffs(cgf, 256)
    ours = pld_loops.forward_diffs(cgf, 256)
    assert np.array_equal(ours[0], theirs[0], equal_nan=True)
    assert np.array_equal(ours[1], theirs[1])
