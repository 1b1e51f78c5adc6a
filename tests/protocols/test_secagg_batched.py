"""A SecAgg round whose clients are a batched population (``secagg.delivery =
"batched"``, :mod:`privsim.kit.secagg.population`) is the per-client round, not a model
of it: the same released bytes, live sets and closing times, the same trace message for
message (sender, receiver, kind, size, send, departure and arrival times, fate), the same
communication figures and key agreements, through crashes in every round, lost
messages, stragglers and each kind of abort; and its cryptography is done, so a wrong
mask gives a wrong sum."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privsim.kit.result import Communication
from privsim.kit.secagg import messages as m
from privsim.kit.secagg import shard
from privsim.kit.secagg.crypto import KEY_BYTES, TAG_BYTES
from privsim.kit.secagg.maths import RECORD_BYTES, SK_WORDS, wire_dtype
from privsim.kit.secagg.population import WireSizes
from privsim.protocols.secagg.run import BATCHED_FROM_CLIENTS, delivery, simulate
from privsim.scenarios import ScenarioError
from privsim.sim.messages import wire_size
from tests.conftest import make_scenario

LOGNORMAL = {"model": "lognormal", "median": 0.05, "sigma": 0.6}

#: name: (protocol, clients, secagg table, faults, link)
CASES: dict[str, tuple[str, int, dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "crashes in every round, keys of the dropped rebuilt": (
        "secagg_plus",
        300,
        {"target_dropout": 0.35, "target_corruption": 0.05},
        {"absent": 0.05, "crash": 0.2, "crash_window": [0.0, 1.5]},
        {"latency": LOGNORMAL, "loss": 0.02},
    ),
    "stragglers and lost messages": (
        "secagg_plus",
        300,
        {"target_dropout": 0.3, "target_corruption": 0.05},
        {
            "absent": 0.05,
            "crash": 0.15,
            "straggler_fraction": 0.2,
            "straggler_slowdown": 5.0,
        },
        {"latency": LOGNORMAL, "loss": 0.05, "bandwidth": 2e5},
    ),
    "abort after MaskedInputCollection": (
        "secagg_plus",
        200,
        {"target_dropout": 0.05, "target_corruption": 0.05},
        {"crash": 0.6, "crash_window": [0.0, 2.0]},
        {"latency": LOGNORMAL},
    ),
    "abort after AdvertiseKeys": (
        "secagg_plus",
        200,
        {"target_dropout": 0.05, "target_corruption": 0.05},
        {"absent": 0.05},
        {"latency": LOGNORMAL, "loss": 0.3},
    ),
    "the server crashes after ShareKeys: its clients time out": (
        "secagg_plus",
        150,
        {"target_dropout": 0.2, "target_corruption": 0.05},
        {"absent": 0.05, "roles": ["client", "server"], "crashes": [["server", 3.0]]},
        {"latency": LOGNORMAL},
    ),
    "SecAgg's complete graph, a client late past its own deadline": (
        "secagg",
        40,
        {"threshold": 20, "round_timeout": 0.4},
        {
            "crash": 0.1,
            "crash_window": [0.0, 1.0],
            "straggler_fraction": 0.1,
            "straggler_slowdown": 80.0,
        },
        {"latency": LOGNORMAL},
    ),
}


def _scenario(case: str, how: str, **changes: Any):
    protocol, n, table, faults, link = CASES[case]
    return make_scenario(
        protocol=protocol,
        population={"clients": n},
        secagg={
            "dimension": 12,
            "noise": "discrete_gaussian",
            "tolerated": n // 10,
            "modulus_bits": 48,
            "round_timeout": 2.0,
            **table,
            "delivery": how,
        },
        faults={"roles": ["client"], **faults},
        network={"encryption": "sized", "link": {"bandwidth": 1e6, **link}},
        **changes,
    )


def _trace_rows(sim) -> np.ndarray:
    """Every message as (src, dst, kind, bytes, status, send, depart, receive), sorted:
    the message ids differ (the population's are given in batches), nothing else may."""
    t = sim.world.trace.arrays()
    rows = np.column_stack(
        [
            t.src,
            t.dst,
            t.kind,
            t.wire_bytes,
            t.status,
            t.send_time,
            t.depart_time,
            np.nan_to_num(t.recv_time, nan=-1.0),
        ]
    )
    return rows[np.lexsort(rows.T[::-1])]


@pytest.mark.parametrize("case", list(CASES))
def test_the_batched_round_is_the_per_client_round(case):
    per_client = simulate(_scenario(case, "per_client"), processes=1)
    batched = simulate(_scenario(case, "batched"), processes=1)
    a, b = per_client.outcome, batched.outcome
    assert (a.abort, a.detail) == (b.abort, b.detail)
    if a.released is None:
        assert b.released is None
    else:
        assert b.released is not None and a.released.tobytes() == b.released.tobytes()
    assert len(a.survivors) == len(b.survivors)
    assert all(np.array_equal(x, y) for x, y in zip(a.survivors, b.survivors, strict=True))
    assert a.closed_at == b.closed_at
    assert (a.seeds_reconstructed, a.keys_reconstructed) == (
        b.seeds_reconstructed,
        b.keys_reconstructed,
    )
    assert per_client.world.trace.arrays().kinds == batched.world.trace.arrays().kinds
    assert np.array_equal(_trace_rows(per_client), _trace_rows(batched))
    assert Communication.of_world(per_client.world, output_party="server") == (
        Communication.of_world(batched.world, output_party="server")
    )
    assert per_client.keys.agreements == batched.keys.agreements
    assert per_client.ledger.epsilon() == batched.ledger.epsilon()


def test_the_cases_reach_what_they_are_named_for():
    """The cases above exercise what they claim: a release with dropped clients' keys
    rebuilt, and an abort after each of the two named rounds."""
    rebuilt = simulate(_scenario("crashes in every round, keys of the dropped rebuilt", "batched"))
    assert rebuilt.outcome.ok and rebuilt.outcome.keys_reconstructed > 0
    assert rebuilt.keys.sealed_and_opened > 0
    shares = simulate(_scenario("abort after MaskedInputCollection", "batched"))
    assert shares.outcome.abort == "too_few_masked_inputs"
    keys = simulate(_scenario("abort after AdvertiseKeys", "batched"))
    assert keys.outcome.abort == "too_few_keys"
    crashed = simulate(
        _scenario("the server crashes after ShareKeys: its clients time out", "batched")
    )
    assert crashed.outcome.abort == "server_crashed"
    assert len(crashed.world.trace.arrays().kinds) >= 3  # it had forwarded the shares


def test_a_wrong_mask_gives_a_wrong_sum(monkeypatch):
    """The masks are computed, not assumed to cancel: drop one pair's mask from every
    shard's sum and the release is off the survivors' sum."""
    case = "crashes in every round, keys of the dropped rebuilt"
    right = simulate(_scenario(case, "batched"), processes=1)
    honest = shard.mask_total

    def one_pair_short(self_seeds, pair_seeds, signs, dimension, bits):
        signs = signs.copy()
        signs[0, np.flatnonzero(signs[0])[0]] = 0
        return honest(self_seeds, pair_seeds, signs, dimension, bits)

    monkeypatch.setattr(shard, "mask_total", one_pair_short)
    wrong = simulate(_scenario(case, "batched"), processes=1)
    assert right.outcome.released is not None and wrong.outcome.released is not None
    assert np.abs(wrong.outcome.released - right.outcome.released).max() > 1.0


@pytest.mark.parametrize("bits", [16, 32, 48, 64])
@pytest.mark.parametrize("count", [0, 1, 7, 40])
def test_the_sizes_charged_are_the_messages_encoded_sizes(bits, count):
    sizes = WireSizes.of(dimension=9, bits=bits)
    ids = np.arange(count, dtype=np.int64)
    key = bytes(KEY_BYTES)
    assert sizes.advertise == wire_size(m.AdvertiseKeys(c_public=key, s_public=key))
    assert sizes.directory.of(np.array(count)) == wire_size(
        m.Directory(clients=ids, c_public=key * count, s_public=key * count)
    )
    assert sizes.shares.of(np.array(count)) == wire_size(
        m.EncryptedShares(peers=ids, ciphertexts=bytes((RECORD_BYTES + TAG_BYTES) * count))
    )
    # as the client sends y_u: in the narrowest words that hold residues mod 2^b
    assert sizes.masked == wire_size(m.MaskedInput(values=np.zeros(9, dtype=wire_dtype(bits))))
    assert sizes.survivors.of(np.array(count)) == wire_size(m.Survivors(clients=ids))
    assert sizes.unmask.of(np.array(count)) == wire_size(
        m.UnmaskShares(
            owners=ids,
            kinds=np.zeros(count, dtype=np.uint8),
            shares=np.zeros((count, SK_WORDS), dtype=np.uint64),
        )
    )


def test_auto_delivery_batches_large_rounds_it_can():
    def resolved(**changes: Any) -> str:
        return delivery(make_scenario(protocol="secagg_plus", **changes))

    assert resolved(population={"clients": 100}) == "per_client"
    big = {"population": {"clients": BATCHED_FROM_CLIENTS}}
    assert resolved(**big) == "batched"
    assert resolved(**big, threat={"colluding_clients": 3}) == "per_client"
    assert resolved(**big, threat={"colluding_servers": ["server"]}) == "per_client"
    assert resolved(**big, network={"encryption": "aes-gcm"}) == "per_client"


def test_the_result_says_which_delivery_ran(monkeypatch):
    """``auto`` is resolved in the result's details, so a reader of a result file knows
    how its clients ran (the threshold lowered: the same rule at a test's size)."""
    import privsim
    from privsim.protocols.secagg import run as secagg_run

    scenario = make_scenario(protocol="secagg_plus", population={"clients": 60})
    assert privsim.run(scenario, seed=1).to_dict()["secagg_plus"]["delivery"] == "per_client"
    monkeypatch.setattr(secagg_run, "BATCHED_FROM_CLIENTS", 50)
    assert privsim.run(scenario, seed=1).to_dict()["secagg_plus"]["delivery"] == "batched"


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"threat": {"colluding_clients": 2}}, "colluding"),
        ({"threat": {"colluding_servers": ["server"]}}, "colluding"),
        ({"network": {"encryption": "aes-gcm"}}, "aes-gcm"),
    ],
)
def test_batched_delivery_where_it_cannot_run_is_a_named_error(changes, named):
    with pytest.raises(ScenarioError) as raised:
        make_scenario(
            protocol="secagg_plus",
            population={"clients": 60},
            secagg={"delivery": "batched"},
            **changes,
        )
    assert raised.value.field == "secagg.delivery"
    assert named in str(raised.value)
