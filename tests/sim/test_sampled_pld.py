"""The vectorised PLD of a Poisson-sampled Gaussian (and Laplace) is dp-accounting's:
the same grid, the same masses to rounding, and the same ε and δ, for one round, for a
round composed with itself and with another, and in both directions (add and remove).

Tolerance. Both builders evaluate the same hockey-stick divergence δ(ε) on the same
grid and put the same connect-the-dots masses on it; they differ only in the order of
floating-point operations. Each δ differs by a few units in the last place of its larger
term (about 10⁻¹⁶), and connect-the-dots divides second differences of δ by e^d − 1 ≈ d,
so the masses differ by up to about 10⁻¹⁶/d (10⁻¹² at d = 10⁻⁴; :func:`mass_tol`). One
round's ε then agrees to about 10⁻¹¹ relative. Composition adds up that rounding noise:
500 rounds agreed to within 2·10⁻⁷ relative over this grid when this was written, and
in the cases checked (q = 10⁻⁵, z = 0.5 and q = 6·10⁻⁴, z = 0.8 at 6.4·10⁻³) both lay
within 2·10⁻⁷ of the 500-fold composition of masses from exactly computed (mpmath)
δ's, ours the closer. :data:`EPS_TOL` = 10⁻⁶ is above that with a margin and far
below anything that matters to a privacy claim; being two-sided, it also bounds how far
our ε can ever fall below dp-accounting's (an under-report). δ at a given ε is held to
the same relative bound plus :data:`DELTA_FLOOR`, the absolute rounding noise of the sums
of masses (a δ of 10⁻¹⁴ is noise in both).

The full grid at the ledger's finest interval (10⁻⁴) takes minutes with dp-accounting's
builder and is marked slow; by default it runs at the coarser intervals the ledger picks
for many distinct rounds, and at 10⁻⁴ where dp-accounting's builder is quick. The
hockey-stick formulas themselves are checked against mpmath at 40 digits.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator

import dp_accounting
import mpmath
import numpy as np
import pytest
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_module
from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution as PLD

from privsim.sim import events, sampled_pld
from privsim.sim.events import PLD_INTERVAL, sampled_pld_interval

QS = (1e-5, 1e-4, 6e-4, 1e-2, 0.05, 0.3, 1.0)
ZS = (0.5, 0.8, 1.1, 2.0, 5.0)
DELTAS = (1e-3, 1e-5, 1e-7)
#: ε at which δ is compared: around zero (where the add direction's loss lives) and up.
EPSILONS = (-0.05, -1e-3, 0.0, 1e-3, 0.1, 1.0, 3.0)
#: Relative tolerance on ε and δ (module docstring).
EPS_TOL = 1e-6
#: Absolute floor on δ differences: rounding noise of sums of masses.
DELTA_FLOOR = 1e-11
#: The ledger's intervals for 64 and 256 distinct sampled rounds (1.6·10⁻³, 6.4·10⁻³).
COARSE = sampled_pld_interval(64)
COARSER = sampled_pld_interval(256)


def mass_tol(interval: float) -> float:
    """How far a mass may differ at the interval d: the rounding estimate 10⁻¹⁶/d
    (module docstring) with a margin of 100."""
    return 1e-14 / interval


@functools.cache
def theirs(z: float, q: float, interval: float) -> PLD:
    return pld_module.from_gaussian_mechanism(
        standard_deviation=z, value_discretization_interval=interval, sampling_prob=q
    )


@functools.cache
def ours(z: float, q: float, interval: float) -> PLD:
    return sampled_pld.sampled_gaussian_pld(z, q, interval)


@pytest.fixture(autouse=True, scope="module")
def _free_the_plds() -> Iterator[None]:
    """Drop the cached PLDs (tens of MB) when this module's tests are done."""
    yield
    theirs.cache_clear()
    ours.cache_clear()


def _assert_epsilons(new: PLD, ref: PLD) -> float:
    """ε at each of :data:`DELTAS` within :data:`EPS_TOL` of dp-accounting's; the worst
    relative difference."""
    worst = 0.0
    for delta in DELTAS:
        want, got = ref.get_epsilon_for_delta(delta), new.get_epsilon_for_delta(delta)
        if want == 0 or math.isinf(want):
            assert got == want, (delta, got, want)
            continue
        rel = abs(got - want) / want
        assert rel <= EPS_TOL, (delta, got, want)
        worst = max(worst, rel)
    return worst


def _assert_deltas(new: PLD, ref: PLD) -> None:
    want = np.asarray(ref.get_delta_for_epsilon(list(EPSILONS)))
    got = np.asarray(new.get_delta_for_epsilon(list(EPSILONS)))
    assert np.all(np.abs(got - want) <= EPS_TOL * want + DELTA_FLOOR), (got, want)


def _assert_same_pmfs(new: PLD, ref: PLD, interval: float) -> None:
    """The same symmetry, the same grids and kinds of pmf, the same masses to rounding."""
    assert new._symmetric == ref._symmetric
    for mine, lib in ((new._pmf_remove, ref._pmf_remove), (new._pmf_add, ref._pmf_add)):
        assert type(mine) is type(lib)
        a, b = mine.to_dense_pmf(), lib.to_dense_pmf()
        assert a._lower_loss == b._lower_loss
        assert a._probs.size == b._probs.size
        assert np.max(np.abs(a._probs - b._probs)) <= mass_tol(interval)
        assert abs(a._infinity_mass - b._infinity_mass) <= mass_tol(interval)


# --- one round ---------------------------------------------------------------------------


@pytest.mark.parametrize(("q", "z"), list(itertools.product(QS, ZS)))
def test_one_round_at_a_coarse_interval(q: float, z: float) -> None:
    new, ref = ours(z, q, COARSE), theirs(z, q, COARSE)
    _assert_same_pmfs(new, ref, COARSE)
    _assert_epsilons(new, ref)
    _assert_deltas(new, ref)


#: Rounds whose PLD dp-accounting builds at 10⁻⁴ in well under a second.
QUICK = [*itertools.product(QS, (5.0,)), *itertools.product(QS[:4], (2.0,))]


@pytest.mark.parametrize(("q", "z"), QUICK)
def test_one_round_at_the_finest_interval_where_quick(q: float, z: float) -> None:
    new, ref = ours(z, q, PLD_INTERVAL), theirs(z, q, PLD_INTERVAL)
    _assert_same_pmfs(new, ref, PLD_INTERVAL)
    _assert_epsilons(new, ref)
    _assert_deltas(new, ref)


@pytest.mark.slow
@pytest.mark.parametrize(("q", "z"), list(itertools.product(QS, ZS)))
@pytest.mark.parametrize("interval", [PLD_INTERVAL, 2 * PLD_INTERVAL])
def test_one_round_at_fine_intervals(q: float, z: float, interval: float) -> None:
    new, ref = ours(z, q, interval), theirs(z, q, interval)
    _assert_same_pmfs(new, ref, interval)
    _assert_epsilons(new, ref)
    _assert_deltas(new, ref)


# --- composed ----------------------------------------------------------------------------


def _other(q: float, z: float) -> tuple[float, float]:
    """A distinct round to compose with: another rate and multiplier of the grid."""
    return QS[(QS.index(q) + 2) % len(QS)], ZS[(ZS.index(z) + 1) % len(ZS)]


def _check_composed(q: float, z: float, interval: float, count: int) -> None:
    new, ref = ours(z, q, interval), theirs(z, q, interval)
    composed_new, composed_ref = new.self_compose(count), ref.self_compose(count)
    _assert_epsilons(composed_new, composed_ref)
    if count == 10:  # once per round: with a distinct round, and δ in both directions
        _assert_deltas(composed_new, composed_ref)
        q2, z2 = _other(q, z)
        pair_new, pair_ref = (
            new.compose(ours(z2, q2, interval)),
            ref.compose(theirs(z2, q2, interval)),
        )
        _assert_epsilons(pair_new, pair_ref)
        _assert_deltas(pair_new, pair_ref)


@pytest.mark.parametrize(("q", "z"), list(itertools.product(QS, ZS)))
@pytest.mark.parametrize("count", [10, 500])
def test_composed_at_a_coarser_interval(q: float, z: float, count: int) -> None:
    _check_composed(q, z, COARSER, count)


@pytest.mark.slow
@pytest.mark.parametrize(("q", "z"), list(itertools.product(QS, ZS)))
@pytest.mark.parametrize("count", [10, 500])
@pytest.mark.parametrize("interval", [PLD_INTERVAL, COARSE])
def test_composed_at_fine_intervals(q: float, z: float, count: int, interval: float) -> None:
    _check_composed(q, z, interval, count)


# --- Laplace -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "q"), list(itertools.product((0.5, 3.0, 100.0), (1e-5, 6e-4, 0.05, 1.0)))
)
@pytest.mark.parametrize("interval", [PLD_INTERVAL, COARSE])
def test_laplace(b: float, q: float, interval: float) -> None:
    new = sampled_pld.sampled_laplace_pld(b, q, interval)
    ref = pld_module.from_laplace_mechanism(
        b, value_discretization_interval=interval, sampling_prob=q
    )
    _assert_same_pmfs(new, ref, interval)
    _assert_epsilons(new, ref)
    _assert_deltas(new, ref)
    if interval == COARSE:
        _assert_epsilons(new.self_compose(20), ref.self_compose(20))


# --- the formulas against high precision -------------------------------------------------


def _exact(epsilon: float, q: float, sigma: float) -> tuple[float, float]:
    """(δ_remove(ε), δ_add(−ε)) at 40 digits, straight from the definition: the
    hockey-stick divergence of the pair at the largest x whose loss is ≥ ε."""
    with mpmath.workdps(40):
        e, q_, s = mpmath.mpf(epsilon), mpmath.mpf(q), mpmath.mpf(sigma)
        if q < 1 and e <= mpmath.log1p(-q_):
            return float(-mpmath.expm1(e)), 0.0
        lam = mpmath.log1p(mpmath.expm1(e) / q_)  # the unsampled loss
        x_remove = -0.5 - lam * s**2
        upper = q_ * mpmath.ncdf((x_remove + 1) / s) + (1 - q_) * mpmath.ncdf(x_remove / s)
        remove = upper - mpmath.exp(e) * mpmath.ncdf(x_remove / s)
        x_add = 0.5 + lam * s**2
        lower = q_ * mpmath.ncdf((x_add - 1) / s) + (1 - q_) * mpmath.ncdf(x_add / s)
        add = mpmath.ncdf(x_add / s) - mpmath.exp(-e) * lower
        return float(remove), float(add)


@pytest.mark.parametrize(
    ("q", "sigma"),
    [(1e-5, 0.5), (1e-3, 0.8), (0.1, 1.1), (0.3, 2.0), (1.0, 0.8), (0.01, 0.04), (0.2, 0.03)],
)
def test_hockey_sticks_against_mpmath(q: float, sigma: float) -> None:
    """Up to ε = 700 at σ = 0.03, where Φ(y) underflows and e^ε·Φ(y) is taken by
    logarithms."""
    points = [1e-4, 1e-3, 0.01, 1.0, 2.0, 5.0, 10.0, 40.0, 100.0, 300.0, 600.0, 700.0]
    grid = np.sort(np.concatenate([np.linspace(-0.5, 0.5, 11), points]))
    remove, add = sampled_pld.gaussian_hockey_sticks(grid, sigma, q)
    for i, epsilon in enumerate(grid):
        want_remove, want_add = _exact(float(epsilon), q, sigma)
        assert remove[i] == pytest.approx(want_remove, rel=1e-10, abs=1e-300)
        if q < 1:
            assert add[i] == pytest.approx(want_add, rel=1e-10, abs=1e-300)


def test_extreme_multipliers_match() -> None:
    """A tiny multiplier (ε up to hundreds, e^ε·Φ(y) by logarithms) and a huge one (a
    handful of grid points, a sparse pmf)."""
    for z, q, interval in ((0.045, 0.01, 1e-2), (300.0, 0.01, 1e-4), (50.0, 0.5, 1e-4)):
        new, ref = ours(z, q, interval), theirs(z, q, interval)
        _assert_same_pmfs(new, ref, interval)
        _assert_epsilons(new, ref)


def test_a_small_pld_is_sparse_as_dp_accountings() -> None:
    new = ours(5.0, 1e-4, PLD_INTERVAL)
    assert isinstance(new._pmf_remove, pld_pmf.SparsePLDPmf)
    assert isinstance(ours(0.8, 0.05, PLD_INTERVAL)._pmf_add, pld_pmf.DensePLDPmf)


@pytest.mark.parametrize(
    ("scale", "q", "interval"),
    [(1.0, 0.0, 1e-4), (0.0, 0.5, 1e-4), (1.0, 1.5, 1e-4), (1.0, 0.5, 0.0)],
)
def test_refuses_bad_parameters(scale: float, q: float, interval: float) -> None:
    with pytest.raises(ValueError):
        sampled_pld.sampled_gaussian_pld(scale, q, interval)
    with pytest.raises(ValueError):
        sampled_pld.sampled_laplace_pld(scale, q, interval)


# --- in the ledger -----------------------------------------------------------------------


def test_the_ledger_builds_it() -> None:
    leaf = dp_accounting.PoissonSampledDpEvent(6e-4, dp_accounting.GaussianDpEvent(1.1))
    built = events._build_sampled_pld(leaf, PLD_INTERVAL)
    _assert_same_pmfs(built, theirs(1.1, 6e-4, PLD_INTERVAL), PLD_INTERVAL)
    laplace = dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.LaplaceDpEvent(2.0))
    ref = pld_module.from_laplace_mechanism(
        2.0, value_discretization_interval=COARSE, sampling_prob=0.05
    )
    _assert_same_pmfs(events._build_sampled_pld(laplace, COARSE), ref, COARSE)


def test_the_ledger_still_refuses_a_gaussian_beyond_a_pld() -> None:
    leaf = dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(0.02))
    with pytest.raises(OverflowError):
        events._build_sampled_pld(leaf, PLD_INTERVAL)
