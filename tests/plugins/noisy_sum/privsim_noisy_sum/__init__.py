"""A local-noise sum, written outside privsim: each client clips its vector, adds its
own Gaussian noise calibrated for (ε, δ) and sends it to one aggregator, which sums
what arrives by a deadline. Trusts nobody; costs N times the central noise variance."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.result import Communication, Parties, Privacy, RunResult, Timing
from privsim.kit.spec import ProtocolSpec, StudyView
from privsim.kit.world import build_world
from privsim.scenarios.errors import FieldError, require_positive
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger, Trust
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
        if self.dimension < 1:
            raise FieldError(
                "noisy_sum.dimension", f"must be >= 1, got {self.dimension}", "give 1 or more"
            )
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
    total, got = np.zeros(d), set()
    while len(got) < len(clients):
        delivery = yield from agent.receive(NoisyVector, deadline=timeout)
        if delivery is None:
            break
        got.add(delivery.src)
        total += delivery.message.values
    return total, got


def run(scenario: Scenario, seed: int) -> RunResult:
    started = time.perf_counter()
    cfg = scenario.table("noisy_sum", NoisySumConfig)
    p = scenario.privacy
    streams = Streams(seed)
    clients = tuple(f"client-{i}" for i in range(scenario.population.clients))
    rng = streams.generator("data", "noisy-sum")
    z = rng.normal(0.5, 1.0, (len(clients), cfg.dimension))
    z *= np.minimum(1.0, cfg.clip_norm / np.linalg.norm(z, axis=1))[:, None]
    sensitivity = 2 * cfg.clip_norm
    sigma = gaussian_sigma(p.epsilon, p.delta, sensitivity)
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend=p.on_overspend)
    ledger.charge(
        "local-noise", dp_accounting.GaussianDpEvent(sigma / sensitivity), trust=Trust.nobody()
    )
    world = build_world(scenario, streams, [*clients, AGGREGATOR])
    for i, agent in enumerate(world.add_parties("client", clients)):
        world.start(agent, client(agent, z[i], sigma))
    out = world.add_party(AGGREGATOR, "aggregator")
    world.start(out, aggregator(out, clients, cfg.dimension, cfg.timeout))
    world.run()
    total, got = out.result if out.result is not None else (None, set())
    included = [c for c in clients if c in got]
    truth = z[[clients.index(c) for c in included]].sum(axis=0) if included else None
    if total is None or not included:
        ledger.withhold("local-noise")
    return RunResult(
        scenario_name=scenario.name,
        protocol="noisy_sum",
        seed=seed,
        root_entropy=streams.entropy,
        status="released" if included else "aborted",
        privacy=Privacy.of(ledger, world.coalition, sigma_per_client=sigma),
        accuracy=None if truth is None else {"rmse": float(np.sqrt(np.mean((total - truth) ** 2)))},
        communication=Communication.of_world(world, output_party=AGGREGATOR),
        parties=Parties.of_world(world, clients, included),
        timing=Timing(wall_seconds=time.perf_counter() - started),
        scenario=scenario.to_dict(),
    )


def report(result: Mapping[str, Any]) -> list[str]:
    acc = result["accuracy"] or {}
    return [f"Accuracy    RMSE {acc.get('rmse', float('nan')):.4g} (local Gaussian noise)"]


PROTOCOL = ProtocolSpec(
    name="noisy_sum",
    summary="each client adds its own Gaussian noise; one aggregator sums (local DP)",
    tables={"noisy_sum": NoisySumConfig},
    run=run,
    report=report,
    study=StudyView(
        metrics={"accuracy.rmse": "RMSE of the noisy sum"}, headline=("accuracy.rmse",)
    ),
    example={
        "name": "noisy-sum-example",
        "seed": 5,
        "protocol": "noisy_sum",
        "population": {"clients": 20},
        "privacy": {"epsilon": 2.0, "delta": 1e-5},
        "noisy_sum": {"dimension": 3},
        "network": {"encryption": "none"},
    },
)
