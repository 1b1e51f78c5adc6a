"""SecAgg and SecAgg+ rounds on the bus: exact sums under every tolerated dropout pattern,
named aborts beyond, determinism, the trust recorded in the ledger, and exposure."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privsim.kit.secagg.messages import (
    AdvertiseKeys,
    EncryptedShares,
    MaskedInput,
    UnmaskShares,
)
from privsim.kit.secagg.outcome import AbortReason
from privsim.protocols.secagg import SECAGG, SECAGG_PLUS
from privsim.protocols.secagg.run import run_secagg, simulate
from privsim.scenarios import ScenarioError, scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.sim.messages import encode, wire_size

SPECS = {"secagg": SECAGG, "secagg_plus": SECAGG_PLUS}
#: A constant 10 ms latency and no bandwidth limit: round r closes at 10·(2r + 1) ms,
#: and a crash 5 ms after a round closed falls between that round and the next.
LINK = {"latency": {"model": "constant", "value": 0.01}}


def _base(protocol: str, **changes: Any) -> dict[str, Any]:
    data = set_fields(SPECS[protocol].example, {"secagg.noise": "none", "network.link": LINK})
    return set_fields(data, changes)


def _sim(data: dict[str, Any]):
    return simulate(scenario_from_dict(data))


def _closed(protocol: str) -> tuple[float, ...]:
    return _sim(_base(protocol)).outcome.closed_at


def _exact(sim) -> None:
    """Noise off: the released sum is the sum of the survivors' rounded inputs, exactly
    (every step is integer arithmetic mod 2^b; the only float step is the final /2^f)."""
    assert sim.outcome.ok, sim.outcome.detail
    assert np.array_equal(sim.outcome.released, sim.plain_sum(integer=True))


@pytest.mark.parametrize("protocol", sorted(SPECS))
def test_with_no_faults_the_sum_is_the_plain_sum(protocol):
    sim = _sim(_base(protocol))
    _exact(sim)
    n = sim.scenario.population.clients
    assert [s.size for s in sim.outcome.survivors] == [n] * 4
    # 2^-f rounding per coordinate and client bounds the error against the float sum
    bound = n * 0.5 / 2**16
    assert np.max(np.abs(sim.outcome.released - sim.plain_sum())) <= bound


@pytest.mark.parametrize("protocol", sorted(SPECS))
@pytest.mark.parametrize("between", [-1, 0, 1, 2])
def test_drops_between_any_two_rounds_leave_the_sum_exact(protocol, between):
    """-1: absent from the start; r: crash after round r closed, before round r + 1."""
    dropped = ["client-1", "client-4", "client-7"]
    if between < 0:
        data = _base(protocol, **{"faults.absent_parties": dropped})
    else:
        when = _closed(protocol)[between] + 0.005
        data = _base(protocol, **{"faults.crashes": [[c, when] for c in dropped]})
    sim = _sim(data)
    _exact(sim)
    live = [s.size for s in sim.outcome.survivors]
    n = sim.scenario.population.clients
    # the drop shows in the first live set after it: U1 (absent), U2, U3 or U5
    expected = [n] * (between + 1) + [n - 3] * (3 - between)
    assert live == expected
    included = set(sim.outcome.included.tolist())
    assert included.isdisjoint({1, 4, 7}) == (between < 2)
    # dropped after sharing keys but before masking: their s^SK was reconstructed
    assert sim.outcome.keys_reconstructed == (3 if between == 1 else 0)


@pytest.mark.parametrize("protocol", sorted(SPECS))
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_too_many_drops_abort_with_the_rounds_reason(protocol, stage):
    n = SPECS[protocol].example["population"]["clients"]
    t = SPECS[protocol].example["secagg"]["threshold"]
    # SecAgg: N − t + 1 drops leave t − 1 live; SecAgg+: dropping a client's whole
    # neighbourhood but t − 1 of it, from client 0 onwards, starves some client.
    many = n - t + 1 if protocol == "secagg" else n // 2 + 2
    dropped = [f"client-{i}" for i in range(many)]
    if stage == 0:
        data = _base(protocol, **{"faults.absent_parties": dropped})
    else:
        when = _closed(protocol)[stage - 1] + 0.005
        data = _base(protocol, **{"faults.crashes": [[c, when] for c in dropped]})
    sim = _sim(data)
    reasons = [
        AbortReason.TOO_FEW_KEYS,
        AbortReason.TOO_FEW_SHARES,
        AbortReason.TOO_FEW_MASKED_INPUTS,
        AbortReason.TOO_FEW_UNMASKING_SHARES,
    ]
    assert sim.outcome.abort is reasons[stage], sim.outcome.detail
    assert sim.outcome.released is None
    result = run_secagg(scenario_from_dict(data), data["seed"]).to_dict()
    assert result["status"] == "aborted" and result["abort"]["reason"] == reasons[stage]


def test_exactly_t_survivors_still_release():
    n, t = 12, SECAGG.example["secagg"]["threshold"]
    dropped = [f"client-{i}" for i in range(n - t)]
    when = _closed("secagg")[2] + 0.005  # after masked inputs: only t unmask
    sim = _sim(_base("secagg", **{"faults.crashes": [[c, when] for c in dropped]}))
    _exact(sim)
    assert sim.outcome.survivors[3].size == t


@pytest.mark.parametrize("protocol", sorted(SPECS))
def test_the_same_seed_gives_the_same_bytes_and_sum(protocol):
    data = _base(protocol, **{"secagg.noise": "discrete_gaussian"})
    a, b = _sim(data), _sim(data)
    assert np.array_equal(a.outcome.released, b.outcome.released)
    assert a.world.trace.arrays().wire_bytes.tolist() == b.world.trace.arrays().wire_bytes.tolist()
    other = _sim(set_fields(data, {"seed": data["seed"] + 1}))
    assert not np.array_equal(a.outcome.released, other.outcome.released)


def test_message_sizes_are_the_serialised_sizes():
    """Each client sends its four messages, of exactly their encoded sizes: 2 public keys,
    k ciphertexts of 96 B (+ k recipient ids), d words of 8 B (b = 48), k + 1 shares."""
    sim = _sim(_base("secagg_plus"))
    result = run_secagg(sim.scenario, sim.seed).to_dict()
    k, d = result["secagg_plus"]["degree"], sim.scenario.secagg.dimension
    sent = [
        AdvertiseKeys(c_public=bytes(32), s_public=bytes(32)),
        EncryptedShares(peers=np.zeros(k, np.int64), ciphertexts=bytes(96 * k)),
        MaskedInput(values=np.zeros(d, np.uint64)),
        UnmaskShares(
            owners=np.zeros(k + 1, np.int64),
            kinds=np.zeros(k + 1, np.uint8),
            shares=np.zeros((k + 1, 5), np.uint64),
        ),
    ]
    assert all(wire_size(m) == len(encode(m)) for m in sent)
    client = result["communication"]["roles"]["client"]
    assert client["bytes_sent_mean"] == sum(wire_size(m) for m in sent)
    assert client["messages_sent_mean"] == 4


def test_noise_charges_the_ledger_with_the_threshold_trust():
    data = _base("secagg", **{"secagg.noise": "skellam"})
    honest = run_secagg(scenario_from_dict(data), 5).to_dict()
    (event,) = honest["privacy"]["events"]
    assert event["trust_kind"] == "server_threshold" and "server" in event["trusted_parties"]
    assert honest["privacy"]["guarantee_met"] and not event["broken"]
    t = data["secagg"]["threshold"]
    below = set_fields(
        data,
        {
            "threat.colluding_servers": ["server"],
            "threat.colluding_clients": [f"client-{i}" for i in range(t - 1)],
        },
    )
    r = run_secagg(scenario_from_dict(below), 5).to_dict()
    assert not r["privacy"]["events"][0]["broken"]
    assert r["coalition"]["exposure"]["inputs_exposed"] == 0
    at = set_fields(below, {"threat.colluding_clients": [f"client-{i}" for i in range(t)]})
    r = run_secagg(scenario_from_dict(at), 5).to_dict()
    assert r["privacy"]["events"][0]["broken"]
    assert r["privacy"]["achieved_epsilon"] == "inf"  # JSON-safe infinity
    assert r["coalition"]["exposure"]["threshold_broken"] == 1
    assert r["coalition"]["exposure"]["inputs_exposed"] == 12 - t
    clients_only = set_fields(at, {"threat.colluding_servers": []})
    r = run_secagg(scenario_from_dict(clients_only), 5).to_dict()
    assert not r["privacy"]["events"][0]["broken"]


def test_noise_off_is_a_labelled_non_private_release():
    r = run_secagg(scenario_from_dict(_base("secagg")), 5).to_dict()
    assert r["privacy"]["non_private"] is True
    assert r["accuracy"]["max_abs_error_vs_rounded_sum"] == 0.0


def test_the_server_alone_learns_a_survivors_input_when_all_its_neighbours_collude():
    """SecAgg+: b_u is revealed to the server in Unmasking; if every neighbour of u
    colludes, the server also knows every pairwise mask of y_u."""
    sim = _sim(_base("secagg_plus"))
    neighbours = sim.graph.neighbours(0).tolist()
    data = _base(
        "secagg_plus",
        **{
            "threat.colluding_servers": ["server"],
            "threat.colluding_clients": [f"client-{v}" for v in neighbours],
        },
    )
    r = run_secagg(scenario_from_dict(data), data["seed"]).to_dict()
    assert r["coalition"]["exposure"]["inputs_exposed"] >= 1


def test_a_modulus_too_small_for_the_sum_is_a_named_error():
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(_base("secagg", **{"secagg.modulus_bits": 16}))
    assert info.value.field == "secagg.modulus_bits"


def test_an_unreachable_security_target_is_a_named_error():
    data = _base("secagg", **{"secagg.threshold": 0, "secagg.security_bits": 128})
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data)
    assert info.value.field == "secagg.threshold"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_faults_at_any_time_leave_the_sum_exact(seed):
    """SecAgg+ with the paper's (k, t) for 10 % dropout (σ = 20 to keep k small): 5 %
    absent and 5 % crashing at uniform times across the whole round; whoever survives,
    the sum is exact."""
    data = _base(
        "secagg_plus",
        seed=seed,
        **{
            "population.clients": 120,
            "secagg.degree": 0,
            "secagg.threshold": 0,
            "secagg.target_dropout": 0.1,
            "secagg.target_corruption": 0.05,
            "secagg.security_bits": 20,
            "faults.absent": 0.05,
            "faults.crash": 0.05,
            "faults.crash_window": [0.0, 0.08],
        },
    )
    sim = _sim(data)
    _exact(sim)
    assert sim.outcome.survivors[3].size < 120
