"""Each event composes as what it is (issue #27, §§2–3): a pure ε-DP mechanism of unknown
shape as the worst-case (ε, 0) pair, never as Laplace; randomized response under the
scenario's neighbouring relation and with every one of its compositions counted; the
exponential mechanism as a bounded-range mechanism; integer noise by the papers' RDP
curves, summed over releases.

Figures are pinned at dp-accounting's PLD (pessimistic discretisation, interval 1e-4) or
at a fixed grid of Rényi orders; the tolerances say why they are what they are."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.pld.common import DifferentialPrivacyParameters
from scipy import integrate

import privsim
from privsim.kit.intnoise.accounting import account, calibrate
from privsim.kit.intnoise.noise import DEFAULT_BETA
from privsim.kit.intnoise.rounding import integer_sensitivity
from privsim.sim.calibration import gaussian_epsilon
from privsim.sim.events import (
    ApproximateDpEvent,
    BoundedRangeDpEvent,
    GenericPureDpEvent,
    IntegerNoiseDpEvent,
    bounded_range_rdp,
    generic_pure_rdp,
    laplace_rdp,
    leaf_rdp,
    randomized_response_epsilon,
)
from privsim.sim.integer_bounds import COMPOSITION_ORDERS, ORDERS, IntegerShares, rdp_to_epsilon
from privsim.sim.ledger import (
    BudgetExceededError,
    NoiseShares,
    PrivacyLedger,
    Trust,
    compose,
    epsilon_of,
    leaves,
    pure_epsilon,
)

SELF = dp_accounting.SelfComposedDpEvent
LAPLACE = dp_accounting.LaplaceDpEvent
GAUSSIAN = dp_accounting.GaussianDpEvent
RR = dp_accounting.RandomizedResponseDpEvent


def _binary_rr(epsilon: float) -> dp_accounting.RandomizedResponseDpEvent:
    """Binary randomized response at ε: p = 2/(e^ε + 1)."""
    return RR(2.0 / (math.exp(epsilon) + 1.0), 2)


# --- §2: pure ε-DP mechanisms -----------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "epsilon", "delta", "generic", "laplace"),
    [(50, 0.5, 1e-4, 17.5129, 15.9749), (100, 0.1, 1e-5, 4.3068, 4.2203)],
)
def test_a_pure_event_of_unknown_shape_composes_as_the_worst_case_pair(
    steps, epsilon, delta, generic, laplace
):
    # The table: 17.51 and 4.31 as any eps-DP mechanism, 15.97 and 4.22 as
    # Laplace. Pinned to 1e-3: the PLD is deterministic; the slack covers float
    # summation order, and is far below the gaps (1.5 and 0.086) it separates.
    as_generic = epsilon_of([SELF(GenericPureDpEvent(epsilon), steps)], delta)
    as_laplace = epsilon_of([SELF(LAPLACE(1.0 / epsilon), steps)], delta)
    assert as_generic == pytest.approx(generic, abs=1e-3)
    assert as_laplace == pytest.approx(laplace, abs=1e-3)
    # the worst-case pair itself, as dp-accounting builds it, composed step by step
    pair = pld.from_privacy_parameters(DifferentialPrivacyParameters(epsilon, 0.0))
    assert as_generic == pytest.approx(
        pair.self_compose(steps).get_epsilon_for_delta(delta), rel=1e-9
    )
    # ... and reported so at delta > 0 (far below the basic theorem's steps * epsilon),
    # and as the basic theorem at delta = 0
    assert compose([SELF(GenericPureDpEvent(epsilon), steps)], delta) == pytest.approx(
        (generic, delta), abs=1e-3
    )
    assert compose([SELF(GenericPureDpEvent(epsilon), steps)], 0.0) == pytest.approx(
        (steps * epsilon, 0.0), rel=1e-12
    )


@pytest.mark.parametrize("neighbour", ["replace_one", "add_remove"])
def test_self_composed_randomized_response_counts_every_composition(neighbour):
    # dp-accounting 0.6.0's PLD accountant drops the count: 50 compositions of RR at
    # eps = 0.5 come out as one (0.4999 at delta = 1e-4). Fifty separate events give
    # 17.52; the ledger gives that for the self-composed event too. Binary RR is the
    # worst-case pair, so both relations give the generic pair's 17.513 up to the
    # discretisation of eps = ln(1 + (1 - p)·2/p), which rounds up by one 1e-4 step.
    event = SELF(_binary_rr(0.5), 50)
    counted = epsilon_of([event], 1e-4, neighbour=neighbour)
    assert counted == pytest.approx(17.517, abs=1e-3)
    separate = epsilon_of([_binary_rr(0.5)] * 50, 1e-4, neighbour=neighbour)
    assert counted == pytest.approx(separate, rel=1e-9)
    assert pure_epsilon(event) == pytest.approx(25.0, rel=1e-12)


def test_dp_accountings_own_accountant_still_drops_the_count():
    # Why the ledger builds the PLD itself. If dp-accounting fixes this, the ledger's
    # own composition stays right; this test then only needs deleting.
    accountant = dp_accounting.pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant.compose(SELF(_binary_rr(0.5), 50))
    assert accountant.get_epsilon(1e-4) == pytest.approx(0.4999, abs=1e-3)


def test_randomized_response_under_add_remove_is_the_generic_pair_at_its_epsilon():
    # 10-ary RR with p = 0.9: eps = ln(1 + 0.1·10/0.9) = ln(19/9). Replace-one: its exact
    # pair, where 8 outputs of 10 tell nothing; add/remove-one: the generic pair at
    # ln(19/9), far above it (10-ary RR is not the worst case). 20 compositions.
    event = RR(0.9, 10)
    assert randomized_response_epsilon(event) == pytest.approx(math.log(19 / 9), rel=1e-14)
    twenty = SELF(event, 20)
    exact = epsilon_of([twenty], 1e-5, neighbour="replace_one")
    generic = epsilon_of([twenty], 1e-5, neighbour="add_remove")
    expected_exact = (
        pld.from_randomized_response(
            0.9, 10, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE
        )
        .self_compose(20)
        .get_epsilon_for_delta(1e-5)
    )
    assert exact == pytest.approx(expected_exact, rel=1e-9)
    # the generic pair at ln(19/9), up to one 1e-4 rounding step of eps per composition
    assert generic == pytest.approx(
        epsilon_of([SELF(GenericPureDpEvent(math.log(19 / 9)), 20)], 1e-5), abs=2e-3
    )
    assert exact == pytest.approx(8.5978, abs=1e-3) and generic == pytest.approx(14.9224, abs=1e-3)
    ledger = PrivacyLedger(100.0, 1e-5)  # the default relation: add/remove-one
    ledger.charge("answers", twenty)  # no UnsupportedEventError
    assert ledger.epsilon() == pytest.approx(generic, rel=1e-12)
    assert ledger.guarantee().epsilon == pytest.approx(20 * math.log(19 / 9), rel=1e-12)
    exact_ledger = PrivacyLedger(100.0, 1e-5, neighbour="replace_one")
    exact_ledger.charge("answers", twenty)
    assert exact_ledger.epsilon() == pytest.approx(exact, rel=1e-12)
    with pytest.raises(ValueError, match="neighbour must be"):
        PrivacyLedger(1.0, 1e-5, neighbour="swap")  # type: ignore[arg-type]


def test_randomized_response_edges():
    assert epsilon_of([RR(0.0, 2)], 1e-5) == math.inf  # no noise
    assert epsilon_of([RR(0.3, 1)], 1e-5) == 0.0  # one bucket: nothing to tell
    assert epsilon_of([RR(1.0, 5)], 1e-5) == 0.0  # pure noise
    with pytest.raises(ValueError, match="randomized response needs"):
        randomized_response_epsilon(RR(1.5, 2))


@pytest.mark.parametrize("epsilon", np.geomspace(0.01, 3.0, 25).tolist())
def test_laplace_dominates_every_bounded_range_pair(epsilon):
    # An eps-BR pair has privacy loss in [-t·eps, (1 - t)·eps]; by convexity its worst
    # case is the two-point pair at the ends. The ledger's stand-in, Laplace at eps, must
    # lie above the sup over t of those pairs' hockey-stick curves at every eps' >= 0
    # (the t <-> 1 - t symmetry covers the other direction). Sup over a 20001-point
    # grid of t; the largest ratio found is 0.82, so the margin dwarfs the grid's error.
    t = np.linspace(0.0, 1.0, 20001)[1:-1]
    high, low = np.exp((1.0 - t) * epsilon), np.exp(-t * epsilon)
    q = (1.0 - low) / (high - low)
    laplace = pld.from_laplace_mechanism(1.0 / epsilon)
    for level in np.linspace(0.0, epsilon, 31):
        bounded_range = float(np.max(np.maximum(q * (high - math.exp(level)), 0.0)))
        truth = max(0.0, 1.0 - math.exp((level - epsilon) / 2.0))  # Laplace's profile
        assert bounded_range <= truth * 0.83 + 1e-15
        assert truth <= laplace.get_delta_for_epsilon(level) + 1e-12  # PLD is pessimistic


def test_bounded_range_events_compose_tighter_than_laplace_and_never_below_the_truth():
    # 50 exponential-mechanism steps at eps = 0.5, delta = 1e-4: Laplace stand-in 15.97;
    # the RDP composition with eps^2/8-zCDP per step (Cesar & Rogers 2021) 8.28 (pinned
    # to 1e-3: a closed form minimised over a fixed order grid).
    steps = SELF(BoundedRangeDpEvent(0.5), 50)
    assert epsilon_of([steps], 1e-4) == pytest.approx(8.2806, abs=1e-3)
    # rho = 50·0.5²/8 zCDP converted over the same orders: what the figure is
    rho = 50 * 0.5**2 / 8
    zcdp, _ = rdp_to_epsilon(rho * COMPOSITION_ORDERS, COMPOSITION_ORDERS, 1e-4)
    assert epsilon_of([steps], 1e-4) == pytest.approx(zcdp, rel=1e-9)
    # one step: the Laplace pair (below eps, as every eps-DP mechanism at delta > 0)
    one = epsilon_of([BoundedRangeDpEvent(0.5)], 1e-4)
    assert one == pytest.approx(epsilon_of([LAPLACE(2.0)], 1e-4), rel=1e-12) and one <= 0.5
    # and never below the worst case of a BR mechanism with t = 1/2, composed exactly
    t_half = pld.from_two_probability_mass_functions(
        {0: math.log(1 / (1 + math.exp(0.25))), 1: math.log(1 / (1 + math.exp(-0.25)))},
        {0: math.log(1 / (1 + math.exp(-0.25))), 1: math.log(1 / (1 + math.exp(0.25)))},
    )
    assert epsilon_of([steps], 1e-4) >= t_half.self_compose(50).get_epsilon_for_delta(1e-4)


def test_the_summarization_events_with_each_mechanism_as_itself():
    # The built-in summarization (p = 100 epochs, T_init = 1656 iterations at eps_v =
    # 0.01, T_sub = 5 at 0.01/sqrt(500), auction eps = 0.5 per epoch) at delta = 1e-4.
    # Everything as Laplace: 26.55; the exponential-mechanism choice and the auction as
    # generic pairs: 29.17 (the figures); the choice as bounded range: 29.15.
    ev, es = 0.01, 0.01 / math.sqrt(500)

    def events(choice):
        return [
            SELF(dp_accounting.ComposedDpEvent([choice(ev), LAPLACE(1 / ev)]), 1656),
            SELF(dp_accounting.ComposedDpEvent([choice(es), LAPLACE(1 / es)]), 495),
        ]

    as_laplace = epsilon_of([*events(lambda e: LAPLACE(1 / e)), SELF(LAPLACE(2.0), 100)], 1e-4)
    auction = SELF(GenericPureDpEvent(0.5), 100)
    as_generic = epsilon_of([*events(GenericPureDpEvent), auction], 1e-4)
    as_bounded = epsilon_of([*events(BoundedRangeDpEvent), auction], 1e-4)
    assert as_laplace == pytest.approx(26.5458, abs=1e-3)
    assert as_generic == pytest.approx(29.1741, abs=1e-3)
    assert as_bounded == pytest.approx(29.1489, abs=1e-3)


def test_approximate_events_compose_as_the_generic_pair():
    ten = SELF(ApproximateDpEvent(0.5, 1e-6), 10)
    pair = pld.from_privacy_parameters(DifferentialPrivacyParameters(0.5, 1e-6))
    assert epsilon_of([ten], 1e-4) == pytest.approx(
        pair.self_compose(10).get_epsilon_for_delta(1e-4), rel=1e-9
    )
    assert compose([ten], 1e-4) == (epsilon_of([ten], 1e-4), 1e-4)
    # The paper's auction: (eps_auc, 1 - e^-eps_auc) per epoch; 100 epochs leave no
    # guarantee at any small delta (infinite privacy loss w.p. 1 - e^-50).
    paper = SELF(ApproximateDpEvent(0.5, 1 - math.exp(-0.5)), 100)
    assert epsilon_of([paper], 1e-4) == math.inf
    assert compose([SELF(ApproximateDpEvent(0.5, 0.0), 4)], 1e-4) == (2.0, 0.0)  # pure


def test_a_short_pure_composition_keeps_the_basic_theorem():
    # Σ ε = 1.9375 over six events: the PLD at 1e-5 is not 1 % below it, so the pure
    # (ε, 0) statement stands (privsim.sim.ledger.PURE_MARGIN)
    events = [
        LAPLACE(2.0),
        GenericPureDpEvent(0.25),
        BoundedRangeDpEvent(0.125),
        ApproximateDpEvent(0.0625, 0.0),
        SELF(_binary_rr(0.5), 2),
        dp_accounting.NoOpDpEvent(),
    ]
    assert compose(events, 1e-5) == pytest.approx((0.5 + 0.25 + 0.125 + 0.0625 + 1.0, 0.0))
    assert pure_epsilon(dp_accounting.ComposedDpEvent(events)) == pytest.approx(1.9375)
    assert pure_epsilon(ApproximateDpEvent(0.5, 1e-6)) is None
    assert epsilon_of([GenericPureDpEvent(math.inf)], 1e-5) == math.inf
    assert epsilon_of([GenericPureDpEvent(0.0), BoundedRangeDpEvent(0.0)], 1e-5) == 0.0


def test_leaves_multiply_counts_merge_equal_events_and_drop_no_ops():
    step = dp_accounting.ComposedDpEvent([GenericPureDpEvent(0.1), LAPLACE(2.0)])
    found = leaves([SELF(step, 3), GenericPureDpEvent(0.1), dp_accounting.NoOpDpEvent()])
    assert found == [(GenericPureDpEvent(0.1), 4), (LAPLACE(2.0), 3)]
    assert leaves([SELF(GAUSSIAN(1.0), 0)]) == []


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (GenericPureDpEvent, {"epsilon": -1.0}, "epsilon must be >= 0"),
        (BoundedRangeDpEvent, {"epsilon": math.nan}, "epsilon must be >= 0"),
        (ApproximateDpEvent, {"epsilon": 1.0, "delta": 1.5}, r"delta must be in \[0, 1\]"),
    ],
)
def test_events_check_their_parameters(cls, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


# --- the RDP curves the integer path composes with ------------------------------------


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 2.0])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 8.0, 64.0])
def test_rdp_curves_are_the_renyi_divergences_of_their_pairs(epsilon, alpha):
    def renyi(p, q):
        return math.log(sum(pi**alpha * qi ** (1 - alpha) for pi, qi in zip(p, q, strict=True))) / (
            alpha - 1
        )

    e = math.exp(epsilon)
    binary = ([e / (1 + e), 1 / (1 + e)], [1 / (1 + e), e / (1 + e)])
    assert generic_pure_rdp([alpha], epsilon)[0] == pytest.approx(renyi(*binary), rel=1e-9)
    # Laplace with b = 1/eps: the integral of p^alpha q^(1-alpha), numerically
    b = 1.0 / epsilon

    def integrand(x):
        return math.exp(-alpha * abs(x) / b - (1 - alpha) * abs(x - 1) / b) / (2 * b)

    total = sum(
        integrate.quad(integrand, lo, hi)[0] for lo, hi in ((-60 * b, 0), (0, 1), (1, 60 * b))
    )
    if alpha * epsilon < 30:  # beyond, the integral underflows where the curve is capped
        assert laplace_rdp([alpha], b)[0] == pytest.approx(
            min(math.log(total) / (alpha - 1), epsilon), rel=1e-6
        )
    # k-ary RR, replace-one: a = 1 - p + p/k on the true bucket, b = p/k elsewhere
    p, k = 0.3, 5
    hi, lo = 1 - p + p / k, p / k
    pair = ([hi, lo, lo, lo, lo], [lo, hi, lo, lo, lo])
    rdp = leaf_rdp(RR(p, k), [alpha], "replace_one")
    assert rdp is not None and rdp[0] == pytest.approx(renyi(*pair), rel=1e-9)


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 2.0])
def test_bounded_range_rdp_bounds_every_bounded_range_pair(epsilon):
    # sup over t of the two-point BR pairs' D_alpha never exceeds min(alpha eps²/8,
    # the generic pair's): the curve the ledger composes BR events with.
    orders = np.array([1.5, 2.0, 4.0, 16.0, 128.0])
    curve = bounded_range_rdp(orders, epsilon)
    for t in np.linspace(0.0, 1.0, 401)[1:-1]:
        high, low = math.exp((1 - t) * epsilon), math.exp(-t * epsilon)
        q = (1 - low) / (high - low)  # P = (q·high, 1 - q·high), Q = (q, 1 - q)
        log_p, log_q = math.log(q * high), math.log(q)
        log_p1, log_q1 = math.log1p(-q * high), math.log1p(-q)
        d = np.logaddexp(
            orders * log_p + (1 - orders) * log_q, orders * log_p1 + (1 - orders) * log_q1
        )
        assert np.all(d / (orders - 1) <= curve * (1 + 1e-9))
    assert np.all(curve <= orders * epsilon**2 / 8 + 1e-15)


# --- §3: integer noise composed ---------------------------------------------------------


def _ddg_case() -> IntegerShares:
    """DDG, N = 10⁴, T = 10³ (8999 credited shares), d = 10, scale 1, replace-one,
    beta = e^-1/2: sigma_i = 0.8455 calibrated to eps = 1 at delta = 1e-5."""
    sens = integer_sensitivity(1.0, 1.0, 10, DEFAULT_BETA, replace_one=True)
    sigma = calibrate(
        "discrete_gaussian", 1.0, delta=1e-5, honest_clients=8999, sensitivity=sens, dimension=10
    )
    assert sigma == pytest.approx(0.8455, abs=1e-4)
    acct = account(
        "discrete_gaussian", sigma, honest_clients=8999, sensitivity=sens, dimension=10, delta=1e-5
    )
    return acct.bound


def _skellam_case() -> IntegerShares:
    """The built-in secagg scenario with Skellam noise, noise multiplier 6 and scale 1
    (fraction_bits = 0): 100 clients, T = 10, d = 100, replace-one."""
    from privsim.protocols.secagg.run import noise_plan
    from privsim.scenarios import scenario_from_dict
    from privsim.scenarios.convert import set_fields

    path = Path(privsim.__file__).parent / "scenarios" / "secagg.toml"
    data = set_fields(
        tomllib.loads(path.read_text()),
        {"secagg.noise": "skellam", "secagg.noise_multiplier": 6.0, "secagg.fraction_bits": 0},
    )
    plan = noise_plan(scenario_from_dict(data))
    assert plan is not None and plan.account.honest_clients == 89
    return plan.account.bound


# (shares, the single release's bound, {k: eps of k releases}). The RDP column of the
# issue's table. DDG: the bound holds at real orders and the best ones are fractional
# (2.6 for k = 100). Skellam: the built-in run (seed 2017) has 96 clients in the sum, 95
# credited (the target's own share is not), and reports eps = 23.19 for its release.
# Pinned at rel 1e-4: closed forms minimised over a fixed grid; the slack covers the
# calibrated sigma's bisection tolerance (1e-9) and float order, and sits far below
# the gaps to the equivalent-Gaussian figures (0.3 and more).
CASES = {
    "ddg": (_ddg_case, 8999, 1.0, {2: 1.7832, 10: 4.3917, 100: 17.5410}),
    "skellam": (_skellam_case, 95, 23.1913, {2: 36.2559, 10: 140.773, 100: 1316.59}),
}
EQUIVALENT_GAUSSIAN = {
    "ddg": {2: 1.465, 10: 3.619, 100: 14.43},
    "skellam": {2: 37.4, 10: 125.4, 100: 906},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_integer_releases_compose_by_the_papers_rdp_curves(case):
    build, shares, single, composed = CASES[case]
    bound = build()
    event = bound.event(shares)
    assert isinstance(event, IntegerNoiseDpEvent)
    # one release: exactly the bound (what the kit calibrates to and today's figure)
    assert epsilon_of([event], 1e-5) == bound.epsilon(shares)
    assert bound.epsilon(shares) == pytest.approx(single, rel=1e-4)
    for k, expected in composed.items():
        figure = epsilon_of([SELF(event, k)], 1e-5)
        assert figure == pytest.approx(expected, rel=1e-4), k
        # the k-fold RDP curve, converted over the composition orders: what the figure is
        curve = k * bound.rdp(shares, COMPOSITION_ORDERS)
        assert figure == rdp_to_epsilon(curve, COMPOSITION_ORDERS, 1e-5)[0]
        # the old reading, the equivalent Gaussian composed exactly, for the record
        old = gaussian_epsilon(event.noise_multiplier / math.sqrt(k), 1e-5)
        assert old == pytest.approx(EQUIVALENT_GAUSSIAN[case][k], rel=2e-3)
    # where the old reading was below the only proven bound, it no longer is
    assert all(epsilon_of([SELF(event, k)], 1e-5) > EQUIVALENT_GAUSSIAN[case][k] for k in (10, 100))


def test_skellam_orders_between_integers_take_the_next_integer():
    bound = IntegerShares(kind="skellam", parameter=3.0, l1=20.0, l2=4.0, dimension=16, delta=1e-5)
    curve = bound.rdp(10, np.array([2.0, 2.3, 3.0, 7.9, 8.0]))
    assert curve[1] == curve[2] and curve[3] == curve[4] and curve[0] < curve[1]


def test_integer_noise_mixed_with_gaussian_and_laplace_composes_in_rdp():
    bound = _ddg_case()
    event = bound.event(8999)
    mixed = [event, GAUSSIAN(3.0), LAPLACE(4.0)]
    orders = COMPOSITION_ORDERS
    curve = bound.rdp(8999, orders) + orders / (2 * 3.0**2) + laplace_rdp(orders, 4.0)
    assert epsilon_of(mixed, 1e-5) == rdp_to_epsilon(curve, orders, 1e-5)[0]
    assert epsilon_of(mixed, 1e-5) > epsilon_of([event], 1e-5)
    assert compose(mixed, 1e-5) == (epsilon_of(mixed, 1e-5), 1e-5)


def test_integer_noise_mixed_with_an_approximate_event_stays_an_upper_bound():
    # RDP has no curve for an (eps, delta > 0) pair: the RDP part's (eps_R, delta_R) pair
    # (delta_R a share of the delta the pair leaves) is composed with it as a PLD. Never
    # below either part; no worse than the basic theorem (the RDP part at delta - 2e-6,
    # plus the pair's 0.5), but for the PLD's rounding of each loss up to its 1e-4 grid.
    bound = _ddg_case()
    event, other = bound.event(8999), ApproximateDpEvent(0.5, 2e-6)
    both = epsilon_of([event, event, other], 1e-5)
    two = epsilon_of([SELF(event, 2)], 1e-5)
    curve = 2 * bound.rdp(8999, COMPOSITION_ORDERS)
    basic = rdp_to_epsilon(curve, COMPOSITION_ORDERS, 1e-5 - 2e-6)[0] + 0.5  # at delta
    assert two < both <= basic + 2e-4
    assert both > epsilon_of([other], 1e-5)
    assert epsilon_of([event, ApproximateDpEvent(0.5, 2e-5)], 1e-5) == math.inf


def test_the_ledger_composes_integer_releases_charged_and_settled_as_the_kit_does():
    bound = _ddg_case()
    clients = tuple(f"c{i}" for i in range(10_000))
    planned = bound.event(8999)
    gaussian = GAUSSIAN(planned.noise_multiplier)  # what the kit charges: plain Gaussian
    shares = NoiseShares(contributors=clients, kind="integer", needed=9000, integer=bound)
    ledger = PrivacyLedger(10.0, 1e-5)
    ledger.charge("round-0", gaussian, trust=Trust.nobody(), noise=shares)
    ledger.settle("round-0", contributors=clients)
    ledger.charge("round-1", gaussian, trust=Trust.nobody(), noise=shares)  # not settled
    # the unsettled release is the bound at its planned credit, not the plain Gaussian
    assert ledger.entries[1].event == planned
    assert ledger.epsilon() == pytest.approx(1.7832, rel=1e-4)
    assert ledger.guarantee().epsilon == ledger.epsilon()
    # a budget between the Gaussian reading (1.465) and the bound (1.783) refuses
    tight = PrivacyLedger(1.6, 1e-5)
    tight.charge("round-0", gaussian, noise=shares)
    with pytest.raises(BudgetExceededError, match=r"eps = 1\.783"):
        tight.charge("round-1", gaussian, noise=shares)


def test_a_release_whose_bound_is_zero_still_composes():
    # So much noise that one release costs nothing at delta (the conversion's floor):
    # the event keeps its curve (an infinite equivalent multiplier), so composing many
    # still costs what they cost.
    bound = IntegerShares(kind="skellam", parameter=1e12, l1=1.0, l2=1.0, dimension=1, delta=1e-5)
    event = bound.event(10)
    assert isinstance(event, IntegerNoiseDpEvent) and math.isinf(event.noise_multiplier)
    assert epsilon_of([event], 1e-5) == 0.0
    many = SELF(event, 10**12)
    assert (
        epsilon_of([many], 1e-5)
        == rdp_to_epsilon(10**12 * bound.rdp(10, COMPOSITION_ORDERS), COMPOSITION_ORDERS, 1e-5)[0]
        > 0.0
    )


def test_a_single_release_keeps_the_kits_orders():
    # One release alone is the bound over ORDERS exactly (what calibrate meets); the
    # composition grid adds fractional orders, which only ever lower a figure.
    bound = _ddg_case()
    alone = rdp_to_epsilon(bound.rdp(8999, ORDERS), ORDERS, 1e-5)[0]
    assert epsilon_of([bound.event(8999)], 1e-5) == alone == bound.epsilon(8999)
    assert set(ORDERS) <= set(COMPOSITION_ORDERS)
