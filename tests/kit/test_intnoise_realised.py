"""Integer noise credited for the realised coalition: the ledger re-evaluates the papers'
bound (Kairouz, Liu & Steinke 2021, Theorem 1; Agarwal, Kairouz & Liu 2021, Theorem
3.5) at the number of honest shares that reached the release, minus the target's own.

With the planned N − T honest shares the event is the planned one; with more it is
better, with fewer (but at least two) finite and worse; a coalition that breaks the
trusted servers still makes it ∞. Values are checked against the accountant called
directly and against the papers' formulas in mpmath (``test_intnoise_accounting``).
Tolerances: 1e-9 where the same code path gives the same number; 1e-6 where the ε
goes through the equivalent Gaussian's σ (dp-accounting's bisection) and back.
"""

from __future__ import annotations

import copy
import itertools
import math
import pickle
from typing import Any

import dp_accounting
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privsim.kit.intnoise.accounting import IntegerAccount, account, calibrate, epsilon
from privsim.kit.intnoise.rounding import integer_sensitivity
from privsim.kit.securesum import round as securesum
from privsim.protocols.dca import EXAMPLE as DCA_EXAMPLE
from privsim.protocols.dca.run import simulate as simulate_dca
from privsim.protocols.secagg import SECAGG_PLUS
from privsim.protocols.secagg.run import simulate as simulate_secagg
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.schema import Scenario
from privsim.sim.integer_bounds import IntegerShares
from privsim.sim.ledger import NoiseShares, PrivacyLedger, Trust, epsilon_of
from tests.kit.test_intnoise_accounting import _mp_ddg, _mp_skellam

KINDS = ("discrete_gaussian", "skellam")
DELTA = 1e-5
BETA = math.exp(-0.5)
#: The equivalent Gaussian's σ is found by bisection: ε comes back to ~1e-9 relative.
ROUND_TRIP = 1e-6


def _planned(kind: str, n: int, tolerated: int, d: int = 20) -> IntegerAccount:
    sens = integer_sensitivity(1.0, 256.0, d, BETA)
    honest = n - tolerated - 1
    p = calibrate(kind, 1.0, delta=DELTA, honest_clients=honest, sensitivity=sens, dimension=d)
    return account(kind, p, honest_clients=honest, sensitivity=sens, dimension=d, delta=DELTA)


def _ledger(acct: IntegerAccount, clients: tuple[str, ...]) -> PrivacyLedger:
    ledger = PrivacyLedger(1.0, DELTA, on_overspend="allow")
    ledger.charge("sum", acct.event, trust=Trust.nobody(), noise=acct.noise_shares(clients))
    ledger.settle("sum", contributors=clients)
    return ledger


def _direct(acct: IntegerAccount, credited: int) -> float:
    return epsilon(
        acct.kind,
        acct.parameter,
        honest_clients=credited,
        sensitivity=acct.sensitivity,
        dimension=acct.dimension,
        delta=acct.delta,
    )


def _oracle(acct: IntegerAccount, credited: int) -> float:
    """The papers' formulas in 40-digit arithmetic at ``credited`` honest shares."""
    s = acct.sensitivity
    if acct.kind == "discrete_gaussian":
        return float(_mp_ddg(acct.parameter, credited, s.l1, s.l2, acct.dimension, acct.delta))
    return float(_mp_skellam(2.0 * credited * acct.parameter, s.l1, s.l2, acct.delta))


@pytest.mark.parametrize("kind", KINDS)
def test_the_planned_number_of_honest_shares_gives_exactly_the_planned_event(kind) -> None:
    n, t = 60, 6
    acct = _planned(kind, n, t)
    clients = tuple(f"c{i}" for i in range(n))
    ledger = _ledger(acct, clients)
    realised = ledger.entries[0].event_against(clients[:t])  # N − T honest shares
    assert isinstance(realised, dp_accounting.GaussianDpEvent)
    assert realised.noise_multiplier == pytest.approx(acct.event.noise_multiplier, rel=1e-9)
    planned = epsilon_of([acct.event], DELTA)
    assert ledger.guarantee(clients[:t]).epsilon == pytest.approx(planned, rel=1e-9)
    assert planned == pytest.approx(acct.epsilon, rel=ROUND_TRIP)


@pytest.mark.parametrize("kind", KINDS)
def test_epsilon_falls_with_every_honest_share_and_is_the_bound_at_h_minus_one(kind) -> None:
    n, t = 40, 4
    acct = _planned(kind, n, t)
    clients = tuple(f"c{i}" for i in range(n))
    ledger = _ledger(acct, clients)
    entry = ledger.entries[0]
    achieved = []
    for honest in range(0, n + 1):
        coalition = clients[: n - honest]
        eps = ledger.guarantee(coalition).epsilon
        if honest <= 1:  # the target's own share is all there is: nothing credited
            assert eps == math.inf
            assert isinstance(entry.event_against(coalition), dp_accounting.NonPrivateDpEvent)
            continue
        assert entry.noise is not None and entry.noise.integer is not None
        assert entry.noise.integer.epsilon(honest - 1) == _direct(acct, honest - 1)  # same code
        assert eps == pytest.approx(_direct(acct, honest - 1), rel=ROUND_TRIP)
        achieved.append(eps)
    assert all(b < a for a, b in itertools.pairwise(achieved))
    assert achieved[n - t - 2] == pytest.approx(acct.epsilon, rel=ROUND_TRIP)  # H = N − T
    assert achieved[0] > 1.0 > achieved[-1]
    # The bound at a few realised counts is the papers' formula, in high precision.
    for honest in (2, n - t - 10, n):
        assert ledger.guarantee(clients[: n - honest]).epsilon == pytest.approx(
            _oracle(acct, honest - 1), rel=ROUND_TRIP
        )


def test_more_honest_shares_never_credit_less_than_the_plan() -> None:
    # Discrete Gaussian shares of σ_i = 0.8: the bound's τ term grows with n, so the bound
    # at 1000 shares is above the bound at 100. Extra honest shares are independent noise
    # added to the planned sum (post-processing), so the plan's bound still holds.
    bound = IntegerShares(
        kind="discrete_gaussian", parameter=0.8, l1=100.0, l2=10.0, dimension=1000, delta=DELTA
    )
    assert bound.epsilon(1000) > bound.epsilon(100)
    shares = NoiseShares(
        contributors=tuple(f"c{i}" for i in range(1001)),
        kind="integer",
        needed=101,
        integer=bound,
    )
    planned = bound.event(100)
    assert shares.realise(planned, 101) == planned
    assert shares.realise(planned, 1001) == planned
    assert shares.realise(planned, 51) == bound.event(50)  # fewer: the bound at 50 shares
    assert epsilon_of([shares.realise(planned, 51)], DELTA) > epsilon_of([planned], DELTA)


@settings(max_examples=30, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    parameter=st.floats(0.5, 1e4),
    l2=st.floats(1.0, 1e3),
    dimension=st.integers(1, 1000),
    planned=st.integers(1, 300),
    honest=st.integers(0, 600),
)
def test_the_realised_event_is_the_bound_and_never_below_the_plan_once_reached(
    kind: str, parameter: float, l2: float, dimension: int, planned: int, honest: int
) -> None:
    bound = IntegerShares(
        kind=kind,  # type: ignore[arg-type]
        parameter=parameter,
        l1=min(l2 * l2, math.sqrt(dimension) * l2),
        l2=l2,
        dimension=dimension,
        delta=DELTA,
    )
    shares = NoiseShares(contributors=(), kind="integer", needed=planned + 1, integer=bound)
    event = shares.realise(bound.event(planned), honest)
    credited = honest - 1  # the target's own share is not credited
    if credited < 1:
        assert isinstance(event, dp_accounting.NonPrivateDpEvent)
        return
    expected = bound.epsilon(credited)
    if credited > planned:  # more honest shares than planned: never below the plan
        expected = min(expected, bound.epsilon(planned))
    # 1e-6: the round trip through the equivalent Gaussian's σ.
    assert epsilon_of([event], DELTA) == pytest.approx(expected, rel=ROUND_TRIP)


def test_integer_shares_are_validated_and_survive_pickling() -> None:
    acct = _planned("skellam", 30, 3)
    clients = tuple(f"c{i}" for i in range(30))
    with pytest.raises(ValueError, match="need the bound's inputs"):
        NoiseShares(contributors=clients, kind="integer")
    with pytest.raises(ValueError, match="need the bound's inputs"):
        NoiseShares(contributors=clients, kind="threshold", integer=acct.bound)
    with pytest.raises(ValueError, match="not at the ledger's delta"):
        PrivacyLedger(1.0, 1e-6).charge("sum", acct.event, noise=acct.noise_shares(clients))
    with pytest.raises(ValueError, match="dimension"):
        IntegerShares(kind="skellam", parameter=1.0, l1=1.0, l2=1.0, dimension=0, delta=DELTA)
    ledger = _ledger(acct, clients)
    copy_ = pickle.loads(pickle.dumps(ledger))
    for coalition in ((), clients[:3], clients[:10]):
        assert copy_.guarantee(coalition) == ledger.guarantee(coalition)
    assert pickle.loads(pickle.dumps(acct.noise_shares(clients))) == acct.noise_shares(clients)


# --- end to end -------------------------------------------------------------------------

DCA_T = 3


def _dca(kind: str, threat: dict[str, Any] | None = None, **faults: Any) -> Scenario:
    data = copy.deepcopy(DCA_EXAMPLE)  # N = 30 clients, 3 compute nodes, d = 4
    data["dca"] = {"tolerated": DCA_T, "fraction_bits": 10, "noise": kind}
    if threat is not None:
        data["threat"] = threat
    if faults:
        data["faults"] = faults
    return Scenario.from_dict(data)


def _dca_case(scenario: Scenario) -> tuple[float, float, IntegerAccount, int]:
    """(achieved ε, planned ε, the plan's account, honest included clients H)."""
    sim = simulate_dca(scenario)
    assert sim.outcome.included is not None
    setup = securesum.integer_setup(
        scenario, len(sim.clients), sim.data.dimension, 1.0, replace_one=True
    )
    assert setup is not None
    coalition = sim.world.coalition
    included = [c for c, ok in zip(sim.clients, sim.outcome.included, strict=True) if ok]
    honest = sum(1 for c in included if c not in coalition)
    return sim.privacy().achieved_epsilon, setup.account.epsilon, setup.account, honest


@pytest.mark.parametrize("kind", KINDS)
def test_dca_with_more_colluders_than_planned_is_finite_and_the_bound_at_h(kind) -> None:
    achieved, planned, acct, honest = _dca_case(_dca(kind, {"colluding_clients": 6}))
    assert honest == 30 - 6 < 30 - DCA_T  # three shares short of the plan
    assert planned < achieved < math.inf
    assert achieved == pytest.approx(_direct(acct, honest - 1), rel=ROUND_TRIP)
    assert achieved == pytest.approx(_oracle(acct, honest - 1), rel=ROUND_TRIP)


@pytest.mark.parametrize("kind", KINDS)
def test_dca_with_fewer_dropouts_than_planned_is_better_than_planned(kind) -> None:
    achieved, planned, acct, honest = _dca_case(_dca(kind, absent_parties=["client-7"]))
    assert honest == 29 > 30 - DCA_T
    assert achieved < planned
    assert achieved == pytest.approx(_direct(acct, honest - 1), rel=ROUND_TRIP)


def test_dca_with_every_compute_node_colluding_is_still_not_private() -> None:
    nodes = ["compute-0", "compute-1", "compute-2"]
    achieved, _, _, honest = _dca_case(_dca("skellam", {"colluding_servers": nodes}))
    assert honest == 30 and achieved == math.inf


def _secagg_plus(kind: str, **changes: Any) -> Scenario:
    # N = 16 on a Harary graph of degree 6, t = 4, T = 2, d = 4
    return scenario_from_dict(set_fields(SECAGG_PLUS.example, {"secagg.noise": kind, **changes}))


def _secagg_case(scenario: Scenario) -> tuple[float, float, IntegerAccount, int, Any]:
    sim = simulate_secagg(scenario)
    assert sim.outcome.ok and sim.outcome.included is not None and sim.noise is not None
    coalition = sim.world.coalition
    honest = sum(1 for i in sim.outcome.included.tolist() if sim.clients[i] not in coalition)
    achieved = sim.ledger.guarantee(coalition).epsilon
    return achieved, sim.noise.account.epsilon, sim.noise.account, honest, sim


@pytest.mark.parametrize("kind", KINDS)
def test_secagg_plus_with_more_colluders_than_planned_is_the_bound_at_h(kind) -> None:
    colluders = [f"client-{i}" for i in range(5)]  # T = 2 planned; no server among them
    achieved, planned, acct, honest, _ = _secagg_case(
        _secagg_plus(kind, **{"threat.colluding_clients": colluders})
    )
    assert honest == 16 - 5
    assert planned < achieved < math.inf
    assert achieved == pytest.approx(_direct(acct, honest - 1), rel=ROUND_TRIP)
    assert achieved == pytest.approx(_oracle(acct, honest - 1), rel=ROUND_TRIP)
    # with one dropout (fewer than T = 2): better than planned
    fewer, planned, acct, honest, _ = _secagg_case(
        _secagg_plus(kind, **{"faults.absent_parties": ["client-9"]})
    )
    assert honest == 15 and fewer < planned
    assert fewer == pytest.approx(_direct(acct, honest - 1), rel=ROUND_TRIP)


def test_secagg_plus_server_with_t_holders_of_one_client_is_still_not_private() -> None:
    plain = _secagg_case(_secagg_plus("discrete_gaussian"))[4]
    t = plain.params.threshold
    holders = [int(v) for v in plain.graph.holders(0).tolist() if v != 0]
    below = {
        "threat.colluding_servers": ["server"],
        "threat.colluding_clients": [f"client-{v}" for v in holders[: t - 1]],
    }
    achieved, _, acct, honest, _ = _secagg_case(_secagg_plus("discrete_gaussian", **below))
    assert achieved == pytest.approx(_direct(acct, honest - 1), rel=ROUND_TRIP)
    at = {**below, "threat.colluding_clients": [f"client-{v}" for v in holders[:t]]}
    achieved, _, _, honest, _ = _secagg_case(_secagg_plus("discrete_gaussian", **at))
    assert honest == 16 - t and achieved == math.inf
    assert np.isfinite(_direct(acct, honest - 1))  # the shares alone would have been credited


def test_the_documented_table_is_what_a_dca_run_credits() -> None:
    """docs/reproductions/dca-blr.md / secure-aggregation.md: N = 1000, T = 40 planned, 60 colluding."""
    from privsim.kit.intnoise.table import realised_rows

    rows = {(r["colluding"], r["dropped"]): r for r in realised_rows()}
    for r in rows.values():
        assert r["discrete_gaussian"] == pytest.approx(r["skellam"], rel=1e-3)
    assert rows[(40, 0)]["skellam"] == pytest.approx(1.0, rel=1e-6)  # the plan
    assert rows[(0, 0)]["skellam"] < 1.0 < rows[(60, 0)]["skellam"] < rows[(500, 0)]["skellam"]
    data = copy.deepcopy(DCA_EXAMPLE)
    data["population"]["clients"] = 1000
    data["data"]["dimension"] = 10
    data["dca"] = {"tolerated": 40, "fraction_bits": 16, "noise": "skellam"}
    data["threat"] = {"colluding_clients": 60}
    sim = simulate_dca(Scenario.from_dict(data))
    assert sim.privacy().achieved_epsilon == pytest.approx(rows[(60, 0)]["skellam"], rel=1e-9)


def test_a_user_fixed_secagg_noise_multiplier_is_accounted_and_checked() -> None:
    from privsim.scenarios import ScenarioError
    from privsim.sim.ledger import BudgetExceededError

    # z = 40: N − T − 1 = 13 shares of total std 40·c, more than ε = 1 needs.
    achieved, planned, acct, honest, sim = _secagg_case(
        _secagg_plus("skellam", **{"secagg.noise_multiplier": 40.0})
    )
    scale = 2.0**sim.scenario.secagg.fraction_bits
    assert 2 * 13 * acct.parameter == pytest.approx((40.0 * scale) ** 2, rel=1e-12)
    assert achieved == pytest.approx(_direct(acct, honest - 1), rel=ROUND_TRIP)
    assert achieved < planned < 1.0
    with pytest.raises(BudgetExceededError, match="on_overspend"):
        simulate_secagg(_secagg_plus("skellam", **{"secagg.noise_multiplier": 1.0}))
    with pytest.raises(ScenarioError) as info:  # σ_i < 1/2: Theorem 1 gives no bound
        _secagg_plus("discrete_gaussian", **{"secagg.noise_multiplier": 1e-6})
    assert info.value.field == "secagg.noise_multiplier"
    with pytest.raises(ScenarioError) as info:
        _secagg_plus("none", **{"secagg.noise_multiplier": 2.0})
    assert info.value.field == "secagg.noise_multiplier"
