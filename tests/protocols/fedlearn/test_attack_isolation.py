"""Dropout isolation by an active SecAgg(+) server (Bonawitz et al. 2017, Figure 4, with
no ConsistencyCheck round; Bell et al. 2020): the kit's isolating server against its
conditions, and the fedlearn attack with the ledger following it.

Kit rounds: integer inputs, no noise, constant 10 ms links, so a released sum is exact
and every route that opens the target gives Σ_{w ∈ L} x_w to the last unit. Training
runs: 20 clients, all picked each round (Poisson at rate 1), a 64-bit modulus."""

from __future__ import annotations

from typing import Any

import dp_accounting
import numpy as np
import pytest

from privsim.kit.secagg import round as secagg
from privsim.kit.secagg.isolation import Isolation, isolable, route
from privsim.kit.secagg.outcome import AbortReason
from privsim.kit.world import agree_channels
from privsim.protocols.fedlearn import EXAMPLE
from privsim.protocols.fedlearn.attacks.isolation import check_attack
from privsim.protocols.fedlearn.run import Training, train
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.errors import FieldError, ScenarioError
from privsim.scenarios.schema import Scenario
from privsim.sim.faults import FaultSpec
from privsim.sim.latency import ConstantLatency
from privsim.sim.network import LinkSpec, NetworkModel
from privsim.sim.streams import Streams
from privsim.sim.world import World

D = 4


def _kit_round(
    n: int,
    degree: int,
    t: int,
    colluders: tuple[int, ...],
    *,
    target: int = 0,
    always: bool = False,
    consistent: bool = False,
    faults: FaultSpec | None = None,
    seed: int = 5,
) -> tuple[secagg.RoundPlan, secagg.Outcome, np.ndarray]:
    params = secagg.choose_parameters(
        n,
        dropout=0.1,
        corruption=0.1,
        security_bits=1,
        correctness_bits=1,
        degree=degree,
        threshold=t,
    )
    assert params is not None
    clients = tuple(f"client-{i}" for i in range(n))
    streams = Streams(seed)
    plan = secagg.plan(clients, "server", params=params, dimension=D, bits=32, streams=streams)
    world = World(
        seed=streams,
        network=NetworkModel(LinkSpec(latency=ConstantLatency(value=0.01))),
        faults=faults,
    )
    inputs = np.random.default_rng(seed).integers(-50, 51, size=(n, D))
    isolation = Isolation(target=target, colluders=colluders, always=always, consistent=consistent)
    with secagg.launch(world, plan, inputs, isolation=isolation) as launched:
        agree_channels(world, lambda _: secagg.channel_pairs(plan))
        world.run()
    return plan, secagg.outcome_of(launched), inputs


def _complete_route(n: int, t: int, c: int) -> str:
    """The route on SecAgg's complete graph with every client live (module docstring of
    :mod:`privsim.kit.secagg.isolation`), written out independently of :func:`route`."""
    if c >= t:
        return "collusion"
    if c >= t - 1:
        return "isolate"
    if n + c >= 2 * t and n >= t + 1:
        return "equivocate"
    return ""


# -- the kit's isolating server -------------------------------------------------------------------


@pytest.mark.parametrize("c", range(8))
def test_secagg_opens_the_target_exactly_when_the_condition_holds(c: int) -> None:
    """n = 10, t = 6: equivocation needs n + c ≥ 2t (c ≥ 2), the consistent list
    {u} ∪ C needs c ≥ t − 1 = 5, collusion alone c ≥ t = 6; below, an honest round."""
    n, t = 10, 6
    colluders = tuple(range(1, 1 + c))
    plan, outcome, inputs = _kit_round(n, n - 1, t, colluders)
    expected = _complete_route(n, t, c)
    assert plan.graph.complete
    assert outcome.ok and outcome.released is not None and outcome.included is not None
    assert outcome.route == expected
    if expected:
        opened = [0, *colluders]
        assert outcome.isolated == 0 and outcome.included.tolist() == opened
        assert np.array_equal(outcome.released, inputs[opened].sum(axis=0))
    else:
        assert outcome.isolated is None and outcome.included.tolist() == list(range(n))
        assert np.array_equal(outcome.released, inputs.sum(axis=0))


@pytest.mark.parametrize("c", range(7))
def test_one_list_for_every_client_needs_t_minus_1_colluders(c: int) -> None:
    """A server held to one list (what the ConsistencyCheck round enforces) opens the
    target iff c ≥ t − 1: the check stops equivocation, not isolation."""
    n, t = 10, 6
    colluders = tuple(range(1, 1 + c))
    _, outcome, inputs = _kit_round(n, n - 1, t, colluders, consistent=True)
    expected = _complete_route(n, t, c)
    assert outcome.route == ("" if expected == "equivocate" else expected)
    assert outcome.released is not None
    if outcome.route:
        assert np.array_equal(outcome.released, inputs[[0, *colluders]].sum(axis=0))


@pytest.mark.parametrize("c", [0, 1, 4])
def test_a_list_of_fewer_than_t_is_refused(c: int) -> None:
    """The consistent list {u} ∪ C mounted with c < t − 1 colluders: the target refuses
    to answer (Figure 4, Round 4), b_u stays short of t shares and nothing is opened."""
    n, t = 10, 6
    _, outcome, _ = _kit_round(n, n - 1, t, tuple(range(1, 1 + c)), always=True, consistent=True)
    assert not outcome.ok and outcome.released is None
    assert outcome.abort is AbortReason.TOO_FEW_UNMASKING_SHARES
    assert outcome.route == "refused" and outcome.isolated == 0


def test_secagg_plus_opens_the_target_exactly_when_a_route_exists() -> None:
    """Random SecAgg+ rounds (Harary graphs of degree 4 or 6, t from 2 to k + 1, random
    colluders, sometimes a client crashing after ShareKeys): the server opens Σ_L x_w to
    the unit whenever :func:`route` finds a route, and runs an honest round otherwise;
    each route occurs."""
    rng = np.random.default_rng(0)
    seen: set[str] = set()
    for trial in range(40):
        n, k = int(rng.integers(8, 14)), int(rng.choice([4, 6]))
        t = int(rng.integers(2, k + 2))
        c = int(rng.integers(0, n // 2))
        colluders = tuple(sorted(rng.choice(np.arange(1, n), size=c, replace=False).tolist()))
        crash = () if trial % 2 else ((f"client-{int(rng.integers(1, n))}", 0.035),)
        plan, outcome, inputs = _kit_round(
            n, k, t, colluders, faults=FaultSpec(crashes=crash), seed=trial
        )
        if not outcome.ok:  # a crash left some client short of t holders: no round
            assert outcome.route == "" and outcome.abort is not AbortReason.SERVER_CRASHED
            continue
        assert outcome.released is not None and outcome.included is not None
        u2, u3 = outcome.survivors[1], outcome.survivors[2]
        if outcome.route:
            seen.add(outcome.route)
            assert outcome.included[0] == 0 and set(outcome.included[1:].tolist()) <= set(colluders)
            assert np.array_equal(outcome.released, inputs[outcome.included].sum(axis=0))
        else:
            assert route(plan.graph, t, u2, u3, Isolation(target=0, colluders=colluders)) is None
            assert np.array_equal(outcome.released, inputs[u3].sum(axis=0))
    assert seen == {"collusion", "isolate", "equivocate"}


def test_equivocation_short_of_answers_releases_the_honest_sum() -> None:
    """n = 10, t = 6, colluders 1 and 2: equivocation tells S = {3, 4, 5, 6} (t − c,
    no spare) that the target dropped. Client 3 crashes after sending its masked input
    (10 ms links: it would answer at 60 ms): s_0^SK has 3 + 2 < t shares, so the server
    unmasks the honest sum of all ten instead (b_0 has u, B and the colluders)."""
    crash = FaultSpec(crashes=(("client-3", 0.055),))
    _, outcome, inputs = _kit_round(10, 9, 6, (1, 2), faults=crash)
    assert outcome.ok and outcome.route == "" and outcome.isolated is None
    assert outcome.released is not None and outcome.included is not None
    assert outcome.included.tolist() == list(range(10))
    assert np.array_equal(outcome.released, inputs.sum(axis=0))


def test_isolable_counts_every_honest_client_at_t_1() -> None:
    """t = 1: each client's own share rebuilds its secrets, so an active server alone
    opens anyone (the honest-but-curious trust, server and t = 1 holders, still holds)."""
    plan, outcome, _ = _kit_round(6, 5, 1, ())
    u = np.arange(6, dtype=np.int64)
    assert isolable(plan.graph, 1, u, u, ()).tolist() == list(range(6))
    assert outcome.route == "isolate" and outcome.included is not None
    assert outcome.included.tolist() == [0]
    assert isolable(plan.graph, 6, u, u, ()).size == 0


def test_isolable_counts_the_shares_of_colluders_that_dropped_after_sharekeys() -> None:
    """n = 10, t = 6 on the complete graph: with 6 colluders every honest client is open
    to collusion alone. Two of them dropped after ShareKeys (in U2, not U3) still hold
    their shares of everyone's secrets, so the coalition can still open every honest
    client of U3; counted live only, 4 + 1 < t and no route would open anyone."""
    n, t = 10, 6
    plan, _, _ = _kit_round(n, n - 1, t, ())
    colluders = (4, 5, 6, 7, 8, 9)
    u2 = np.arange(n, dtype=np.int64)
    u3 = np.array([0, 1, 2, 3, 6, 7, 8, 9], dtype=np.int64)  # colluders 4 and 5 dropped
    assert isolable(plan.graph, t, u2, u3, colluders).tolist() == [0, 1, 2, 3]
    live_only = route(plan.graph, t, u2, u3, Isolation(target=0, colluders=colluders))
    # the live colluders alone (four of six) cannot rebuild a secret: the route found
    # is the server's equivocation (different survivor lists), never collusion alone
    assert live_only is not None and live_only.kind == "equivocate"


def test_the_target_must_not_collude() -> None:
    with pytest.raises(ValueError, match="target"):
        Isolation(target=1, colluders=(1, 2))


# -- the attack on training and the ledger --------------------------------------------------------

TARGET = "client-3"


def _scenario(aggregation: str, colluders: int, security_bits: int, **changes: Any) -> Scenario:
    """Four rounds, everyone picked (Poisson at 1), a 64-bit modulus; the planner's t
    follows the colluders' share and ``security_bits`` (20 clients: SecAgg t = 1 with no
    colluder, t = 8 with 2 at 5 bits; SecAgg+ (k, t) = (6, 4) with 2 at 5 bits)."""
    base: dict[str, Any] = {
        "population.clients": 20,
        "training.rounds": 4,
        "training.aggregation": aggregation,
        "training.sampling": "poisson",
        "training.rate": 1.0,
        "privacy.neighbour": "add_remove",
        "privacy.epsilon": 8.0,
        "privacy.on_overspend": "allow",
        "training.modulus_bits": 64,
        "training.security_bits": security_bits,
        "threat.attack": "dropout_isolation",
        "threat.target": TARGET,
        "threat.colluding_servers": ["server"],
        "threat.colluding_clients": [f"client-{i}" for i in range(10, 10 + colluders)],
    }
    return scenario_from_dict(set_fields(EXAMPLE, base | changes))


def _without_attack(scenario: Scenario) -> Scenario:
    data = scenario.to_dict()
    data["threat"] = {k: v for k, v in data["threat"].items() if k not in ("attack", "target")}
    return scenario_from_dict(data)


def _events(run: Training) -> list[dp_accounting.DpEvent]:
    return [entry.event_against(run.coalition) for entry in run.ledger.entries]


def _check_ledger_follows(scenario: Scenario) -> dict[str, Any]:
    """The attacked run's per-round event against the coalition is non-private in
    exactly the rounds where the active server could open some honest client alone
    (the round's ``exposed`` count), which holds every round it recovered the target
    in, and the unattacked run's event in every other."""
    attacked = train(scenario, 1)
    honest = train(_without_attack(scenario), 1)
    report = attacked.attack
    assert report is not None and report["name"] == "dropout_isolation"
    recovered = set(report["rounds_recovered"])
    events, plain = _events(attacked), _events(honest)
    assert len(events) == len(plain) == 4
    openable = {rec.round for rec in attacked.records if rec.exposed > 0}
    assert recovered <= openable
    records = attacked.ledger.guarantee(attacked.coalition).events
    for r, (event, before) in enumerate(zip(events, plain, strict=True), start=1):
        if r in openable:
            assert isinstance(event, dp_accounting.NonPrivateDpEvent)
            assert not isinstance(before, dp_accounting.NonPrivateDpEvent)
            assert "active server (threat.attack = 'dropout_isolation') could open" in (
                records[r - 1].reason
            )
        else:
            assert event == before
            assert records[r - 1].reason == ""
    assert report["success"] == len(recovered) / report["rounds_targeted"]
    assert sum(report["routes"].values()) == len(recovered)
    return report


@pytest.mark.parametrize(
    ("aggregation", "colluders", "bits", "routes"),
    [
        ("secagg", 0, 40, {"isolate"}),  # t = 1: the server alone
        ("secagg", 2, 5, {"equivocate"}),  # t = 8, n + c = 22 ≥ 16
        ("secagg_plus", 2, 5, {"equivocate"}),
    ],
)
def test_recovers_and_the_ledger_becomes_non_private(
    aggregation: str, colluders: int, bits: int, routes: set[str]
) -> None:
    report = _check_ledger_follows(_scenario(aggregation, colluders, bits))
    assert report["success"] > 0 and set(report["routes"]) == routes
    # the estimate is the target's input: its clipped update plus its own noise share
    # and rounding, so their gap to the update is the share's within the rounding
    gap = abs(report["median_update_error"] - report["median_noise_share"])
    assert gap <= report["max_quantisation"] < 1e-9


@pytest.mark.parametrize("aggregation", ["secagg", "secagg_plus"])
def test_too_few_colluders_recover_nothing_and_change_nothing(aggregation: str) -> None:
    """40 security bits with 2 colluders: t is too high for any route (SecAgg: n + c <
    2t), so the server unmasks honestly and the ledger is the unattacked run's."""
    report = _check_ledger_follows(_scenario(aggregation, 2, 40))
    assert report["success"] == 0.0 and report["rounds_recovered"] == []
    assert report["rounds_targeted"] == 4 and report["routes"] == {}


def test_under_refuse_the_training_stops_and_names_the_active_server() -> None:
    """With the default ``on_overspend = "refuse"``, the round after one the server could
    open is refused, and the refusal gives that round's reason (not a δ), with the fix."""
    from privsim.api import run

    result = run(_scenario("secagg", 0, 40, **{"privacy.on_overspend": "refuse"})).to_dict()
    stopped = result["fedlearn"]["stopped"]
    assert result["fedlearn"]["rounds_run"] == 1 and stopped.startswith("round 2 was refused")
    assert (
        "round-1: an active server (threat.attack = 'dropout_isolation') could open "
        f"{TARGET} alone" in stopped
    )
    assert "privacy.on_overspend = 'warn'" in stopped and "delta exceeds" not in stopped


def test_same_seed_same_result() -> None:
    scenario = _scenario("secagg_plus", 2, 5)
    first, again = train(scenario, 3), train(scenario, 3)
    assert first.attack == again.attack
    assert _events(first) == _events(again)


# -- configuration errors -------------------------------------------------------------------------


@pytest.mark.parametrize("aggregation", ["dca", "trusted", "local"])
def test_refused_without_secagg(aggregation: str) -> None:
    changes = {
        "training.sampling": "fixed",
        "training.cohort": 20,
        "privacy.neighbour": "replace_one",
    }
    with pytest.raises(ScenarioError) as info:
        _scenario(aggregation, 2, 40, **changes)
    assert info.value.field == "threat.attack"
    assert "secagg" in str(info.value)


def test_refused_without_the_server_in_the_coalition() -> None:
    with pytest.raises(ScenarioError) as info:
        _scenario("secagg", 2, 40, **{"threat.colluding_servers": []})
    assert info.value.field == "threat.attack"
    assert "colluding_servers" in str(info.value)


def test_check_attack_raises_a_field_error() -> None:
    valid = _scenario("secagg", 2, 40)
    check_attack(valid)

    class NoServer:
        threat = type("T", (), {"colluding_servers": ()})()
        table = valid.table

    with pytest.raises(FieldError) as info:
        check_attack(NoServer())  # type: ignore[arg-type]
    assert info.value.field == "threat.attack"
