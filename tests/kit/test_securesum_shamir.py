"""Shamir-threshold DCA: the exact sum under every pattern of up to M − t lost compute
nodes, a named abort beyond, and the coalition threshold moved to t (ledger and
exposure)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privsim.api import run
from privsim.kit.securesum.threshold import node_total, reconstruct_sum
from privsim.kit.shamir import PRIME, split
from privsim.protocols.dca import run as dca_run
from privsim.protocols.dca.coalition import reconstructed_dca_inputs
from privsim.protocols.dca.run import simulate
from privsim.scenarios.errors import ScenarioError
from privsim.sim.ledger import Trust
from tests.conftest import make_scenario

M, T, N, BITS = 4, 2, 12, 32
NODES = [f"compute-{k}" for k in range(M)]


def _scenario(delivery: str = "per_message", **changes):
    return make_scenario(
        population={"clients": N, "compute_nodes": M},
        dca={"tolerated": 2, "shares": "shamir", "threshold": T, "delivery": delivery},
        **changes,
    )


@pytest.fixture
def noise_off(monkeypatch):
    """Clients add no noise (Theorem 1's share std set to 0), so the release is the
    plain sum of the encoded inputs."""
    monkeypatch.setattr(dca_run, "client_noise_std", lambda *args: 0.0)


def _plain_sum(sim) -> np.ndarray:
    """Σ over the included clients of round(z_i · 2^f) / 2^f, computed without DCA."""
    idx = np.flatnonzero(sim.outcome.included)
    z = sim.data.rows(idx)
    return np.rint(z * 2.0**BITS).astype(np.int64).sum(axis=0) / 2.0**BITS


def _lost(nodes, at: float):
    return {"roles": [], "crashes": [[node, at] for node in nodes]}


@pytest.mark.parametrize("at", [0.0, 0.015])  # before the shares land / while collecting
def test_sum_is_exact_under_every_loss_of_up_to_m_minus_t_nodes(noise_off, at):
    for k in range(M - T + 1):
        for lost in itertools.combinations(NODES, k):
            sim = simulate(_scenario(faults=_lost(lost, at)))
            assert sim.outcome.ok, (lost, sim.outcome.detail)
            assert sim.outcome.included.all()
            np.testing.assert_array_equal(sim.outcome.released, _plain_sum(sim))


def test_batched_delivery_survives_node_loss_with_the_same_release(noise_off):
    for lost in ([], ["compute-1"], ["compute-0", "compute-3"]):
        per = simulate(_scenario(faults=_lost(lost, 0.0)))
        batched = simulate(_scenario("batched", faults=_lost(lost, 0.0)))
        assert batched.outcome.ok
        np.testing.assert_array_equal(batched.outcome.released, per.outcome.released)


@pytest.mark.parametrize("delivery", ["per_message", "batched"])
def test_losing_more_than_m_minus_t_nodes_aborts_with_a_named_reason(delivery):
    for lost in itertools.combinations(NODES, M - T + 1):
        sim = simulate(_scenario(delivery, faults=_lost(lost, 0.0)))
        assert not sim.outcome.ok and sim.outcome.abort == "too_few_nodes", lost
        assert f"threshold t = {T}" in sim.outcome.detail
        assert sim.privacy().achieved_epsilon == 0.0  # withheld: nothing released


def test_noisy_release_matches_full_shares_at_a_seed():
    full = simulate(
        make_scenario(population={"clients": N, "compute_nodes": M}, dca={"tolerated": 2})
    )
    sham = simulate(_scenario())
    # Same noise and inputs; both sums are exact in their rings.
    np.testing.assert_array_equal(sham.outcome.released, full.outcome.released)


def test_t_colluding_nodes_reconstruct_every_input_and_break_the_guarantee():
    broken = run(_scenario(threat={"colluding_servers": NODES[:T]})).to_dict()
    assert broken["coalition"]["exposure"]["inputs_reconstructed"] == N
    assert broken["privacy"]["achieved_epsilon"] == "inf"
    held = run(
        _scenario(threat={"colluding_servers": NODES[: T - 1], "colluding_clients": ["client-0"]})
    ).to_dict()
    assert held["coalition"]["exposure"]["inputs_reconstructed"] == 0
    assert held["privacy"]["achieved_epsilon"] != "inf"


def test_reconstructed_inputs_are_the_clients_noisy_inputs():
    sim = simulate(_scenario(threat={"colluding_servers": NODES[:T], "colluding_clients": 2}))
    view = sim.world.coalition_view()
    found = reconstructed_dca_inputs(view, NODES, BITS, threshold=T)
    assert len(found) == N
    for client in view.private:
        z_plus_eta = view.private[client]["input"] + view.private[client]["noise"]
        np.testing.assert_allclose(found[client], z_plus_eta, atol=2.0**-BITS)
    fewer = reconstructed_dca_inputs(view, NODES[:1], BITS, threshold=T)
    assert fewer == {}


def test_ledger_trust_is_broken_by_t_of_the_nodes():
    trust = Trust.fewer_than(T, NODES)
    assert not trust.broken_by({"compute-0", "client-1"})
    assert trust.broken_by({"compute-0", "compute-3"})
    with pytest.raises(ValueError, match="1 <= count <= 4"):
        Trust.fewer_than(5, NODES)


def test_node_sums_of_shares_reconstruct_the_sum_mod_p():
    rng = np.random.default_rng(2)
    x = rng.integers(0, PRIME, size=(6, 5), dtype=np.uint64)
    shares = np.stack([split(row, 3, 5, rng) for row in x], axis=1)  # (nodes, clients, d)
    sums = {k: node_total(shares[k], 5) for k in (4, 1, 2)}
    expected = [sum(int(v) for v in x[:, j]) % PRIME for j in range(5)]
    assert reconstruct_sum(sums, 3).tolist() == expected


def test_threshold_above_m_is_refused():
    with pytest.raises(ScenarioError, match=r"dca\.threshold"):
        run(make_scenario(dca={"shares": "shamir", "threshold": 4}))
