"""Amplification by sampling in the ledger: a release on a random cohort is charged
unsampled with its :class:`~privsim.sim.sampling.Sampling`, amplified while the sampler
stays out of the coalition, and composed over rounds by PLD (sampled Gaussians, with RDP
as a cross-check) or by RDP (sampled integer noise).

The anchors are TensorFlow Federated's DP tutorial (q = 120/3383, z = 1.2, 100 rounds,
δ = 1e-5) and the same with 30% of each cohort dropping out. Every RDP figure asserted
here is recomputed by this file's own code (the exact sampled-Gaussian moments of
Mironov, Talwar & Zhang 2019, by the binomial expansion at integer orders and by
numerical integration at fractional ones), never by the code under test; tolerances say
why they are what they are."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as rdp_module
from scipy import integrate

from privsim.sim.calibration import gaussian_epsilon
from privsim.sim.events import (
    GenericPureDpEvent,
    leaf_rdp,
    pld_interval,
    poisson_gaussian_rdp,
)
from privsim.sim.integer_bounds import (
    COMPOSITION_ORDERS,
    IntegerShares,
    equivalent_gaussian,
    interpolate_rdp,
    poisson_subsampled_rdp,
)
from privsim.sim.ledger import (
    BudgetExceededError,
    NoiseShares,
    PrivacyLedger,
    Trust,
    _pld_epsilon,
    _rdp_bound,
    epsilon_of,
    leaves,
)
from privsim.sim.sampling import Sampling

GAUSSIAN = dp_accounting.GaussianDpEvent
SELF = dp_accounting.SelfComposedDpEvent
POISSON = dp_accounting.PoissonSampledDpEvent
WOR = dp_accounting.SampledWithoutReplacementDpEvent

#: TensorFlow Federated's DP tutorial: 120 of 3383 clients per round, z = 1.2, 100 rounds.
TFF_Q = 120 / 3383
TFF_Z = 1.2
TFF_ROUNDS = 100
DELTA = 1e-5
#: dp-accounting 0.6.0's own figures for the anchors (PLDAccountant at 1e-4; RdpAccountant
#: at its default orders), recomputed in the tests below.
TFF_PLD = 1.7075
TFF_RDP = 1.9861


# --- an independent RDP accountant for the Poisson-sampled Gaussian ----------------------


def _sampled_gaussian_rdp_integer(q: float, z: float, alpha: int) -> float:
    """Mironov, Talwar & Zhang (2019), integer α: A_α = Σ_k C(α,k)(1−q)^{α−k} q^k
    exp((k² − k)/(2z²)), ε(α) = log(A_α)/(α − 1), summed in log space."""
    logs = [
        math.lgamma(alpha + 1)
        - math.lgamma(k + 1)
        - math.lgamma(alpha - k + 1)
        + (alpha - k) * math.log1p(-q)
        + k * math.log(q)
        + (k * k - k) / (2 * z * z)
        for k in range(alpha + 1)
    ]
    top = max(logs)
    return (top + math.log(sum(math.exp(x - top) for x in logs))) / (alpha - 1)


def _sampled_gaussian_rdp_fractional(q: float, z: float, alpha: float) -> float:
    """The same moment at any α > 1 by numerical integration: A_α = E_{x ~ N(0, z²)}
    [((1 − q) + q·e^{(2x − 1)/(2z²)})^α] (the sampled pair against N(0, z²), the larger
    of the two directions, Mironov et al. 2019, Sec. 3.3)."""

    def density(x: float) -> float:
        mixture = alpha * math.log1p(q * math.expm1((2 * x - 1) / (2 * z * z)))
        return math.exp(mixture - x * x / (2 * z * z)) / (z * math.sqrt(2 * math.pi))

    value, _ = integrate.quad(
        density, -40 * z, 40 * z + alpha, points=[0.0, alpha / 2, alpha], limit=200, epsrel=1e-12
    )
    return math.log(value) / (alpha - 1)


def _convert(rdp: float, alpha: float, delta: float) -> float:
    """ε = ε(α) + log(1/δ)/(α − 1) + log(1 − 1/α) − log(α)/(α − 1) (Canonne, Kamath &
    Steinke 2020; Balle et al. 2020)."""
    return (
        rdp
        + math.log(1 / delta) / (alpha - 1)
        + math.log1p(-1 / alpha)
        - math.log(alpha) / (alpha - 1)
    )


def _independent_rdp_epsilon(q: float, z: float, rounds: int, delta: float) -> float:
    """min over the integer orders 2…256 (binomial expansion) and 1.1, 1.2, …, 10.9
    (integration) of the converted R-round curve."""
    best = min(
        _convert(rounds * _sampled_gaussian_rdp_integer(q, z, a), a, delta) for a in range(2, 257)
    )
    fractional = [1 + k / 10 for k in range(1, 100) if k % 10]
    return min(
        best,
        *(
            _convert(rounds * _sampled_gaussian_rdp_fractional(q, z, a), a, delta)
            for a in fractional
        ),
    )


def _pld_accountant(event: dp_accounting.DpEvent) -> float:
    accountant = dp_accounting.pld.PLDAccountant()
    accountant.compose(event)
    return float(accountant.get_epsilon(DELTA))


def _tff_ledger(budget: float = 10.0, **charge: object) -> PrivacyLedger:
    ledger = PrivacyLedger(budget, DELTA)
    sampling = Sampling.poisson(TFF_Q, "server")
    for r in range(TFF_ROUNDS):
        ledger.charge(f"round-{r}", GAUSSIAN(TFF_Z), sampling=sampling, **charge)  # type: ignore[arg-type]
    return ledger


# --- anchors -----------------------------------------------------------------------------


def test_the_tff_tutorial_anchor():
    ledger = _tff_ledger()
    achieved = ledger.guarantee().epsilon
    # The same rounds as one self-composed event are the same leaf, the same PLD.
    one = epsilon_of([SELF(POISSON(TFF_Q, GAUSSIAN(TFF_Z)), TFF_ROUNDS)], DELTA)
    assert achieved == one
    # PLD: dp-accounting's accountant on the same event. The ledger builds the same PLD
    # (interval 1e-4, pessimistic), so they agree far inside the 1% asked; the pinned
    # 1.7075 is to its printed precision.
    reference = _pld_accountant(SELF(POISSON(TFF_Q, GAUSSIAN(TFF_Z)), TFF_ROUNDS))
    assert achieved == pytest.approx(reference, rel=0.01)
    assert achieved == pytest.approx(TFF_PLD, abs=1e-4)
    # RDP, computed here: 1.9861 (dp-accounting's RdpAccountant, same orders), which the
    # PLD must not exceed: both bound the same mechanism, the PLD tighter.
    independent = _independent_rdp_epsilon(TFF_Q, TFF_Z, TFF_ROUNDS, DELTA)
    assert independent == pytest.approx(TFF_RDP, abs=1e-4)
    assert achieved <= independent


def test_full_participation_matches_the_independent_rdp_and_the_pld_accountant():
    """Every client every round (q = 1, the unsampled case): the ledger's ε for 100
    rounds at z = 1.2 is one Gaussian of multiplier z/√100 (closed form), checked
    against the test's own RDP computation at q = 1 (α·R/(2z²), converted: an upper
    bound, so at or above the ledger's) and dp-accounting's PLD accountant (to 1%, the
    accountant's discretisation)."""
    ledger = PrivacyLedger(1000.0, DELTA)
    for r in range(TFF_ROUNDS):
        ledger.charge(f"round-{r}", GAUSSIAN(TFF_Z))
    found = ledger.guarantee().epsilon
    orders = [*range(2, 257), *(1 + k / 10 for k in range(1, 100) if k % 10)]
    independent = min(_convert(TFF_ROUNDS * a / (2 * TFF_Z**2), a, DELTA) for a in orders)
    assert found <= independent
    assert found == pytest.approx(_pld_accountant(SELF(GAUSSIAN(TFF_Z), TFF_ROUNDS)), rel=0.01)


@pytest.mark.parametrize(
    ("realised", "rdp", "pld"),
    [
        # distributed noise: 30% of the shares drop, the realised multiplier is z·√0.7
        (TFF_Z * math.sqrt(0.7), 2.92, 2.4733),
        # central noise on the mean over the 70% who stayed: the sum's sensitivity grows
        # by 1/0.7, the realised multiplier is z·0.7
        (TFF_Z * 0.7, 4.45, 3.7544),
    ],
)
def test_dropout_anchors(realised, rdp, pld):
    ledger = _tff_ledger()
    for entry in ledger.entries:
        ledger.settle(entry.label, GAUSSIAN(realised))
    achieved = ledger.guarantee().epsilon
    # the independent RDP to the 0.01 the figures are quoted at
    assert _independent_rdp_epsilon(TFF_Q, realised, TFF_ROUNDS, DELTA) == pytest.approx(
        rdp, abs=0.01
    )
    # the ledger's PLD: dp-accounting's figure (to its printed precision), below the RDP
    assert achieved == pytest.approx(pld, abs=1e-4)
    assert achieved < rdp


def test_the_sampled_gaussian_curve_is_dp_accountings():
    # the vectorised binomial sum against dp-accounting's order-by-order one: the same
    # sum of positive terms, so equal to float rounding (1e-9 leaves room for the
    # different summation order at α = 256, where terms span hundreds of e-folds)
    for q, z in [(TFF_Q, TFF_Z), (0.01, 0.8), (0.3, 3.0)]:
        ours = poisson_gaussian_rdp(q, z, 256)
        theirs = rdp_module._compute_rdp_poisson_subsampled_gaussian(q, z, np.arange(2, 257))
        np.testing.assert_allclose(ours, theirs, rtol=1e-9)


def test_one_sampled_round_is_dp_accountings_pld():
    # a count of 1 skips the accountant's self_compose(1); the PLD is the same
    event = POISSON(TFF_Q, GAUSSIAN(TFF_Z))
    assert epsilon_of([event], DELTA) == pytest.approx(_pld_accountant(event), rel=1e-9)


# --- who must stay honest ---------------------------------------------------------------


def test_a_colluding_sampler_gets_the_unamplified_rounds():
    ledger = _tff_ledger()
    honest = ledger.guarantee()
    # the server knows who it sampled: each round is the plain Gaussian, and 100 of
    # z = 1.2 are exactly one Gaussian of 1.2/√100 (Dong, Roth & Su 2019, Cor. 3.3)
    colluding = ledger.guarantee({"server"})
    assert colluding.epsilon == pytest.approx(
        gaussian_epsilon(TFF_Z / math.sqrt(TFF_ROUNDS), DELTA), rel=1e-12
    )
    assert honest.epsilon == pytest.approx(TFF_PLD, abs=1e-4)
    assert honest.epsilon < colluding.epsilon
    assert honest.events[0].amplification == (
        "amplified by Poisson sampling at q = 0.0355 (while server is honest)"
    )
    assert colluding.events[0].amplification == "not applied: sampler colluding (server)"
    assert colluding.events[0].realised == repr(GAUSSIAN(TFF_Z))
    # the record's planned event is the sampled one, as charged
    assert colluding.events[0].planned == repr(POISSON(TFF_Q, GAUSSIAN(TFF_Z)))
    # anyone else colluding leaves the amplification alone
    assert ledger.guarantee({"client-7"}).epsilon == honest.epsilon


def test_trust_broken_is_non_private_with_or_without_amplification():
    ledger = PrivacyLedger(10.0, DELTA)
    ledger.charge(
        "r", GAUSSIAN(1.0), trust=Trust.each("curator"), sampling=Sampling.poisson(0.1, "server")
    )
    g = ledger.guarantee({"curator"})
    assert math.isinf(g.epsilon)
    assert g.events[0].amplification == "not applied: the release is not private"


def test_noise_shares_are_realised_then_sampled():
    sigma_i, q = 0.5, 0.05
    clients = [f"c{i}" for i in range(10)]
    ledger = PrivacyLedger(10.0, DELTA)
    ledger.charge(
        "round",
        GAUSSIAN(math.sqrt(9) * sigma_i),
        trust=Trust.one_of(["n0", "n1"]),
        noise=NoiseShares(contributors=clients, share_multiplier=sigma_i),
        sampling=Sampling.poisson(q, "server"),
    )
    ledger.settle("round", contributors=clients[:7])
    (entry,) = ledger.entries
    # H = 7 honest shares, one uncredited: √(H − 1)·σ_i/Δ
    assert entry.event == POISSON(q, GAUSSIAN(math.sqrt(6) * sigma_i))
    # two of them colluding: H = 5
    assert entry.event_against({"c0", "c1"}) == POISSON(q, GAUSSIAN(math.sqrt(4) * sigma_i))
    # with the sampler: the realised Gaussian, unamplified
    assert entry.event_against({"server"}) == GAUSSIAN(math.sqrt(6) * sigma_i)
    assert ledger.guarantee().epsilon == epsilon_of([entry.event], DELTA)


def test_withheld_and_settled_entries_keep_their_sampling():
    sampling = Sampling.poisson(0.1, "server")
    ledger = PrivacyLedger(10.0, DELTA)
    ledger.charge("a", GAUSSIAN(1.0), sampling=sampling)
    ledger.charge("b", GAUSSIAN(1.0), sampling=sampling)
    ledger.withhold("a")
    ledger.settle("b", GAUSSIAN(2.0))
    a, b = ledger.entries
    assert a.sampling == b.sampling == sampling
    assert b.event == POISSON(0.1, GAUSSIAN(2.0))
    records = ledger.guarantee().events
    assert records[0].amplification == "" and records[0].realised == repr(
        dp_accounting.NoOpDpEvent()
    )
    assert records[1].amplification.startswith("amplified by Poisson sampling")


# --- sampling without replacement --------------------------------------------------------


def test_a_fixed_cohort_composes_by_pld_with_dp_accountings_rdp_as_a_cross_check():
    # 60 rounds of 120 of 3383 at z = 1.2, then 40 at z = 1.0 (dropouts): two leaves.
    n, m = 3383, 120
    ledger = PrivacyLedger(20.0, DELTA, neighbour="replace_one")
    sampling = Sampling.fixed(n, m, "server")
    for r in range(100):
        ledger.charge(f"round-{r}", GAUSSIAN(TFF_Z), sampling=sampling)
        if r >= 60:
            ledger.settle(f"round-{r}", GAUSSIAN(1.0))
    achieved = ledger.guarantee().epsilon
    found = leaves([entry.event for entry in ledger.entries])
    # The RDP cross-check is dp-accounting's RdpAccountant on the same events and its own
    # orders to 256 (those the ledger computes exactly; it interpolates the others as
    # dp-accounting does for fractional orders): the same curve and conversion, so equal
    # to rounding; never below it.
    orders = [o for o in rdp_module.DEFAULT_RDP_ORDERS if o <= 256]
    accountant = rdp_module.RdpAccountant(orders, dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant.compose(SELF(WOR(n, m, GAUSSIAN(TFF_Z)), 60))
    accountant.compose(SELF(WOR(n, m, GAUSSIAN(1.0)), 40))
    reference = accountant.get_epsilon(DELTA)
    by_rdp = _rdp_bound(found, DELTA, "replace_one")
    assert by_rdp == pytest.approx(reference, rel=1e-6)
    assert by_rdp >= reference * (1 - 1e-12)
    # The ledger reports the smaller: the dominating pair's PLD (tests/sim/test_wor_pld.py
    # checks it against the pair computed apart), far below RDP here.
    assert achieved == _pld_epsilon(found, DELTA, "replace_one")
    assert achieved < 0.6 * reference
    # the colluding server: 60 Gaussians of 1.2 and 40 of 1.0, one Gaussian in closed form
    unamplified = (60 / TFF_Z**2 + 40 / 1.0) ** -0.5
    assert ledger.guarantee({"server"}).epsilon == pytest.approx(
        gaussian_epsilon(unamplified, DELTA), rel=1e-12
    )


def test_a_sampling_must_amplify_under_the_ledgers_relation():
    with pytest.raises(ValueError, match="replace_one"):
        PrivacyLedger(1.0, DELTA).charge("r", GAUSSIAN(1.0), sampling=Sampling.fixed(10, 5, "s"))
    with pytest.raises(ValueError, match="add_remove"):
        PrivacyLedger(1.0, DELTA, neighbour="replace_one").charge(
            "r", GAUSSIAN(1.0), sampling=Sampling.poisson(0.5, "s")
        )


# --- integer noise on a Poisson sample ----------------------------------------------------

DDG = IntegerShares(
    kind="discrete_gaussian", parameter=30.0, l1=200.0, l2=40.0, dimension=100, delta=DELTA
)


@pytest.mark.parametrize(("q", "z"), [(TFF_Q, TFF_Z), (0.01, 0.8), (0.1, 2.0), (0.001, 5.0)])
def test_zhu_wang_bounds_the_exact_sampled_gaussian(q, z):
    # On the Gaussian's own curve α/(2z²), Theorem 6 must lie on or above the exact
    # sampled-Gaussian RDP at every integer order (to float rounding: at α = 2 the two
    # are the same sum, 1 − q² + q²e^{1/z²}). Measured ratios: 1 at α = 2, at most 2.3
    # (TFF's q, z), 2.6, 2.7 and 4.9 (q = 0.001, z = 5, at α = 256, where both are
    # tiny) for these four; the bound is loose by a factor 3 on the terms j ≥ 3.
    orders = np.arange(2, 257, dtype=np.float64)
    bound = poisson_subsampled_rdp(orders / (2 * z * z), q, orders)
    exact = rdp_module._compute_rdp_poisson_subsampled_gaussian(q, z, orders)
    assert np.all(bound >= exact * (1 - 1e-12))
    assert bound[0] == pytest.approx(exact[0], rel=1e-9)
    assert np.max(bound / exact) < 5.0
    # q = 1: the base curve itself
    np.testing.assert_array_equal(poisson_subsampled_rdp(orders / 2.0, 1.0, orders), orders / 2.0)


def test_interpolation_between_integer_orders_is_the_cumulants_chord():
    # (α − 1)·ε(α) linear between the grid points and 0 at α = 1; ∞ above the grid
    got = interpolate_rdp([2, 3, 4], [1.0, 2.0, 3.0], [1.5, 2.0, 2.5, 3.5, 4.0, 5.0])
    np.testing.assert_allclose(got[:5], [1.0, 1.0, 2.5 / 1.5, 6.5 / 2.5, 3.0], rtol=1e-15)
    assert math.isinf(got[5])


def test_sampled_integer_noise_composes_below_unsampled():
    event = DDG.event(50)
    unsampled = epsilon_of([SELF(event, 100)], DELTA)
    sampled = epsilon_of([SELF(POISSON(0.05, event), 100)], DELTA)
    # Measured 9.98 unsampled, 1.17 sampled at q = 0.05.
    assert sampled < unsampled / 5
    # q = 1: the unsampled curve at every order, the same composition exactly
    assert epsilon_of([SELF(POISSON(1.0, event), 100)], DELTA) == unsampled
    assert Sampling.poisson(1.0, "server").wrap(event) is event
    # the curve never exceeds the unsampled one
    sampled_curve = leaf_rdp(POISSON(0.05, event), COMPOSITION_ORDERS, "add_remove")
    assert sampled_curve is not None
    assert np.all(sampled_curve <= DDG.rdp(50, COMPOSITION_ORDERS))


def test_integer_noise_shares_are_realised_then_sampled():
    clients = [f"c{i}" for i in range(50)]
    planned = equivalent_gaussian(DDG.epsilon(49), DELTA)
    ledger = PrivacyLedger(10.0, DELTA)
    ledger.charge(
        "round",
        planned,
        noise=NoiseShares(contributors=clients, kind="integer", integer=DDG, needed=50),
        sampling=Sampling.poisson(0.05, "server"),
    )
    ledger.settle("round", contributors=clients[:40])
    (entry,) = ledger.entries
    assert entry.event == POISSON(0.05, DDG.event(39))
    assert entry.event_against({"server"}) == DDG.event(39)
    assert ledger.guarantee().epsilon < DDG.epsilon(39)
    with pytest.raises(ValueError, match="Poisson sampling only"):
        PrivacyLedger(10.0, DELTA, neighbour="replace_one").charge(
            "round",
            planned,
            noise=NoiseShares(contributors=clients, kind="integer", integer=DDG, needed=50),
            sampling=Sampling.fixed(100, 50, "server"),
        )


# --- the budget ---------------------------------------------------------------------------


def test_the_charge_that_overspends_is_refused_at_that_round():
    q, z, stop = 0.05, 1.0, 6
    event = POISSON(q, GAUSSIAN(z))
    before = epsilon_of([SELF(event, stop - 1)], DELTA)
    after = epsilon_of([SELF(event, stop)], DELTA)
    budget = (before + after) / 2  # rounds 1…5 fit, round 6 does not
    ledger = PrivacyLedger(budget, DELTA)
    sampling = Sampling.poisson(q, "server")
    for r in range(1, stop):
        ledger.charge(f"round-{r}", GAUSSIAN(z), sampling=sampling)
    with pytest.raises(BudgetExceededError, match="round-6"):
        ledger.charge(f"round-{stop}", GAUSSIAN(z), sampling=sampling)
    assert len(ledger.entries) == stop - 1
    assert ledger.guarantee().epsilon == pytest.approx(before, rel=1e-12)
    assert ledger.guarantee().met


# --- speed --------------------------------------------------------------------------------


def test_the_pld_interval_grows_with_the_distinct_sampled_leaves():
    def sampled(n: int) -> list[tuple[dp_accounting.DpEvent, int]]:
        return [(POISSON(0.1, GAUSSIAN(1.0 + i / 1000)), 3) for i in range(n)]

    assert pld_interval([*sampled(4), (GAUSSIAN(1.0), 5)]) == 1e-4
    assert pld_interval(sampled(5)) == pytest.approx(2e-4, rel=1e-12)
    assert pld_interval(sampled(200)) == pytest.approx(6.4e-3, rel=1e-12)
    assert pld_interval(sampled(2000)) == 1e-2


def test_many_equal_rounds_compose_as_one_leaf_self_composed():
    # 200 equal rounds are one leaf, self-composed by its count (its speed is a figure
    # of benchmarks/bench_ledger_sampled.py, not asserted here): the same ε as 200
    # separate charges of it.
    event = POISSON(TFF_Q, GAUSSIAN(TFF_Z * 1.01))
    assert epsilon_of([SELF(event, 200)], DELTA) == epsilon_of([event] * 200, DELTA)


def test_many_distinct_rounds_compose_between_their_extremes():
    # 200 rounds with 200 different realised multipliers (dropouts differ), at the
    # coarser interval pld_interval picks (6.4e-3): sandwiched by the rounds' extremes,
    # all at the least noise and all at the most (more noise is a post-processing of
    # less, so each leaf lies between them).
    zs = TFF_Z * np.sqrt(np.linspace(0.6, 1.0, 200))
    events = [POISSON(TFF_Q, GAUSSIAN(float(z))) for z in zs]
    mixed = epsilon_of(events, DELTA)
    worst = epsilon_of([SELF(POISSON(TFF_Q, GAUSSIAN(float(zs[0]))), 200)], DELTA)
    best = epsilon_of([SELF(POISSON(TFF_Q, GAUSSIAN(float(zs[-1]))), 200)], DELTA)
    assert best < mixed < worst


# --- Sampling itself ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "argument"),
    [
        (lambda: Sampling.poisson(0.0, "server"), "rate"),
        (lambda: Sampling.poisson(1.5, "server"), "rate"),
        (lambda: Sampling.poisson(math.nan, "server"), "rate"),
        (lambda: Sampling.poisson(True, "server"), "rate"),
        (lambda: Sampling.poisson(0.1, ""), "sampler"),
        (lambda: Sampling.fixed(0, 1, "server"), "population"),
        (lambda: Sampling.fixed(10.5, 1, "server"), "population"),
        (lambda: Sampling.fixed(10, 0, "server"), "size"),
        (lambda: Sampling.fixed(10, 11, "server"), "size"),
    ],
)
def test_bad_samplings_are_errors_naming_the_argument(build, argument):
    with pytest.raises(ValueError, match=f"^{argument} must"):
        build()


def test_what_sampling_leaves_alone_and_what_it_refuses():
    poisson = Sampling.poisson(0.1, "server")
    for event in (
        dp_accounting.NonPrivateDpEvent(),
        dp_accounting.NoOpDpEvent(),
        GAUSSIAN(0.0),  # no noise: non-private
    ):
        assert poisson.wrap(event) is event
    assert Sampling.fixed(10, 10, "server").wrap(GAUSSIAN(1.0)) == GAUSSIAN(1.0)
    # Gaussians on one sample are one Gaussian: (1/1² + 2/2²)^(−1/2)
    composed = dp_accounting.ComposedDpEvent([GAUSSIAN(1.0), SELF(GAUSSIAN(2.0), 2)])
    assert poisson.wrap(composed) == POISSON(0.1, GAUSSIAN(1.5**-0.5))
    with pytest.raises(TypeError, match="GenericPureDpEvent"):
        poisson.wrap(GenericPureDpEvent(1.0))
    with pytest.raises(TypeError, match="PoissonSampledDpEvent"):
        poisson.wrap(POISSON(0.5, GAUSSIAN(1.0)))
    with pytest.raises(TypeError, match="LaplaceDpEvent"):
        Sampling.fixed(10, 5, "server").wrap(dp_accounting.LaplaceDpEvent(1.0))
    # handed to the ledger directly, the same refusal
    with pytest.raises(TypeError, match="GenericPureDpEvent"):
        epsilon_of([POISSON(0.1, GenericPureDpEvent(1.0))], DELTA)
    # a sample of nobody costs nothing; a non-private release on a sample is non-private
    assert epsilon_of([POISSON(0.0, GAUSSIAN(1.0))], DELTA) == 0.0
    assert math.isinf(epsilon_of([POISSON(0.1, dp_accounting.NonPrivateDpEvent())], DELTA))


def test_descriptions():
    assert Sampling.poisson(TFF_Q, "server").description() == (
        "amplified by Poisson sampling at q = 0.0355 (while server is honest)"
    )
    assert Sampling.fixed(3383, 120, "server").description() == (
        "amplified by sampling 120 of 3383 without replacement (q = 0.0355, while server is honest)"
    )
    assert Sampling.fixed(3383, 120, "server").neighbour == "replace_one"
    assert Sampling.poisson(0.5, "server").neighbour == "add_remove"


def test_a_tiny_sampled_multiplier_gets_its_rdp_figure_not_a_giant_pld():
    """z = 10⁻³ under Poisson sampling: the PLD's grid would take tens of gigabytes
    (its privacy loss spans ~2·10⁶); the ledger refuses to build it and reports the RDP
    composition, finite and larger than the budget of any real use."""
    from privsim.sim.events import check_gaussian_span

    with pytest.raises(OverflowError):
        check_gaussian_span(1e-3)
    check_gaussian_span(0.5)  # a usable multiplier is built as before
    found = epsilon_of([SELF(POISSON(0.3, GAUSSIAN(1e-3)), 4)], DELTA)
    assert math.isfinite(found) and found > 1e4
