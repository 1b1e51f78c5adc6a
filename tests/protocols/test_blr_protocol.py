"""Distributed BLR on the bus: DCA assembles exactly the centralised sufficient statistics
when the noise is off, and Algorithm 2's two rounds include the right clients under
faults, with the expected messages in the trace."""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest

from privsim.kit.securesum import behaviours as dca
from privsim.kit.securesum.batched import ShareRound, client_population, compute_node_batched
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.securesum.outcome import SumOutcome
from privsim.kit.securesum.round import OUTPUT_PARTY
from privsim.kit.securesum.round import plan as _plan
from privsim.protocols.blr import BLR
from privsim.protocols.blr import behaviours as blr
from privsim.protocols.blr.config import BLR_METHODS
from privsim.protocols.blr.experiment import _run_world, _world, prepare, run_blr
from privsim.protocols.blr.maths import marginal_std
from privsim.protocols.blr.messages import MOMENT_KINDS, STATISTIC_KINDS, ProjectionBounds
from privsim.protocols.blr.regression import (
    moment_release,
    projection_bounds,
    statistic_release,
)
from privsim.scenarios.loader import scenario_from_dict
from privsim.sim.calibration import gaussian_epsilon
from privsim.sim.coalition import CoalitionSpec
from privsim.sim.faults import FaultSpec
from privsim.sim.latency import LogNormalLatency
from privsim.sim.network import LinkSpec, NetworkModel
from privsim.sim.trace import Status
from privsim.sim.world import World

N, M, D = 60, 3, 3
SEED = 7
# Fractions small enough that the round-2 projection clips many records (a projection
# that never bites would not distinguish the bounds from the assumed ones).
P_X, P_Y = 0.8, 1.1


def _scenario(**changes):
    data = {
        "name": "blr-protocol",
        "protocol": "blr",
        "seed": SEED,
        "population": {"clients": N, "compute_nodes": M},
        "privacy": {"epsilon": 1.0, "delta": 1e-4},
        "dca": {"tolerated": 5},
        "network": {
            "encryption": "none",
            "link": {
                "latency": {"model": "constant", "value": 0.01},
                "bandwidth": 1e6,
                "loss": 0.0,
            },
        },
        "blr": {
            "dataset": "synthetic",
            "synthetic_dimension": D,
            "synthetic_records": 200,
            "test": 50,
            "grid_points": 4,
            "grid_repeats": 2,
        },
    }
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return scenario_from_dict(data)


def _fixed_point_tolerance(n: int) -> float:
    # Each client's entry is rounded to the nearest multiple of 2^-32 (error <= 2^-33),
    # so a sum over n clients is off by at most n * 2^-33; allow n * 2^-32.
    return n * 2.0**-32


def _two_rounds(scenario, data, *, moment_noise: float, multiplier: float):
    """Algorithm 2 on the bus, as ``experiment._proj_ddp`` builds it, with the round-1
    client noise std and the round-2 noise multiplier given explicitly."""
    cfg = scenario.blr
    d = data.dimension
    n = data.x_train.shape[0]
    assumed = np.full(d + 1, cfg.assumed_bound)
    world, clients, nodes = _world(scenario, SEED, n)
    plan = blr.ProjectionPlan(
        moments=_plan(scenario, clients, nodes, d + 1, moment_noise, MOMENT_KINDS),
        statistics=_plan(scenario, clients, nodes, d * (d + 1) // 2 + d, math.nan, STATISTIC_KINDS),
        assumed_bounds=assumed,
        feature_fraction=P_X,
        target_fraction=P_Y,
        variance_floor=cfg.variance_floor,
        statistic_multiplier=multiplier,
        bounds_timeout=cfg.bounds_timeout,
        neighbour=scenario.privacy.neighbour,
    )
    out = blr.launch_projected(world, plan, data.x_train, data.y_train, stream=("test",))
    _run_world(world)
    assert isinstance(out.result, blr.ProjectionOutcome)
    return world, plan, out.result


# -- 1. noise off: DCA assembles the centralised statistics ------------------------------


@pytest.mark.parametrize("encryption", ["none", "aes-gcm"])
def test_two_rounds_without_noise_release_the_centralised_statistics(encryption):
    scenario = _scenario(network={"encryption": encryption})
    _, data = prepare(scenario, SEED)
    x, y = data.x_train, data.y_train
    cfg = scenario.blr
    assumed = np.full(D + 1, cfg.assumed_bound)
    _, plan, outcome = _two_rounds(scenario, data, moment_noise=0.0, multiplier=0.0)
    assert plan.statistic_noise_std(outcome.bounds) == 0.0
    tol = _fixed_point_tolerance(N)

    # Round 1: Σ of the clients' squared values, clipped to the assumed bounds.
    assert outcome.moments.ok and outcome.moments.included.all()
    central_moments = moment_release(x, y, assumed, 0.0, None)
    np.testing.assert_allclose(outcome.moments.released, central_moments, rtol=0, atol=tol)

    # Step 3: the published bounds follow from the round-1 release, exactly.
    std = marginal_std(outcome.moments.released, N, cfg.variance_floor)
    np.testing.assert_array_equal(outcome.std, std)
    np.testing.assert_array_equal(outcome.bounds, projection_bounds(std, P_X, P_Y, assumed))
    # ... and agree with the centralised ones up to the fixed-point error of the sums.
    central_bounds = projection_bounds(
        marginal_std(central_moments, N, cfg.variance_floor), P_X, P_Y, assumed
    )
    np.testing.assert_allclose(outcome.bounds, central_bounds, rtol=1e-9)
    assert np.all(outcome.bounds < assumed)  # the projection is tighter than the assumption

    # Round 2: Σ of the unique entries of x̂x̂ᵀ and x̂ŷ of the projected records.
    assert outcome.statistics.ok and outcome.statistics.included.all()
    central = statistic_release(x, y, outcome.bounds, 0.0, None)
    np.testing.assert_allclose(outcome.statistics.released, central, rtol=0, atol=tol)
    # The projection bit: unprojected statistics are far from what was released.
    unprojected = statistic_release(x, y, np.full(D + 1, np.inf), 0.0, None)
    assert np.max(np.abs(unprojected - central)) > 1e3 * tol


def test_single_round_ddp_without_noise_releases_the_centralised_statistics():
    scenario = _scenario()
    _, data = prepare(scenario, SEED)
    x, y = data.x_train, data.y_train
    assumed = np.full(D + 1, scenario.blr.assumed_bound)
    world, clients, nodes = _world(scenario, SEED, N)
    records = blr.Records(x, y, assumed, "statistics")
    plan = _plan(scenario, clients, nodes, records.dimension, 0.0, STATISTIC_KINDS)
    inputs = ClientInputs(
        data=records,
        noise=world.streams.keystream("test", "noise"),
        randomness=world.streams.keystream("test", "shares"),
        noise_std=0.0,
        fraction_bits=plan.fraction_bits,
        n_nodes=M,
    )
    world.add_parties("client", clients)
    shares = ShareRound(world, plan, inputs)
    world.start_group("clients", client_population(world, plan, inputs))
    for node in nodes:
        agent = world.add_party(node, "compute")
        world.start(agent, compute_node_batched(agent, plan, shares))
    out = world.add_party(OUTPUT_PARTY, "aggregator")
    world.start(out, dca.aggregator(out, plan))
    _run_world(world)
    assert isinstance(out.result, SumOutcome) and out.result.ok
    assert out.result.included.all()
    central = statistic_release(x, y, assumed, 0.0, None)
    np.testing.assert_allclose(out.result.released, central, rtol=0, atol=_fixed_point_tolerance(N))
    # Records.sum is the centralised sum the protocol is meant to reproduce.
    np.testing.assert_allclose(records.sum(), central, rtol=1e-12)


# -- 2. the two rounds on the bus ---------------------------------------------------------


def _kinds(world):
    return collections.Counter(r.kind for r in world.trace.records())


def test_two_rounds_message_counts_without_faults():
    scenario = _scenario()
    _, data = prepare(scenario, SEED)
    world, _, outcome = _two_rounds(scenario, data, moment_noise=0.0, multiplier=0.0)
    assert outcome.moments.included.all() and outcome.statistics.included.all()
    per_round = {"Share": N * M, "ReceivedSet": M * (M - 1), "Sum": M}
    expected = {
        **{f"Moment{k}": v for k, v in per_round.items()},
        **{f"Statistic{k}": v for k, v in per_round.items()},
        "ProjectionBounds": N + M,  # every client (one broadcast) and every node
    }
    assert dict(_kinds(world)) == expected
    assert len(world.trace) == sum(expected.values())
    assert all(r.status == Status.DELIVERED for r in world.trace.records())


def test_absent_and_crashed_clients_are_in_the_right_rounds():
    absent, early, between, late = "client-3", "client-5", "client-7", "client-9"
    scenario = _scenario(
        faults={
            "absent_parties": [absent],
            # early: after its round-1 share left, before the bounds reach it;
            # between: after the bounds arrive, before round 2 starts;
            # late: after round 2 is over.
            "crashes": [[early, 0.5], [between, 1.3], [late, 100.0]],
        }
    )
    _, data = prepare(scenario, SEED)
    world, plan, outcome = _two_rounds(scenario, data, moment_noise=0.0, multiplier=0.0)
    index = {c: i for i, c in enumerate(plan.moments.clients)}
    records = list(world.trace.records())

    bounds = [r for r in records if r.kind == "ProjectionBounds"]
    sent_at = {r.send_time for r in bounds}
    assert len(sent_at) == 1
    published = sent_at.pop()
    start = published + scenario.blr.bounds_timeout
    # The premise of the fault times: round 1's shares left at t = 0, the bounds were
    # published after t = 0.5 (nodes waited for the absent client until the share
    # deadline) and round 2 started after t = 1.3.
    assert 0.5 < published < 1.3 < start

    # Round 1: everyone but the absent client; round 2: only those alive at its start.
    r1, r2 = outcome.moments.included, outcome.statistics.included
    assert not r1[index[absent]] and not r2[index[absent]]
    for c in (early, between, late):
        assert r1[index[c]]
    assert not r2[index[early]] and not r2[index[between]] and r2[index[late]]
    assert int(r1.sum()) == N - 1 and int(r2.sum()) == N - 3

    # The bounds went to every client and every node, once each, from the aggregator.
    targets = collections.Counter(r.dst for r in bounds)
    assert targets == collections.Counter([*plan.moments.clients, *plan.moments.nodes])
    assert {r.src for r in bounds} == {OUTPUT_PARTY}
    fate = {r.dst: r.status for r in bounds}
    assert fate[absent] == fate[early] == Status.DROPPED_DEAD_RECEIVER
    assert fate[between] == fate[late] == Status.DELIVERED
    assert sum(s == Status.DELIVERED for s in fate.values()) == N + M - 2

    # Shares per round: N·M minus those of clients that did not send in that round.
    kinds = _kinds(world)
    assert kinds["MomentShare"] == (N - 1) * M
    assert kinds["StatisticShare"] == (N - 3) * M
    for prefix in ("Moment", "Statistic"):
        assert kinds[f"{prefix}ReceivedSet"] == M * (M - 1)
        assert kinds[f"{prefix}Sum"] == M
    assert kinds["ProjectionBounds"] == N + M
    assert len(records) == sum(kinds.values())
    senders2 = {r.src for r in records if r.kind == "StatisticShare"}
    assert senders2.isdisjoint({absent, early, between}) and late in senders2
    assert all(r.send_time == pytest.approx(start) for r in records if r.kind == "StatisticShare")


def test_round_kinds_are_siblings_so_rounds_cannot_take_each_others_messages():
    values = np.zeros(2, dtype=np.uint64)
    for field in ("share", "received_set", "node_sum", "node_abort"):
        one, two = getattr(MOMENT_KINDS, field), getattr(STATISTIC_KINDS, field)
        assert one is not two and one.__name__ != two.__name__
        assert not issubclass(one, two) and not issubclass(two, one)
    assert not isinstance(MOMENT_KINDS.share(values=values), STATISTIC_KINDS.share)
    assert not isinstance(STATISTIC_KINDS.share(values=values), MOMENT_KINDS.share)
    packed = np.zeros(1, dtype=np.uint8)
    assert not isinstance(MOMENT_KINDS.received_set(clients=packed), STATISTIC_KINDS.received_set)
    assert not isinstance(
        MOMENT_KINDS.node_sum(values=values, included=packed), STATISTIC_KINDS.node_sum
    )
    assert not isinstance(
        MOMENT_KINDS.node_abort(reason="x", detail="y"), STATISTIC_KINDS.node_abort
    )


def test_a_late_round_one_share_is_not_counted_in_round_two():
    # client-7's messages take 1.2 s: its round-1 share reaches the nodes after the
    # round-1 deadline (1.0 s) but long before round 2's deadline, waiting in the nodes'
    # inboxes until round 2 takes its shares. Its round-2 share is late too. Were the rounds' share
    # classes the same, round 2 would take the stale round-1 share and count client-7.
    late = "client-7"
    scenario = _scenario(
        network={
            "overrides": [
                {"source": late, "target": "*", "latency": {"model": "constant", "value": 1.2}}
            ]
        }
    )
    _, data = prepare(scenario, SEED)
    world, plan, outcome = _two_rounds(scenario, data, moment_noise=0.0, multiplier=0.0)
    i = plan.moments.clients.index(late)
    assert not outcome.moments.included[i] and not outcome.statistics.included[i]
    assert int(outcome.moments.included.sum()) == int(outcome.statistics.included.sum()) == N - 1
    stale = [r for r in world.trace.records() if r.src == late and r.kind == "MomentShare"]
    start = next(r.send_time for r in world.trace.records() if r.kind == "StatisticShare")
    share_deadline = start + scenario.dca.share_timeout
    # the stale shares did arrive (delivered) during round 2's share phase
    assert len(stale) == M
    assert all(r.status == Status.DELIVERED and r.recv_time < share_deadline for r in stale)
    # the round-2 release is the centralised one over the N - 1 included clients
    keep = np.arange(N) != i
    central = statistic_release(data.x_train[keep], data.y_train[keep], outcome.bounds, 0.0, None)
    np.testing.assert_allclose(
        outcome.statistics.released, central, rtol=0, atol=_fixed_point_tolerance(N)
    )


# -- 3. broadcast_batch is as many sends ----------------------------------------------------

RECEIVERS = 300


def _broadcast_world(
    batched: bool,
    encryption: bool,
    hub_crash: float = 8.003,
    coalition: CoalitionSpec | None = None,
):
    """A hub sends one message to client 0, then the bounds to a shuffled subset of the
    clients, then (later) to every client: per message with ``agent.send``, or with
    ``bus.broadcast_batch``. Lognormal latency, 10% loss, a slow uplink (the copies queue
    behind each other), clients absent and crashing, and the hub crashing mid-queue
    (``hub_crash`` = 8.0 is the instant a copy of the second broadcast departs)."""
    net = NetworkModel(
        LinkSpec(latency=LogNormalLatency(median=0.1, sigma=1.0), bandwidth=2e3, loss=0.1)
    )
    faults = FaultSpec(
        roles=("client",),
        absent=0.1,
        crash=0.2,
        crash_window=(0.0, 3.0),
        crashes=(("hub", hub_crash),),
    )
    w = World(seed=5, network=net, faults=faults, encryption=encryption, coalition=coalition)
    names = [f"client-{i}" for i in range(RECEIVERS)]
    w.add_parties("client", names)
    hub = w.add_party("hub", "aggregator")
    order = np.random.default_rng(3).permutation(RECEIVERS)[:250]
    first = ProjectionBounds(bounds=np.array([0.5, 1.0, 2.0]), start_at=1.0)
    second = ProjectionBounds(bounds=np.zeros(0), start_at=5.0, abort=True)
    flights = []

    def behaviour(agent):
        agent.send("client-0", first)
        yield w.env.timeout(0.25)
        if batched:
            flights.append(w.bus.broadcast_batch(agent, "client", order, first))
        else:
            for i in order.tolist():
                agent.send(names[i], first)
        yield w.env.timeout(1.0)  # the uplink is still busy with the first broadcast
        if batched:
            flights.append(w.bus.broadcast_batch(agent, "client", np.arange(RECEIVERS), second))
        else:
            for name in names:
                agent.send(name, second)

    if encryption:
        w.channels.agree([("hub", name) for name in names])
    w.start(hub, behaviour(hub))
    w.run()
    return w, flights


@pytest.mark.parametrize("encryption", [False, True])
def test_broadcast_batch_gives_every_copy_the_fate_of_a_per_message_send(encryption):
    one, _ = _broadcast_world(False, encryption)
    many, flights = _broadcast_world(True, encryption)
    a, b = one.trace.arrays(), many.trace.arrays()
    assert len(a) == len(b) == 1 + 250 + RECEIVERS
    assert a.parties == b.parties and a.kinds == b.kinds
    # Message for message, in sending order (same ids in both worlds).
    for column in ("src", "dst", "kind", "wire_bytes", "send_time", "status"):
        np.testing.assert_array_equal(getattr(a, column), getattr(b, column), err_msg=column)
    # Times agree to floating-point rounding: the per-message path adds one transmission
    # time per send, the broadcast a cumulative sum (see the exact test below); ~250
    # additions of numbers ~1 leave at most ~250 ulp, far below 1e-12 relative.
    np.testing.assert_allclose(a.depart_time, b.depart_time, rtol=1e-12, atol=0)
    delivered = a.status == Status.DELIVERED
    np.testing.assert_allclose(a.recv_time[delivered], b.recv_time[delivered], rtol=1e-12, atol=0)
    # every fate a broadcast copy can meet was exercised
    assert set(np.unique(a.status).tolist()) == {
        Status.DELIVERED,
        Status.LOST,
        Status.DROPPED_DEAD_RECEIVER,
        Status.SENDER_CRASHED,
    }
    # The flights say the same as the per-message trace: delivered copies and when.
    ids = np.concatenate([np.arange(f.first_id, f.first_id + f.receivers.size) for f in flights])
    np.testing.assert_array_equal(np.concatenate([f.delivered for f in flights]), delivered[ids])
    arrival = np.concatenate([f.arrival for f in flights])
    np.testing.assert_allclose(
        arrival[delivered[ids]], a.recv_time[ids][delivered[ids]], rtol=1e-12, atol=0
    )


def test_broadcast_batch_times_equal_per_message_times_exactly():
    # The hub crashes at 8.0, exactly when (in real arithmetic) a copy of the second
    # broadcast leaves its uplink: the broadcast must use the per-message running sum
    # ((start + tx) + tx) + ... (8.000000000000012: lost with the sender), not
    # start + cumsum(tx) (7.999999999999988: delivered).
    one, _ = _broadcast_world(False, False, hub_crash=8.0)
    many, _ = _broadcast_world(True, False, hub_crash=8.0)
    a, b = one.trace.arrays(), many.trace.arrays()
    np.testing.assert_array_equal(a.status, b.status)
    np.testing.assert_array_equal(a.depart_time, b.depart_time)
    delivered = a.status == Status.DELIVERED
    np.testing.assert_array_equal(a.recv_time[delivered], b.recv_time[delivered])


def test_broadcast_batch_records_when_copies_reach_dead_receivers():
    # The trace's recv_time is documented as NaN "unless it reached the receiver
    # (delivered, dropped or rejected)": a copy dropped at a dead receiver did reach it,
    # and the per-message path records its arrival time.
    one, _ = _broadcast_world(False, False)
    many, _ = _broadcast_world(True, False)
    a, b = one.trace.arrays(), many.trace.arrays()
    dropped = a.status == Status.DROPPED_DEAD_RECEIVER
    assert dropped.any() and np.isfinite(a.recv_time[dropped]).all()
    np.testing.assert_allclose(a.recv_time[dropped], b.recv_time[dropped], rtol=1e-12, atol=0)


def _view(world):
    return sorted(
        (m.src, m.dst, m.send_time, type(m.message).__name__, m.message.start_at)
        for m in world.viewed
    )


def test_broadcast_batch_shows_colluding_receivers_what_per_message_sends_show():
    coalition = CoalitionSpec(clients=40)
    one, _ = _broadcast_world(False, False, coalition=coalition)
    many, _ = _broadcast_world(True, False, coalition=coalition)
    assert one.coalition == many.coalition
    view = _view(one)
    assert view == _view(many)
    # only copies that reached a live colluding client are in the view
    assert 0 < len(view) < 40 * 2 and {v[1] for v in view} <= one.coalition


def test_broadcast_batch_shows_a_colluding_sender_its_own_messages():
    coalition = CoalitionSpec(servers=("hub",))
    one, _ = _broadcast_world(False, False, coalition=coalition)
    many, _ = _broadcast_world(True, False, coalition=coalition)
    assert len(_view(one)) == 1 + 250 + RECEIVERS
    assert _view(one) == _view(many)


# -- 6. run_blr ---------------------------------------------------------------------------


def _run_scenario(**changes):
    base = {
        "name": "t",
        "protocol": "blr",
        "population": {"clients": 200, "compute_nodes": 3},
        "privacy": {"epsilon": 1.0, "delta": 1e-4},
        "network": {"encryption": "none"},
        "blr": {
            "dataset": "synthetic",
            "synthetic_dimension": 4,
            "synthetic_records": 400,
            "test": 100,
            "grid_points": 6,
            "grid_repeats": 3,
        },
    }
    for key, value in changes.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return scenario_from_dict(base)


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def test_run_blr_is_a_pure_function_of_scenario_and_seed():
    sc = _run_scenario()
    first = _without_timings(run_blr(sc, 3).to_dict())
    again = _without_timings(run_blr(sc, 3).to_dict())
    assert first == again
    other = _without_timings(run_blr(sc, 4).to_dict())
    assert other["methods"]["DDP"]["accuracy"]["mae"] != first["methods"]["DDP"]["accuracy"]["mae"]


def test_every_method_is_released_and_exact_calibration_spends_exactly_the_budget():
    sc = _run_scenario()
    result = run_blr(sc, 3).to_dict()
    methods = result["methods"]
    assert tuple(methods) == sc.blr.methods == BLR_METHODS
    assert all(m["status"] == "released" for m in methods.values())
    assert all(
        math.isfinite(m["accuracy"]["mae"]) and m["accuracy"]["mae"] > 0 for m in methods.values()
    )
    # Exact calibration, T = 0: every private method spends exactly (eps, delta). For DDP
    # the realised event credits the N - 1 honest included clients other than the target,
    # each with sigma / sqrt(N - T - 1) = sigma / sqrt(N - 1): together exactly sigma.
    for name in ("TA", "proj_TA", "DDP", "proj_DDP", "input_perturbation"):
        assert methods[name]["privacy"]["achieved_epsilon"] == pytest.approx(1.0, rel=1e-6), name
        assert methods[name]["privacy"]["guarantee_met"] is True
    for name in ("NP", "proj_NP"):
        privacy = methods[name]["privacy"]
        assert privacy["achieved_epsilon"] == "inf" and privacy["guarantee_met"] is False
        assert privacy["non_private"] is True
    assert (
        methods["DDP"]["details"]["included"] == methods["proj_DDP"]["details"]["included"] == 200
    )
    # one DCA round: N·M shares, M(M-1) received sets, M sums; proj DDP: two such rounds
    # and the bounds to N clients and M nodes
    one_round = 200 * 3 + 3 * 2 + 3
    assert methods["DDP"]["communication"]["messages"] == one_round
    assert methods["proj_DDP"]["communication"]["messages"] == 2 * one_round + 200 + 3


def test_only_the_listed_methods_run():
    result = run_blr(_run_scenario(blr={"methods": ["proj_DDP", "TA"]}), 3).to_dict()
    assert list(result["methods"]) == ["proj_DDP", "TA"]
    assert result["blr"]["thresholds"] is not None
    plain = run_blr(_run_scenario(blr={"methods": ["TA"]}), 3).to_dict()
    assert plain["blr"]["thresholds"] is None  # no projected method: no search


def test_classic_calibration_at_large_epsilon_is_refused():
    sc = _run_scenario(privacy={"epsilon": 31.62, "calibration": "classic"})
    methods = run_blr(sc, 3).to_dict()["methods"]
    for name in ("TA", "proj_TA", "DDP", "proj_DDP", "input_perturbation"):
        assert methods[name]["status"] == "refused", name
        assert methods[name]["accuracy"] is None
        assert methods[name]["abort"]["reason"] == "refused"
        assert "over the budget" in methods[name]["abort"]["detail"]
    # the non-private baselines are labelled, never refused
    assert methods["NP"]["status"] == methods["proj_NP"]["status"] == "released"
    # exact calibration at the same epsilon is fine
    exact = run_blr(_run_scenario(privacy={"epsilon": 31.62}), 3).to_dict()["methods"]
    assert exact["TA"]["status"] == "released"
    assert exact["TA"]["privacy"]["achieved_epsilon"] == pytest.approx(31.62, rel=1e-6)


def test_a_refused_method_reports_that_it_spent_nothing():
    sc = _run_scenario(privacy={"epsilon": 31.62, "calibration": "classic"})
    methods = run_blr(sc, 3).to_dict()["methods"]
    for name in ("TA", "proj_TA", "DDP", "proj_DDP"):
        assert methods[name]["status"] == "refused"
        assert methods[name]["privacy"]["achieved_epsilon"] == 0.0, name
        assert methods[name]["privacy"]["guarantee_met"] is True
        assert methods[name]["privacy"]["events"] == []


def test_colluding_clients_beyond_tolerance_break_the_ddp_guarantee():
    sc = _run_scenario(threat={"colluding_clients": 20}, dca={"tolerated": 0})
    methods = run_blr(sc, 3).to_dict()["methods"]
    for name in ("DDP", "proj_DDP"):
        # 180 honest clients' noise, scaled for 199: sigma_eff = sigma·sqrt(179/199)
        assert methods[name]["status"] == "released"
        assert (
            methods[name]["privacy"]["achieved_epsilon"] > 1.0
            and methods[name]["privacy"]["guarantee_met"] is False
        )
    # the trusted-aggregator methods do not depend on clients
    assert methods["TA"]["privacy"]["achieved_epsilon"] == pytest.approx(1.0, rel=1e-6)
    assert methods["TA"]["privacy"]["guarantee_met"] is True


def test_run_blr_counts_absent_and_crashed_clients_per_round():
    sc = _run_scenario(
        dca={"tolerated": 5},
        network={"link": {"latency": {"model": "constant", "value": 0.01}}},
        faults={"absent_parties": ["client-3"], "crashes": [["client-5", 1.3]]},
    )
    methods = run_blr(sc, 3).to_dict()["methods"]
    assert methods["DDP"]["details"]["included"] == 199
    assert methods["proj_DDP"]["details"]["included_round1"] == 199
    assert methods["proj_DDP"]["details"]["included"] == 198
    # more honest clients than the N - T - 1 the noise was scaled for: within budget
    for name in ("DDP", "proj_DDP"):
        assert (
            methods[name]["privacy"]["achieved_epsilon"] < 1.0
            and methods[name]["privacy"]["guarantee_met"] is True
        )


def test_a_round_one_abort_releases_nothing_and_tells_everyone():
    # two absent clients with T = 0: round 1 aborts; no second round runs
    sc = _run_scenario(faults={"absent_parties": ["client-1", "client-2"]})
    result = run_blr(sc, 3).to_dict()
    methods = result["methods"]
    for name in ("DDP", "proj_DDP"):
        assert methods[name]["status"] == "aborted" and methods[name]["accuracy"] is None
        assert methods[name]["abort"]["reason"] == "too_many_dropouts"
        assert methods[name]["privacy"]["achieved_epsilon"] == 0.0  # nothing was released
    # round 1 (198 senders) ends in aborts; the abort notice goes to all N + M parties
    shares = 198 * 3 + 3 * 2 + 3
    assert methods["DDP"]["communication"]["messages"] == shares
    assert methods["proj_DDP"]["communication"]["messages"] == shares + 200 + 3
    assert result["status"] == "released"  # the central methods still released


def test_an_abort_in_round_two_still_accounts_for_round_one():
    # compute-1 crashes after round 1 (which ends by ~0.3 s): round 2 cannot agree
    sc = _run_scenario(faults={"crashes": [["compute-1", 1.0]]})
    result = run_blr(sc, 3).to_dict()
    proj = result["methods"]["proj_DDP"]
    assert proj["status"] == "aborted" and proj["abort"]["reason"] == "agreement_incomplete"
    # the marginal moments were released to the aggregator: their epsilon stays spent
    moments_multiplier = result["blr"]["noise_multipliers_projected"][0]
    assert proj["privacy"]["achieved_epsilon"] == pytest.approx(
        gaussian_epsilon(moments_multiplier, 1e-4), rel=1e-6
    )
    assert 0 < proj["privacy"]["achieved_epsilon"] < 1.0
    assert result["methods"]["DDP"]["status"] == "released"  # one round, over by then


def test_the_coalition_view_keeps_both_rounds_private_state():
    scenario = _scenario(threat={"colluding_clients": 3})
    _, data = prepare(scenario, SEED)
    world, plan, _ = _two_rounds(scenario, data, moment_noise=0.0, multiplier=0.0)
    view = world.coalition_view()
    members = [p for p in view.members if p.startswith("client-")]
    assert len(members) == 3
    # each member's shares of both rounds are in the view ...
    kinds = collections.Counter(type(m.message).__name__ for m in view.messages)
    assert kinds["MomentShare"] == kinds["StatisticShare"] == 3 * M
    # ... and so should be its private inputs of both rounds (d + 1 and d(d+1)/2 + d values)
    for p in members:
        sizes = {np.asarray(v).size for v in view.private[p].values()}
        assert {plan.moments.dimension, plan.statistics.dimension} <= sizes, p


# -- 7. who must stay honest: coalitions of servers, and the baselines ----------------------


def test_every_compute_node_colluding_voids_the_distributed_guarantees():
    nodes = ["compute-0", "compute-1", "compute-2"]
    result = run_blr(_run_scenario(threat={"colluding_servers": nodes}), 3).to_dict()
    methods = result["methods"]
    for name in ("DDP", "proj_DDP"):
        privacy = methods[name]["privacy"]
        assert methods[name]["status"] == "released"
        assert privacy["achieved_epsilon"] == "inf" and privacy["guarantee_met"] is False
        assert privacy["non_private"] is False  # a broken guarantee, not a baseline
        assert all(e["broken"] for e in privacy["events"])
        assert {e["trust_kind"] for e in privacy["events"]} == {"one_of"}
    # the curator and input perturbation do not rely on the compute nodes
    for name in ("TA", "proj_TA", "input_perturbation"):
        assert methods[name]["privacy"]["achieved_epsilon"] == pytest.approx(1.0, rel=1e-6)
        assert methods[name]["privacy"]["guarantee_met"] is True
    assert result["privacy"]["achieved_epsilon"] == "inf"
    assert result["privacy"]["guarantee_met"] is False
    # batched delivery keeps no per-share view for colluding compute nodes
    assert result["coalition"]["members"] == nodes
    assert result["coalition"]["view_complete"] is False


def test_all_but_one_compute_node_colluding_keeps_the_distributed_guarantees():
    result = run_blr(
        _run_scenario(threat={"colluding_servers": ["compute-0", "compute-2"]}), 3
    ).to_dict()
    for name in ("DDP", "proj_DDP"):
        privacy = result["methods"][name]["privacy"]
        assert privacy["achieved_epsilon"] == pytest.approx(1.0, rel=1e-6)
        assert privacy["guarantee_met"] is True
    assert result["coalition"]["view_complete"] is False


def test_a_colluding_aggregator_voids_the_curator_methods_only():
    result = run_blr(_run_scenario(threat={"colluding_servers": ["aggregator"]}), 3)
    methods = result.to_dict()["methods"]
    for name in ("TA", "proj_TA"):
        privacy = methods[name]["privacy"]
        assert privacy["achieved_epsilon"] == "inf" and privacy["guarantee_met"] is False
        assert privacy["events"] and all(
            e["trusted_parties"] == ["aggregator"] for e in privacy["events"]
        )
    # DCA's output party sees only the noisy sum; input perturbation trusts nobody
    for name in ("DDP", "proj_DDP", "input_perturbation"):
        assert methods[name]["privacy"]["achieved_epsilon"] == pytest.approx(1.0, rel=1e-6)
        assert methods[name]["privacy"]["guarantee_met"] is True
    assert result.coalition.members == ("aggregator",)


def test_a_colluding_aggregator_voids_the_curator_without_any_world():
    sc = _run_scenario(
        threat={"colluding_servers": ["aggregator"]}, blr={"methods": ["TA", "proj_TA"]}
    )
    result = run_blr(sc, 3).to_dict()
    for name in ("TA", "proj_TA"):
        assert result["methods"][name]["privacy"]["achieved_epsilon"] == "inf"
        assert result["methods"][name]["privacy"]["guarantee_met"] is False
    assert result["communication"] is None and result["parties"] is None
    assert result["coalition"]["members"] == ["aggregator"]


def test_non_private_baselines_are_labelled_and_do_not_set_the_runs_guarantee():
    result = run_blr(_run_scenario(blr={"methods": ["NP", "proj_NP", "TA"]}), 3).to_dict()
    for name in ("NP", "proj_NP"):
        privacy = result["methods"][name]["privacy"]
        assert privacy["non_private"] is True and privacy["guarantee_met"] is False
        assert privacy["achieved_epsilon"] == "inf"
        assert [e["status"] for e in privacy["events"]] == ["non_private"]
    # the run reports its weakest private method (TA), not the baselines
    assert result["privacy"]["achieved_epsilon"] == pytest.approx(1.0, rel=1e-6)
    assert result["privacy"]["guarantee_met"] is True
    assert result["privacy"]["non_private"] is False
    only = run_blr(_run_scenario(blr={"methods": ["NP"]}), 3).to_dict()["privacy"]
    assert only["non_private"] is True and only["achieved_epsilon"] == "inf"


def test_the_run_carries_the_distributed_worlds_traffic_and_parties():
    result = run_blr(_run_scenario(blr={"methods": ["TA", "DDP", "proj_DDP"]}), 3).to_dict()
    proj = result["methods"]["proj_DDP"]
    assert result["communication"]["messages"] == proj["communication"]["messages"]
    assert result["communication"]["bytes"] == proj["communication"]["bytes"]
    assert result["parties"]["total"] == result["parties"]["included"] == 200
    assert result["accuracy"] is None
    assert result["methods"]["TA"]["communication"] is None


def test_the_report_marks_baselines_and_broken_guarantees():
    nodes = ["compute-0", "compute-1", "compute-2"]
    result = run_blr(_run_scenario(threat={"colluding_servers": nodes}), 3).to_dict()
    lines = {line.split()[0]: line for line in BLR.report(result) if line and not line[0].isspace()}
    assert "none (non-private baseline)" in lines["NP"] and "(!)" not in lines["NP"]
    assert "inf (!)" in lines["DDP"] and "inf (!)" in lines["proj_DDP"]
    assert "(!)" not in lines["TA"]
