"""The kit's SecAgg+ round used without the SecAgg protocol: a cohort of named clients and
a server on a fresh world, given integer inputs, release the exact sum of the included
clients' inputs (also when a client drops after sharing its keys), and with discrete
Gaussian noise the ledger holds the release under the server-and-t-holders trust."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privsim.kit.intnoise.accounting import calibrate
from privsim.kit.intnoise.rounding import integer_sensitivity
from privsim.kit.secagg import round as secagg
from privsim.kit.secagg.noise import Noise
from privsim.kit.secagg.outcome import AbortReason
from privsim.kit.world import agree_channels
from privsim.sim.coalition import CoalitionSpec
from privsim.sim.faults import FaultSpec
from privsim.sim.latency import ConstantLatency
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.network import LinkSpec, NetworkModel
from privsim.sim.streams import Streams
from privsim.sim.world import World

N, D, BITS, SEED = 20, 6, 32, 11
#: A cohort's names (not client-0 … client-19) and a server of another name.
CLIENTS = tuple(f"user-{7 * i + 3}" for i in range(N))
SERVER = "aggregator"
#: Constant 10 ms links: a client sends its shares at 20 ms and receives the others'
#: at 40 ms, so a crash at 35 ms is a drop after ShareKeys (in U2, not in U3).
AFTER_SHARE_KEYS = 0.035
PARAMS = secagg.choose_parameters(
    N, dropout=0.1, corruption=0.1, security_bits=40, correctness_bits=20, degree=8, threshold=5
)
INPUTS = np.random.default_rng(3).integers(-50, 51, size=(N, D))


def _round(
    *, noise: Noise | None = None, faults: FaultSpec | None = None, inputs: Any = INPUTS
) -> tuple[secagg.RoundPlan, secagg.Outcome, World]:
    assert PARAMS is not None and PARAMS.degree == 8 and not PARAMS.complete
    streams = Streams(SEED)
    plan = secagg.plan(
        CLIENTS, SERVER, params=PARAMS, dimension=D, bits=BITS, streams=streams, noise=noise
    )
    world = World(
        seed=streams,
        network=NetworkModel(LinkSpec(latency=ConstantLatency(value=0.01))),
        faults=faults,
        coalition=CoalitionSpec(clients=(CLIENTS[0],)),
    )
    with secagg.launch(world, plan, inputs) as launched:
        agree_channels(world, lambda _: secagg.channel_pairs(plan))
        world.run()
    return plan, secagg.outcome_of(launched), world


def test_the_released_sum_is_the_exact_sum_of_the_inputs():
    plan, outcome, world = _round()
    assert outcome.ok and outcome.abort is None
    assert secagg.included_clients(plan, outcome) == CLIENTS
    assert outcome.released is not None
    assert np.array_equal(outcome.released, INPUTS.sum(axis=0).astype(np.float64))
    # the colluding client's private state is its integer input, as given
    assert np.array_equal(world.coalition_view().private[CLIENTS[0]]["input"], INPUTS[0])


def test_rows_given_by_a_function_make_the_same_round():
    asked: list[int] = []

    def rows(indices: np.ndarray) -> np.ndarray:
        asked.extend(indices.tolist())
        return INPUTS[indices]

    _, by_function, _ = _round(inputs=rows)
    _, by_array, _ = _round()
    assert sorted(asked) == list(range(N))  # each row made once
    assert by_function.released is not None and by_array.released is not None
    assert by_function.released.tobytes() == by_array.released.tobytes()


def test_a_client_dropping_after_sharing_its_keys_is_left_out_of_an_exact_sum():
    dropped = 4
    plan, outcome, _ = _round(faults=FaultSpec(crashes=((CLIENTS[dropped], AFTER_SHARE_KEYS),)))
    assert outcome.ok
    u2, u3 = outcome.survivors[1], outcome.survivors[2]
    assert dropped in u2.tolist() and dropped not in u3.tolist()
    included = secagg.included_clients(plan, outcome)
    assert included is not None and CLIENTS[dropped] not in included and len(included) == N - 1
    assert outcome.keys_reconstructed == 1  # the server rebuilt its mask key
    keep = np.ones(N, dtype=bool)
    keep[dropped] = False
    assert outcome.released is not None
    assert np.array_equal(outcome.released, INPUTS[keep].sum(axis=0).astype(np.float64))


def test_two_rounds_run_side_by_side_on_one_world():
    """Each round's own clients, server and stream label: the second round's clients
    come after the first's among the world's parties of role ``client``."""
    streams = Streams(SEED)
    world = World(seed=streams, network=NetworkModel(LinkSpec(latency=ConstantLatency(value=0.01))))
    others = tuple(f"member-{i}" for i in range(N))
    second = INPUTS[::-1] * 3
    rounds = [
        (
            secagg.plan(
                names, server, params=PARAMS, dimension=D, bits=BITS, streams=streams, label=label
            ),
            rows,
        )
        for names, server, label, rows in [
            (CLIENTS, "server-a", ("secagg", 0), INPUTS),
            (others, "server-b", ("secagg", 1), second),
        ]
    ]
    launched = [secagg.launch(world, plan, rows) for plan, rows in rounds]
    agree_channels(world, lambda _: secagg.channel_pairs(*(plan for plan, _ in rounds)))
    try:
        world.run()
    finally:
        for one in launched:
            one.close()
    for one, (_, rows) in zip(launched, rounds, strict=True):
        outcome = secagg.outcome_of(one)
        assert outcome.ok and outcome.released is not None
        assert np.array_equal(outcome.released, rows.sum(axis=0).astype(np.float64))


EPSILON, DELTA, CLIP, TOLERATED = 1.0, 1e-5, 60.0, 2


def _noise() -> Noise:
    honest = N - TOLERATED - 1
    sensitivity = integer_sensitivity(CLIP, 1.0, D, 0.0)
    parameter = calibrate(
        "discrete_gaussian",
        EPSILON,
        delta=DELTA,
        honest_clients=honest,
        sensitivity=sensitivity,
        dimension=D,
    )
    noise = Noise.of(
        "discrete_gaussian",
        parameter,
        clients=N,
        honest=honest,
        sensitivity=sensitivity,
        dimension=D,
        delta=DELTA,
        clip=CLIP,
        scale=1.0,
        wrap_probability=1e-9,
    )
    noise.modulus.check(BITS)
    return noise


def test_a_noisy_release_is_charged_and_settled_under_the_server_threshold_trust():
    noise = _noise()
    ledger = PrivacyLedger(EPSILON, DELTA)
    streams = Streams(SEED)
    planned = secagg.plan(
        CLIENTS, SERVER, params=PARAMS, dimension=D, bits=BITS, streams=streams, noise=noise
    )
    secagg.charge(ledger, "sum", planned)
    plan, outcome, _ = _round(noise=noise)
    assert plan.graph.order.tolist() == planned.graph.order.tolist()  # same seed, same graph
    secagg.settle(ledger, "sum", plan, outcome)

    # the release is the inputs' sum plus each client's share, drawn from its own stream
    eta = [noise.sample(Streams(SEED).generator("agent", c, "noise"), D) for c in CLIENTS]
    assert outcome.released is not None
    assert np.array_equal(outcome.released, (INPUTS.sum(axis=0) + np.sum(eta, axis=0)))
    assert not np.array_equal(outcome.released, INPUTS.sum(axis=0))

    honest = ledger.guarantee(frozenset())
    (event,) = honest.events
    assert (event.label, event.status, event.trust_kind) == ("sum", "released", "server_threshold")
    assert event.trusted_parties == (SERVER, *CLIENTS) and not event.broken
    # all N clients' shares reached the sum, more than the N − T planned: no worse than planned
    assert honest.met and honest.epsilon <= noise.account.epsilon <= EPSILON
    # the server with t holders of one client's shares unmasks it
    holders = plan.graph.holders(7)[: plan.threshold].tolist()
    broken = ledger.guarantee(frozenset({SERVER, *(CLIENTS[i] for i in holders)}))
    assert broken.events[0].broken and not broken.met
    # t − 1 holders are not enough
    assert (
        not ledger.guarantee(frozenset({SERVER, *(CLIENTS[i] for i in holders[1:])}))
        .events[0]
        .broken
    )


def test_an_aborted_round_is_withheld():
    ledger = PrivacyLedger(EPSILON, DELTA)
    absent = FaultSpec(absent_parties=CLIENTS[: N - PARAMS.threshold + 1])
    plan, outcome, _ = _round(noise=_noise(), faults=absent)
    secagg.charge(ledger, "sum", plan)
    secagg.settle(ledger, "sum", plan, outcome)
    assert outcome.abort is AbortReason.TOO_FEW_KEYS and outcome.released is None
    assert secagg.included_clients(plan, outcome) is None
    assert ledger.guarantee(frozenset()).events[0].status == "withheld"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"clients": (*CLIENTS[:-1], CLIENTS[0])}, "distinct"),
        ({"server": CLIENTS[3]}, "distinct"),
        ({"bits": 65}, "bits"),
    ],
)
def test_a_plan_is_checked(change, message):
    given: dict[str, Any] = {"clients": CLIENTS, "server": SERVER, "bits": BITS} | change
    with pytest.raises(ValueError, match=message):
        secagg.plan(
            given["clients"],
            given["server"],
            params=PARAMS,
            dimension=D,
            bits=given["bits"],
            streams=Streams(SEED),
        )
