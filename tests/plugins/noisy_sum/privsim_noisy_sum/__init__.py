"""A local-noise sum, written outside privsim: each client clips its vector, adds its
own Gaussian noise calibrated for (ε, δ) and sends it to one aggregator, which sums
what arrives by a deadline. Trusts nobody; costs N times the central noise variance."""

from __future__ import annotations

import time
from dataclasses import dataclass

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.budget import ledger_for
from privsim.kit.result import Abort, RunResult
from privsim.kit.spec import ProtocolSpec, StudyView, clients_and
from privsim.kit.world import build_world
from privsim.scenarios.errors import require_at_least, require_positive
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.messages import Message, message
from privsim.sim.streams import Streams

AGGREGATOR = "aggregator"


@dataclass(frozen=True, slots=True, kw_only=True)
class NoisySumConfig:
    """``dimension`` of each client's vector, clipped to L2 norm ``clip_norm``."""

    dimension: int = 3
    clip_norm: float = 1.0
    timeout: float = 1.0

    def __post_init__(self) -> None:
        require_at_least("noisy_sum.dimension", self.dimension)
        require_positive("noisy_sum.clip_norm", self.clip_norm)
        require_positive("noisy_sum.timeout", self.timeout)


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class NoisyVector(Message):
    values: npt.NDArray[np.float64]


def client(agent: Agent, z: npt.NDArray[np.float64], sigma: float) -> Behaviour:
    agent.send(AGGREGATOR, NoisyVector(values=z + agent.rng("noise").normal(0, sigma, z.size)))
    yield from ()


def aggregator(agent: Agent, clients: tuple[str, ...], d: int, timeout: float) -> Behaviour:
    got = yield from agent.receive_all(NoisyVector, count=len(clients), deadline=timeout)
    return sum((g.message.values for g in got), np.zeros(d)), {g.src for g in got}


def sigma(scenario: Scenario) -> float:
    """Each client's σ: the whole (ε, δ) at sensitivity 2C (replace one vector)."""
    clip = scenario.table("noisy_sum", NoisySumConfig).clip_norm
    return gaussian_sigma(scenario.privacy.epsilon, scenario.privacy.delta, 2 * clip)


def plan(scenario: Scenario) -> PrivacyLedger:
    """The ledger as run charges it: one Gaussian release per client, trusting nobody."""
    multiplier = sigma(scenario) / (2 * scenario.table("noisy_sum", NoisySumConfig).clip_norm)
    return ledger_for(scenario, {"local-noise": dp_accounting.GaussianDpEvent(multiplier)})


def run(scenario: Scenario, seed: int) -> RunResult:
    started, ledger, s = time.perf_counter(), plan(scenario), sigma(scenario)
    cfg = scenario.table("noisy_sum", NoisySumConfig)
    streams = Streams(seed)
    clients = tuple(f"client-{i}" for i in range(scenario.population.clients))
    z = streams.generator("data", "noisy-sum").normal(0.5, 1.0, (len(clients), cfg.dimension))
    z *= np.minimum(1.0, cfg.clip_norm / np.linalg.norm(z, axis=1))[:, None]
    world = build_world(scenario, streams, [*clients, AGGREGATOR])
    for i, agent in enumerate(world.add_parties("client", clients)):
        world.start(agent, client(agent, z[i], s))
    out = world.add_party(AGGREGATOR, "aggregator")
    world.start(out, aggregator(out, clients, cfg.dimension, cfg.timeout))
    world.run()
    total, got = out.result or (None, None)  # None: the aggregator crashed or was absent
    included = [i for i, c in enumerate(clients) if c in (got or ())]
    accuracy, abort = None, None
    if not included:
        ledger.withhold("local-noise")
        why = "no client's vector arrived in time" if got is not None else "no aggregator ran"
        abort = Abort(reason="no_contributions", detail=why)
    else:
        accuracy = {"rmse": float(np.sqrt(np.mean((total - z[included].sum(axis=0)) ** 2)))}
    return RunResult.of_world(
        scenario,
        seed,
        world,
        ledger,
        included=[clients[i] for i in included],
        abort=abort,
        accuracy=accuracy,
        privacy={"sigma_per_client": s},
        output_party=AGGREGATOR,
        started=started,
    )


PROTOCOL = ProtocolSpec(
    name="noisy_sum",
    summary="each client adds its own Gaussian noise; one aggregator sums (local DP)",
    tables={"noisy_sum": NoisySumConfig},
    run=run,
    plan=plan,
    parties=clients_and({"aggregator": AGGREGATOR}),
    study=StudyView(
        metrics={"accuracy.rmse": "RMSE of the noisy sum"}, headline=("accuracy.rmse",)
    ),
    example={
        "name": "noisy-sum-example",
        "seed": 5,
        "protocol": "noisy_sum",
        "population": {"clients": 20},
        "privacy": {"epsilon": 2.0, "delta": 1e-5},
        "network": {"encryption": "none"},
    },
)
