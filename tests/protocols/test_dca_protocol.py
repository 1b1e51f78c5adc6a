"""DCA end to end on the simulated network."""

import dataclasses

import numpy as np
import pytest
from scipy import stats

from privsim.api import run
from privsim.kit.securesum.messages import NodeSum, ReceivedSet, Share
from privsim.protocols.dca.coalition import reconstructed_dca_inputs
from privsim.protocols.dca.run import simulate
from privsim.sim.messages import wire_size
from privsim.sim.trace import Status
from tests.conftest import make_scenario


def _trace(sim):
    """Trace records as comparable tuples (NaN receive times become None)."""
    return [
        tuple(None if isinstance(v, float) and v != v else v for v in dataclasses.astuple(r))
        for r in sim.world.trace.records()
    ]


SERVERS_RELIABLE = [
    {
        "source": "compute",
        "target": "*",
        "loss": 0.0,
        "latency": {"model": "constant", "value": 0.001},
    }
]


def test_exact_message_counts_without_faults():
    n, m = 40, 4
    sim = simulate(make_scenario(population={"clients": n, "compute_nodes": m}))
    kinds = [r.kind for r in sim.world.trace.records()]
    assert kinds.count("Share") == n * m
    assert kinds.count("ReceivedSet") == m * (m - 1)
    assert kinds.count("NodeSum") == m
    assert len(kinds) == n * m + m * (m - 1) + m
    assert sim.outcome.ok and sim.outcome.included.all()


@pytest.mark.parametrize("encryption", ["none", "aes-gcm"])
def test_duration_equals_analytic_value_under_constant_latency_and_bandwidth(encryption):
    n, m, d, lat, bw = 30, 4, 16, 0.2, 5000.0
    sim = simulate(
        make_scenario(
            population={"clients": n, "compute_nodes": m},
            data={"dimension": d},
            network={
                "encryption": encryption,
                "link": {"latency": {"model": "constant", "value": lat}, "bandwidth": bw},
            },
        )
    )
    extra = 28 if encryption == "aes-gcm" else 0
    s1 = wire_size(Share(values=np.zeros(d, np.uint64))) + extra
    s2 = wire_size(ReceivedSet(clients=np.zeros((n + 7) // 8, np.uint8))) + extra
    s3 = (
        wire_size(NodeSum(values=np.zeros(d, np.uint64), included=np.zeros((n + 7) // 8, np.uint8)))
        + extra
    )
    # Each client sends share k to node k in order through its uplink: node k has all
    # shares at (k+1) s1/B + L. Node j then sends its set to its peers in order; node k is
    # at position pos_j(k) in j's list. Node k sends its sum once it has every set and its
    # uplink is free; the aggregator finishes when the last sum lands.
    share_end = [(k + 1) * s1 / bw + lat for k in range(m)]
    finish = []
    for k in range(m):
        sets_in = max(
            share_end[j] + ([p for p in range(m) if p != j].index(k) + 1) * s2 / bw + lat
            for j in range(m)
            if j != k
        )
        uplink_free = share_end[k] + (m - 1) * s2 / bw
        finish.append(max(sets_in, uplink_free) + s3 / bw + lat)
    assert sim.world.agents["aggregator"].finished_at == pytest.approx(max(finish), rel=1e-12)
    sizes = {r.kind: r.wire_bytes for r in sim.world.trace.records()}
    assert sizes == {"Share": s1, "ReceivedSet": s2, "NodeSum": s3}


def test_same_seed_same_result_and_trace():
    sc = make_scenario(
        faults={"absent": 0.1, "crash": 0.05, "crash_window": [0.0, 0.001]},
        dca={"tolerated": 15},
        network={
            "link": {"latency": {"model": "lognormal", "median": 0.01, "sigma": 1.0}, "loss": 0.02},
            "overrides": SERVERS_RELIABLE,
        },
    )
    a, b = simulate(sc), simulate(sc)
    assert a.outcome.ok
    np.testing.assert_array_equal(a.outcome.released, b.outcome.released)
    assert _trace(a) == _trace(b) and len(_trace(a)) > 0
    c = simulate(sc, seed=sc.seed + 1)
    assert not np.array_equal(a.outcome.released, c.outcome.released)


def test_encryption_does_not_change_any_protocol_result():
    sc = make_scenario(
        faults={"absent": 0.1, "straggler_fraction": 0.2, "straggler_slowdown": 50.0},
        dca={"tolerated": 20},
        network={
            "link": {"latency": {"model": "lognormal", "median": 0.01, "sigma": 1.0}, "loss": 0.02},
            "overrides": SERVERS_RELIABLE,
        },
    )
    plain = simulate(sc)
    secret = simulate(sc.replace({"network.encryption": "aes-gcm"}))
    assert plain.outcome.ok and not plain.outcome.included.all()  # faults did bite
    np.testing.assert_array_equal(plain.outcome.released, secret.outcome.released)
    np.testing.assert_array_equal(plain.outcome.included, secret.outcome.included)
    p, s = list(plain.world.trace.records()), list(secret.world.trace.records())
    assert [(r.src, r.dst, r.kind, r.status) for r in p] == [
        (r.src, r.dst, r.kind, r.status) for r in s
    ]
    assert all(rs.wire_bytes == rp.wire_bytes + 28 for rp, rs in zip(p, s, strict=True))
    assert secret.world.channels.pairs_agreed > 0 and plain.world.channels.pairs_agreed == 0


def test_changing_only_latency_changes_no_data_noise_or_shares():
    everyone = {"colluding_clients": 40}  # the whole population colludes: the view has every share
    patient = {"share_timeout": 100.0, "agreement_timeout": 100.0, "sum_timeout": 100.0}
    slow = make_scenario(
        threat=everyone,
        dca=patient,
        network={"link": {"latency": {"model": "lognormal", "median": 0.5, "sigma": 1.0}}},
    )
    fast = make_scenario(
        threat=everyone,
        dca=patient,
        network={"link": {"latency": {"model": "uniform", "low": 0.0, "high": 0.001}}},
    )
    a, b = simulate(slow), simulate(fast)
    np.testing.assert_array_equal(a.data.rows(range(40)), b.data.rows(range(40)))
    va, vb = a.world.coalition_view(), b.world.coalition_view()
    for client in a.clients:
        np.testing.assert_array_equal(va.private[client]["noise"], vb.private[client]["noise"])
    shares = lambda v: {(m.src, m.dst): m.message.values.tobytes() for m in v.messages_of(Share)}  # noqa: E731
    assert shares(va) == shares(vb)
    np.testing.assert_array_equal(a.outcome.released, b.outcome.released)
    assert a.world.agents["aggregator"].finished_at != b.world.agents["aggregator"].finished_at


def test_aggregate_noise_variance_matches_theorem_1_scaling():
    """N = 12, T = 3, T' = 2 honest clients absent. Each included client adds variance
    sigma_std^2 / (N - T - 1), so the released sum's noise has per-coordinate variance
    v = (N - T') sigma_std^2 / (N - T - 1). Over d = 20 000 independent coordinates
    sum(r^2) / v ~ chi^2_d (sd of sum(r^2)/(v d) is sqrt(2/d) = 1%); we accept between its
    0.05% and 99.95% quantiles (two-sided 0.1% test, about +-3.3% around v). One noise
    term more or fewer changes v by 10%, i.e. 10 sd: far enough that both alternatives
    are rejected whatever the seed (they would need a 6.6 sd gap)."""
    n, t, dropped, d = 12, 3, 2, 20_000
    sc = make_scenario(
        population={"clients": n, "compute_nodes": 3},
        data={"dimension": d},
        dca={"tolerated": t},
        faults={"roles": [], "absent_parties": [f"client-{i}" for i in range(dropped)]},
    )
    sim = simulate(sc, seed=2024)
    assert sim.outcome.ok and int(sim.outcome.included.sum()) == n - dropped
    residual = sim.outcome.released - sim.included_sum()
    v = (n - dropped) * sim.sigma_std**2 / (n - t - 1)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], d)
    statistic = float(np.sum(residual**2) / v)
    assert lo < statistic < hi
    # The test has power: one noise term more or fewer would be rejected.
    for wrong in (n - dropped - 1, n - dropped + 1):
        wrong_v = wrong * sim.sigma_std**2 / (n - t - 1)
        assert not lo < float(np.sum(residual**2) / wrong_v) < hi
    # The ledger credits only the honest noise minus the target's own term (Theorem 1):
    # sigma_std^2 (N - T' - 1) / (N - T - 1).
    realised = sim.ledger.entries[0].event
    credited = np.sqrt((n - dropped - 1) / (n - t - 1)) * sim.sigma_std / sim.sensitivity
    assert realised.noise_multiplier == pytest.approx(credited, rel=1e-12)


def _absent(k):
    return {"roles": [], "absent_parties": [f"client-{i}" for i in range(k)]}


def test_abort_beyond_t_and_release_within_t():
    t = 4
    within = simulate(make_scenario(dca={"tolerated": t}, faults=_absent(t)))
    assert within.outcome.ok and within.privacy().guarantee_met
    beyond = simulate(make_scenario(dca={"tolerated": t}, faults=_absent(t + 1)))
    assert not beyond.outcome.ok and beyond.outcome.abort == "too_many_dropouts"
    assert beyond.privacy().achieved_epsilon == 0.0  # nothing was released
    released = simulate(
        make_scenario(dca={"tolerated": t, "on_excess_dropout": "release"}, faults=_absent(t + 3))
    )
    assert released.outcome.ok
    assert not released.privacy().guarantee_met and released.privacy().achieved_epsilon > 1.0


def test_colluders_count_against_the_guarantee():
    t = 4
    ok = simulate(
        make_scenario(dca={"tolerated": t}, threat={"colluding_clients": 2}, faults=_absent(2))
    )
    assert ok.privacy().guarantee_met
    over = simulate(
        make_scenario(dca={"tolerated": t}, threat={"colluding_clients": 3}, faults=_absent(2))
    )
    assert over.outcome.ok and not over.privacy().guarantee_met  # the protocol cannot see colluders


def test_all_compute_nodes_colluding_see_every_input_and_m_minus_one_see_nothing():
    nodes = ["compute-0", "compute-1", "compute-2"]
    full = simulate(make_scenario(threat={"colluding_servers": nodes}))
    seen = reconstructed_dca_inputs(full.world.coalition_view(), nodes, 32)
    assert len(seen) == 40
    part = simulate(
        make_scenario(threat={"colluding_servers": nodes[:2], "colluding_clients": ["client-0"]})
    )
    view = part.world.coalition_view()
    recovered = reconstructed_dca_inputs(view, nodes, 32)
    assert set(recovered) == {"client-0"}  # only the colluding client's own shares are complete
    z_plus_eta = view.private["client-0"]["input"] + view.private["client-0"]["noise"]
    np.testing.assert_allclose(recovered["client-0"], z_plus_eta, atol=2.0**-32)
    assert full.privacy().achieved_epsilon == float(
        "inf"
    ) and part.privacy().achieved_epsilon < float("inf")


def test_compute_node_crash_aborts():
    sim = simulate(make_scenario(faults={"roles": [], "crashes": [["compute-1", 0.0]]}))
    assert not sim.outcome.ok and sim.outcome.abort in ("agreement_incomplete", "sums_missing")


def test_lost_shares_exclude_clients_consistently():
    sim = simulate(
        make_scenario(
            dca={"tolerated": 30}, network={"link": {"loss": 0.05}, "overrides": SERVERS_RELIABLE}
        ),
        seed=3,
    )
    statuses = [r.status for r in sim.world.trace.records() if r.kind == "Share"]
    assert Status.LOST in statuses and sim.outcome.ok
    lost_from = {
        r.src for r in sim.world.trace.records() if r.kind == "Share" and r.status is Status.LOST
    }
    included = {c for c, inc in zip(sim.clients, sim.outcome.included, strict=True) if inc}
    assert included == set(sim.clients) - lost_from


def test_run_result_compares_with_trusted_aggregator():
    result = run(make_scenario(baseline=True)).to_dict()
    assert (
        result["status"] == "released"
        and result["methods"]["trusted_aggregator"]["status"] == "released"
    )
    assert result["communication"]["by_kind"]["Share"] == 40 * 3
    assert result["privacy"]["guarantee_met"] is True
