"""The share round computed ahead (:meth:`~privsim.kit.securesum.batched.ShareRound.prefetch`):
started while the simulation goes on when every share is on time, used when the nodes
agree on exactly those clients, and the release is the per-message path's either way."""

from __future__ import annotations

import numpy as np
import pytest

from privsim.kit.securesum import batched
from privsim.protocols.dca.run import simulate
from tests.conftest import make_scenario


def _scenario(delivery: str, **faults):
    return make_scenario(
        population={"clients": 80, "compute_nodes": 3},
        data={"dimension": 6},
        dca={"delivery": delivery, "tolerated": 20},
        network={"encryption": "none"},
        faults=faults,
    )


@pytest.mark.parametrize(
    ("faults", "ahead"),
    [
        ({}, True),  # every share on time: computed ahead, and used
        ({"absent": 0.1}, True),  # absent clients never send: the rest agree
        ({"absent_parties": ["compute-2"]}, False),  # a node may fail: not ahead
    ],
)
def test_the_sums_computed_ahead_release_the_per_message_bytes(faults, ahead, monkeypatch):
    passes: list[int] = []
    ahead_calls: list[int] = []
    stream, prefetch = batched.ShareRound._stream, batched.ShareRound.prefetch

    def counted_stream(self, clients):
        passes.append(int(clients.size))
        return stream(self, clients)

    def counted_prefetch(self, clients):
        ahead_calls.append(int(clients.size))
        return prefetch(self, clients)

    monkeypatch.setattr(batched.ShareRound, "_stream", counted_stream)
    monkeypatch.setattr(batched.ShareRound, "prefetch", counted_prefetch)
    batch = simulate(_scenario("batched", **faults), seed=4)
    reference = simulate(_scenario("per_message", **faults), seed=4)
    assert bool(ahead_calls) == ahead
    if batch.outcome.ok:
        assert len(passes) == 1  # one pass, ahead or not, serves every node
        np.testing.assert_array_equal(batch.outcome.released, reference.outcome.released)
    assert batch.outcome.ok == reference.outcome.ok


@pytest.mark.parametrize("m", [1, 2, 5])
def test_fused_node_sums_equal_the_summed_shares(m):
    from privsim.data.synthetic import SyntheticVectors
    from privsim.kit.securesum.inputs import ClientInputs
    from privsim.sim.streams import Streams

    streams = Streams(8)
    data = SyntheticVectors(
        40, 7, mean=0.1, scale=1.0, clip_norm=1.0, stream=streams.keystream("data", "x")
    )
    inputs = ClientInputs(
        data=data,
        noise=streams.keystream("noise"),
        randomness=streams.keystream("shares"),
        noise_std=0.5,
        fraction_bits=20,
        n_nodes=m,
    )
    idx = np.array([0, 3, 4, 17, 39])
    summed = inputs.messages(idx).shares.sum(axis=0, dtype=np.uint64)
    np.testing.assert_array_equal(inputs.node_sums(idx), summed)
