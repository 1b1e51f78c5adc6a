"""Seed-compressed DCA shares: the PRG, the shares' sum, the same released values as
full shares at a seed, the bytes each client sends, and what colluding nodes see."""

from __future__ import annotations

import numpy as np
import pytest

from privsim.kit.securesum.messages import SeedShare, Share
from privsim.kit.securesum.seeded import SEED_WORDS, expand, seeded_shares
from privsim.protocols.dca.coalition import reconstructed_dca_inputs
from privsim.protocols.dca.run import simulate
from privsim.scenarios.errors import ScenarioError
from privsim.sim.messages import wire_size
from tests.conftest import make_scenario


def test_expansion_is_aes_256_ctr_and_deterministic():
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    seed = bytes(range(32))
    stream = Cipher(algorithms.AES(seed), modes.CTR(bytes(16))).encryptor().update(bytes(48))
    np.testing.assert_array_equal(expand(seed, 6), np.frombuffer(stream, dtype="<u8"))
    assert not np.array_equal(expand(seed, 6), expand(bytes(32), 6))
    with pytest.raises(ValueError, match="32 bytes"):
        expand(b"short", 4)


def test_seeded_shares_sum_to_the_input_and_expand_from_their_seeds():
    rng = np.random.default_rng(0)
    n, m, d = 5, 4, 7
    x = rng.integers(0, 2**64, size=(n, d), dtype=np.uint64)
    seeds = rng.integers(0, 2**64, size=(n, m - 1, SEED_WORDS), dtype=np.uint64)
    shares = np.empty((n, m, d), dtype=np.uint64)
    seeded_shares(x, seeds, shares)
    np.testing.assert_array_equal(shares.sum(axis=1, dtype=np.uint64), x)
    for i in range(n):
        for k in range(1, m):
            np.testing.assert_array_equal(shares[i, k], expand(seeds[i, k - 1].tobytes(), d))


@pytest.mark.parametrize("encryption", ["none", "aes-gcm"])
@pytest.mark.parametrize("delivery", ["per_message", "batched"])
def test_seeded_shares_release_the_same_values_as_full_shares(encryption, delivery):
    network = {"encryption": encryption}
    full = simulate(make_scenario(dca={"delivery": delivery}, network=network), seed=5)
    seeded = simulate(
        make_scenario(dca={"delivery": delivery, "shares": "seeded"}, network=network), seed=5
    )
    assert full.outcome.ok and seeded.outcome.ok
    # Same noise and inputs at the seed, and exact modular sums: identical releases.
    np.testing.assert_array_equal(seeded.outcome.released, full.outcome.released)
    np.testing.assert_array_equal(seeded.outcome.included, full.outcome.included)


@pytest.mark.parametrize("delivery", ["per_message", "batched"])
def test_trace_shows_a_client_sends_one_vector_and_m_minus_1_seeds(delivery):
    n, m, d = 40, 5, 64
    scenario = make_scenario(
        population={"clients": n, "compute_nodes": m},
        data={"dimension": d},
        dca={"delivery": delivery, "shares": "seeded"},
    )
    sim = simulate(scenario)
    records = [r for r in sim.world.trace.records() if r.src == "client-3"]
    share = wire_size(Share(values=np.zeros(d, np.uint64)))
    seed = wire_size(SeedShare(seed=bytes(32)))
    assert sorted((r.kind, r.wire_bytes) for r in records) == sorted(
        [("Share", share)] + [("SeedShare", seed)] * (m - 1)
    )
    sent = sum(r.wire_bytes for r in records)
    assert sent == share + (m - 1) * seed
    assert d * 8 + 32 * (m - 1) <= sent < d * 8 + 32 * (m - 1) + 32 * m  # headers only
    full = simulate(make_scenario(**{**_plain(scenario), "dca": {"delivery": delivery}}))
    full_sent = sum(r.wire_bytes for r in full.world.trace.records() if r.src == "client-3")
    assert full_sent == m * share


def _plain(scenario):
    data = scenario.to_dict()
    return {k: data[k] for k in ("population", "data")}


def test_colluding_nodes_need_every_share_seed_or_correction():
    nodes = ["compute-0", "compute-1", "compute-2"]
    everyone = simulate(
        make_scenario(dca={"shares": "seeded"}, threat={"colluding_servers": nodes})
    )
    view = everyone.world.coalition_view()
    assert view.messages_of(SeedShare)
    found = reconstructed_dca_inputs(view, nodes, 32)
    assert len(found) == 40
    part = simulate(
        make_scenario(
            dca={"shares": "seeded"},
            threat={"colluding_servers": nodes[1:], "colluding_clients": ["client-0"]},
        )
    )
    pview = part.world.coalition_view()
    recovered = reconstructed_dca_inputs(pview, nodes, 32)
    assert set(recovered) == {"client-0"}
    z_plus_eta = pview.private["client-0"]["input"] + pview.private["client-0"]["noise"]
    np.testing.assert_allclose(recovered["client-0"], z_plus_eta, atol=2.0**-32)


def test_share_mode_fields_are_validated():
    with pytest.raises(ScenarioError, match=r"dca\.shares"):
        make_scenario(dca={"shares": "zipped"})
    with pytest.raises(ScenarioError, match=r"dca\.threshold"):
        make_scenario(dca={"shares": "seeded", "threshold": 2})
    with pytest.raises(ScenarioError, match=r"dca\.threshold"):
        make_scenario(dca={"shares": "shamir"})
    # Unset, the share mode stays out of the scenario's plain form (results unchanged).
    assert "shares" not in make_scenario().to_dict()["dca"]
