"""A Gaussian on m of n clients drawn without replacement (replace-one), composed by the
dominating pair of :mod:`privsim.sim.wor_pld`, checked against the pair computed apart:
never by dp-accounting's grid or by the code under test.

In units of Δ the bound is, with γ = m/n, A = γ·N(1, z²) + (1 − γ)·N(0, z²) and
B = N(0, z²), δ(ε) = H_{e^ε}(A ‖ B) for ε ≥ 0 and H_{e^ε}(B ‖ A) below 0.

One round: each hockey-stick divergence by mpmath quadrature (:data:`DIGITS`) of the
densities' difference beyond the point where it changes sign (found by a root search
on the densities, not by the closed form the PLD builder uses).

Tolerances (one round). The PLD is pessimistic connect-the-dots on the grid ε_i = i·d,
d the interval: its δ equals the pair's at every ε_i and lies on the chord in e^ε
between them, so at any ε

    δ(ε) ≤ δ_PLD(ε) ≤ δ(⌊ε/d⌋·d),

each up to a relative 10⁻⁹ (float rounding of the builder's Φ's and of the quadrature)
and, above, 10⁻¹⁵ absolute (the pair's grid sends its top 10⁻¹⁸ of mass to +∞); hence
at any δ, ε(δ) ≤ ε_PLD(δ) ≤ ε(δ) + d, up to 10⁻⁷ for the root searches.

Composition: an FFT convolution of the pair's own privacy loss, built here from the
normal CDFs at the preimages of a grid of step h (the loss is monotone in x): every
cell's mass at its upper end gives a loss at or above the truth, at its lower end one
at or below; δ(ε) = E[(1 − e^{ε − ΣLᵢ})₊] grows with every Lᵢ, so the two compositions
bracket the pair's composed ε, k rounds at most k·h apart. The ledger's ε must lie in
that bracket: not below (it would not bound the pair), not above (it would be looser
than rounding every round's loss up by h, while its own grid is finer)."""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import mpmath
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_module
from scipy import optimize, special

from privsim.sim.events import composes_by_rdp, leaf_pld, pld_interval
from privsim.sim.ledger import PrivacyLedger, _pld_epsilon, _rdp_bound, epsilon_of, leaves
from privsim.sim.running import RunningEpsilon
from privsim.sim.sampling import Sampling

GAUSSIAN = dp_accounting.GaussianDpEvent
SELF = dp_accounting.SelfComposedDpEvent
POISSON = dp_accounting.PoissonSampledDpEvent
WOR = dp_accounting.SampledWithoutReplacementDpEvent

INTERVAL = 1e-4
#: Relative float slack of one δ (the builder's Φ's and the quadrature).
REL = 1e-9

#: (n, m, z): the auditor's case, the built-in fedlearn scenario's cohort at about its
#: calibrated multiplier, a larger share, and a cohort of nearly everyone.
CASES = [(2000, 53, 1.1), (10_000, 100, 0.55), (1000, 100, 2.0), (100, 90, 1.0)]
#: On the grid and between its points (the chord's excess is largest between them).
EPSILONS = [-1.0, -0.54321, -0.05, 0.0, 0.05, 0.12345, 0.3, 1.0, 2.00005]

#: Digits of the quadrature.
DIGITS = 20


def _densities(gamma: Any, z: Any) -> tuple[Any, Any]:
    def a(x: Any) -> Any:
        return gamma * mpmath.npdf(x, 1, z) + (1 - gamma) * mpmath.npdf(x, 0, z)

    def b(x: Any) -> Any:
        return mpmath.npdf(x, 0, z)

    return a, b


def exact_delta(epsilon: float, gamma: float, z: float) -> float:
    """The two-part bound at ε by quadrature: ∫(a − e^ε·b)₊ for ε ≥ 0 (a/b grows with x,
    so the integrand is positive right of its root), ∫(b − e^ε·a)₊ below (left of it)."""
    with mpmath.workdps(DIGITS):
        return _exact_delta(epsilon, gamma, z)


def _exact_delta(epsilon: float, gamma: float, z: float) -> float:
    a, b = _densities(mpmath.mpf(gamma), mpmath.mpf(z))
    w = mpmath.exp(epsilon)
    upper, lower, right = (a, b, True) if epsilon >= 0 else (b, a, False)

    def gap(x: Any) -> Any:
        return mpmath.log(upper(x)) - mpmath.log(w * lower(x))

    lo, hi = mpmath.mpf(-200), mpmath.mpf(200)
    if (gap(hi) if right else gap(lo)) <= 0:  # the ratio never exceeds e^ε
        return 0.0
    if (gap(lo) if right else gap(hi)) > 0:  # it always does: all of upper − e^ε·lower
        return float(1 - w)
    root = mpmath.findroot(gap, (lo, hi), solver="illinois", tol=1e-40, maxsteps=500)
    span = 40 * z
    ends = [root, root + span] if right else [root - span, root]
    return float(mpmath.quad(lambda x: upper(x) - w * lower(x), ends))


def exact_epsilon(delta: float, gamma: float, z: float) -> float:
    return float(optimize.brentq(lambda e: exact_delta(e, gamma, z) - delta, 0.0, 30.0, xtol=1e-9))


def _pld(n: int, m: int, z: float, count: int = 1, interval: float = INTERVAL) -> Any:
    return leaf_pld(WOR(n, m, GAUSSIAN(z)), count, "replace_one", interval)


@pytest.mark.parametrize(("n", "m", "z"), CASES)
def test_one_round_is_the_two_part_bound_to_the_grid(n: int, m: int, z: float) -> None:
    pld = _pld(n, m, z)
    for epsilon in EPSILONS:
        truth = exact_delta(epsilon, m / n, z)
        below = exact_delta(math.floor(epsilon / INTERVAL + 1e-9) * INTERVAL, m / n, z)
        found = pld.get_delta_for_epsilon(epsilon)
        assert truth * (1 - REL) <= found <= below * (1 + REL) + 1e-15, epsilon


@pytest.mark.parametrize(("n", "m", "z"), CASES[:2])
@pytest.mark.parametrize("delta", [1e-3, 1e-6])
def test_one_round_epsilon_within_one_interval(n: int, m: int, z: float, delta: float) -> None:
    truth = exact_epsilon(delta, m / n, z)
    found = _pld(n, m, z).get_epsilon_for_delta(delta)
    assert truth - 1e-7 <= found <= truth + INTERVAL + 1e-7


def test_the_pair_is_its_own_reverse_and_the_remove_direction_above_zero() -> None:
    """ω(−ℓ) = e^{−ℓ}·ω(ℓ) (but at the low end, which holds the 10⁻¹⁸ moved up there),
    one pmf for both directions, and for ε ≥ 0 the δ of dp-accounting's Poisson-sampled
    Gaussian's remove direction (A against B), but for the 10⁻¹⁸ moved to +∞."""
    n, m, z = 2000, 53, 1.1
    pld = _pld(n, m, z)
    assert pld._symmetric
    pmf = pld._pmf_remove.to_dense_pmf()
    probs, lower = pmf._probs, pmf._lower_loss
    top = lower + probs.size - 1
    assert 0 < -lower <= top
    mass = dict(zip(range(lower, top + 1), probs, strict=True))
    for i in range(1, -lower):
        assert mass[-i] == pytest.approx(math.exp(-i * INTERVAL) * mass[i], rel=1e-12, abs=1e-300)
    assert probs.min() >= 0
    assert probs.sum() + pmf._infinity_mass == pytest.approx(1.0, abs=1e-12)
    poisson = pld_module.from_gaussian_mechanism(
        z, value_discretization_interval=INTERVAL, sampling_prob=m / n
    )
    for epsilon in (0.0, 0.01, 0.2, 1.0, 3.0):
        assert pld.get_delta_for_epsilon(epsilon) == pytest.approx(
            poisson._pmf_remove.get_delta_for_epsilon(epsilon), rel=1e-7, abs=2e-18
        )


# --- composition --------------------------------------------------------------------------


def _loss_masses(gamma: float, z: float, step: float) -> tuple[int, np.ndarray, np.ndarray, float]:
    """The pair's privacy loss on the grid ℓ_j = j·step, j = −J … J (J·step about the loss
    at 14 standard deviations), from the normal CDFs: (−J, rounded up, rounded down,
    mass beyond the grid). Above 0 the cell (ℓ_j, ℓ_{j+1}] holds A's mass of the x with
    L(x) in it, L(x) = ln(γ·e^{(2x − 1)/(2z²)} + 1 − γ); its mirror [−ℓ_{j+1}, −ℓ_j)
    holds B's mass of the same x (dB = e^{−L}·dA); the rest sits at 0."""
    top = math.log(gamma * math.exp((2 * (1 + 14 * z) - 1) / (2 * z * z)) + 1 - gamma)
    count = math.ceil(top / step)
    edges = np.arange(count + 1) * step  # ℓ_0 = 0 … ℓ_J
    with np.errstate(divide="ignore"):
        x = 0.5 + z * z * np.log((np.expm1(edges) + gamma) / gamma)  # L⁻¹(ℓ)

    def tail_a(t: np.ndarray) -> np.ndarray:
        return gamma * special.ndtr(-(t - 1) / z) + (1 - gamma) * special.ndtr(-t / z)

    def tail_b(t: np.ndarray) -> np.ndarray:
        return special.ndtr(-t / z)

    in_a = -np.diff(tail_a(x))  # A-mass of L in (ℓ_j, ℓ_{j+1}]
    in_b = -np.diff(tail_b(x))
    beyond = float(tail_a(x[-1:])[0])
    zero = 1.0 - float(tail_a(x[:1])[0]) - float(tail_b(x[:1])[0])
    size = 2 * count + 1
    up, down = np.zeros(size), np.zeros(size)
    centre = count
    up[centre + 1 : centre + count + 1] += in_a  # at ℓ_{j+1}
    down[centre : centre + count] += in_a  # at ℓ_j
    up[centre - count + 1 : centre + 1][::-1] += in_b  # mirror at −ℓ_j
    down[centre - count : centre][::-1] += in_b  # at −ℓ_{j+1}
    up[centre] += zero
    down[centre] += zero
    down[-1] += beyond  # beyond the grid: at its end (lower), infinite (upper)
    up[0] += float(tail_b(x[-1:])[0])  # its mirror at the grid's end (upper), dropped (lower)
    return -count, up, down, beyond


def _compose(probs: np.ndarray, times: int) -> np.ndarray:
    size = times * (probs.size - 1) + 1
    fft_size = 1 << (size - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(probs, fft_size) ** times, fft_size)[:size]
    return np.maximum(out, 0.0)


def _epsilon(first: int, probs: np.ndarray, infinity: float, step: float, delta: float) -> float:
    """ε at δ of a pmf on ℓ_j = (first + j)·step with mass ``infinity`` at +∞."""
    losses = (np.arange(probs.size) + first) * step
    keep = losses > 0
    losses, probs = losses[keep], probs[keep]
    mass = np.cumsum(probs[::-1])[::-1]  # Σ_{ℓ ≥ ℓ_j} p
    tilted = np.cumsum((probs * np.exp(-losses))[::-1])[::-1]

    def delta_at(epsilon: float) -> float:
        j = int(np.searchsorted(losses, epsilon, side="right"))
        if j >= losses.size:
            return infinity
        return infinity + float(mass[j]) - math.exp(epsilon) * float(tilted[j])

    if delta_at(0.0) <= delta:
        return 0.0
    top = min(float(losses[-1]), 60.0)  # every ε here is far below 60
    return float(optimize.brentq(lambda e: delta_at(e) - delta, 0.0, top, xtol=1e-10))


def composed_bracket(
    gamma: float, z: float, rounds: int, step: float, delta: float
) -> tuple[float, float]:
    """(ε below, ε above) the pair's composed ε at δ (module docstring)."""
    first, up, down, beyond = _loss_masses(gamma, z, step)
    eps = []
    for probs, infinity in ((down, 0.0), (up, beyond)):
        composed = _compose(probs, rounds)
        eps.append(
            _epsilon(
                first * rounds, composed, -math.expm1(rounds * math.log1p(-infinity)), step, delta
            )
        )
    return eps[0], eps[1]


@pytest.mark.parametrize(
    ("n", "m", "z", "rounds", "step", "delta"),
    [
        (2000, 53, 1.1, 90, 5e-4, 1e-6),  # the auditor's case
        (1000, 100, 2.0, 20, 2e-4, 1e-5),
        (10_000, 100, 0.55, 30, 5e-4, 1e-5),  # the fedlearn scenario's rounds
    ],
)
def test_the_composition_lies_in_the_fft_bracket(
    n: int, m: int, z: float, rounds: int, step: float, delta: float
) -> None:
    low, high = composed_bracket(m / n, z, rounds, step, delta)
    assert high - low <= rounds * step * 1.01
    found = _pld(n, m, z, rounds).get_epsilon_for_delta(delta)
    assert low * (1 - 1e-9) <= found <= high * (1 + 1e-9)


def test_the_auditors_case_against_rdp_and_the_poisson_accountant() -> None:
    """n = 2000, m = 53, z = 1.1, 90 rounds, δ = 10⁻⁶. The ledger reports the PLD's ε
    (the smaller), 1.883 against RDP's 3.142. dp-accounting's PLD accountant fed the
    Poisson-sampled event composes each direction with itself: 1.754, what the datasets
    with every other record at −C reach (so the truth lies between), below even the
    lower end of the FFT bracket of the pair: it is not the pair's composition."""
    n, m, z, rounds, delta = 2000, 53, 1.1, 90, 1e-6
    found = leaves([SELF(WOR(n, m, GAUSSIAN(z)), rounds)])
    by_pld = _pld_epsilon(found, delta, "replace_one")
    by_rdp = _rdp_bound(found, delta, "replace_one")
    assert by_rdp is not None
    assert (
        epsilon_of([SELF(WOR(n, m, GAUSSIAN(z)), rounds)], delta, neighbour="replace_one") == by_pld
    )
    assert by_pld == pytest.approx(1.8829, abs=2e-4)
    assert by_rdp == pytest.approx(3.1415, abs=2e-4)
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(SELF(POISSON(m / n, GAUSSIAN(z)), rounds))
    per_direction = accountant.get_epsilon(delta)
    assert per_direction == pytest.approx(1.754, abs=2e-3)
    low, _ = composed_bracket(m / n, z, rounds, 5e-4, delta)
    assert per_direction < low


# --- the ledger -----------------------------------------------------------------------------


def test_the_ledger_routes_fixed_cohorts_by_pld_with_rdp_as_a_cross_check() -> None:
    leaf = WOR(2000, 53, GAUSSIAN(1.1))
    assert not composes_by_rdp(leaf)
    # five distinct sampled leaves: past SAMPLED_FINE_LEAVES, one doubling
    assert pld_interval([(WOR(2000, 53, GAUSSIAN(1.0 + k / 10)), 1) for k in range(5)]) == 2e-4
    # one round: the smaller of the two bounds, here the PLD (RDP's conversion is loose)
    found = leaves([leaf])
    by_pld = _pld_epsilon(found, 1e-5, "replace_one")
    by_rdp = _rdp_bound(found, 1e-5, "replace_one")
    assert by_rdp is not None and by_pld < by_rdp
    assert epsilon_of([leaf], 1e-5, neighbour="replace_one") == by_pld
    # everyone sampled: the Gaussian itself
    everyone = leaf_pld(WOR(50, 50, GAUSSIAN(1.1)), 3, "replace_one", INTERVAL)
    plain = leaf_pld(GAUSSIAN(1.1), 3, "replace_one", INTERVAL)
    assert everyone.get_epsilon_for_delta(1e-5) == plain.get_epsilon_for_delta(1e-5)


def test_a_ledger_and_a_running_curve_of_fixed_cohorts() -> None:
    """Rounds of 53 of 2000 whose realised multipliers differ (dropouts): the ledger's
    figure, the composition of the pairs at its interval; the running curve at the
    same interval, the same to float rounding (only the order of compositions differs)."""
    sampling = Sampling.fixed(2000, 53, "server")
    zs = (1.1, 1.0, 1.1, 0.95, 1.1, 1.05)
    ledger = PrivacyLedger(10.0, 1e-6, neighbour="replace_one")
    for r, z in enumerate(zs):
        ledger.charge(f"round-{r}", GAUSSIAN(1.1), sampling=sampling)
        ledger.settle(f"round-{r}", GAUSSIAN(z))
    events = [sampling.wrap(GAUSSIAN(z)) for z in zs]
    found = leaves(events)
    interval = pld_interval(found)
    assert interval == 1e-4  # four distinct leaves
    achieved = ledger.guarantee().epsilon
    assert achieved == pytest.approx(_pld_epsilon(found, 1e-6, "replace_one"), rel=1e-12)
    running = RunningEpsilon(1e-6, neighbour="replace_one", interval=interval)
    for event in events:
        running.add(event)
    assert running.epsilon == pytest.approx(achieved, rel=1e-9)
