"""A randomized-response survey, written outside privsim: each client answers
``questions`` yes/no questions by binary randomized response and reports one value in
[0, 1] with its own Gaussian noise; one aggregator debiases the yes-counts. Trusts nobody.

Privacy: half the budget ε goes to the answers, ε_q = ε/(2·questions) each (randomized
response with noise parameter p = 2/(e^ε_q + 1): ln(1 + (1 − p)·2/p) = ε_q), the other
half to the value (Gaussian, sensitivity 1 for replace-one; a removed client reads as a
placeholder answering "no" and reporting 0). By the basic theorem the two halves are
(ε, δ)-DP; the ledger composes them tighter, the answers as randomized response under
the scenario's neighbouring relation. The ledger's composition is at δ > 0 (a Gaussian
is in it), so this protocol shows the randomized-response events composed at δ."""

from __future__ import annotations

import math
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
MECHANISM = "survey"


@dataclass(frozen=True, slots=True, kw_only=True)
class NoisyRrConfig:
    """``questions`` yes/no answers per client, each true with probability ``rate``."""

    questions: int = 8
    rate: float = 0.3
    timeout: float = 1.0

    def __post_init__(self) -> None:
        if self.questions < 1:
            raise FieldError(
                "noisy_rr.questions", f"must be >= 1, got {self.questions}", "give 1 or more"
            )
        if not 0.0 <= self.rate <= 1.0:
            raise FieldError("noisy_rr.rate", f"must be in [0, 1], got {self.rate}", "give 0.3")
        require_positive("noisy_rr.timeout", self.timeout)


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Answers(Message):
    bits: npt.NDArray[np.int64]
    value: float


def noise_parameter(epsilon: float) -> float:
    """p of binary randomized response at ε: ln(1 + (1 − p)·2/p) = ε ⇔ p = 2/(e^ε + 1)."""
    return 2.0 / (math.exp(epsilon) + 1.0)


def answer_epsilon(epsilon: float, questions: int) -> float:
    """ε_q = ε/(2·questions): half the budget, split evenly over the answers."""
    return epsilon / (2.0 * questions)


def randomise(bits: npt.NDArray[np.int64], p: float, rng: np.random.Generator) -> Any:
    """Keep each bit w.p. 1 − p, else replace it by a fair coin."""
    coins = rng.integers(0, 2, bits.size)
    return np.where(rng.random(bits.size) < p, coins, bits)


def client(
    agent: Agent, bits: npt.NDArray[np.int64], value: float, p: float, sigma: float
) -> Behaviour:
    rng = agent.rng("noise")
    agent.send(
        AGGREGATOR, Answers(bits=randomise(bits, p, rng), value=value + rng.normal(0.0, sigma))
    )
    yield from ()


def aggregator(agent: Agent, clients: tuple[str, ...], questions: int, timeout: float) -> Behaviour:
    counts, got = np.zeros(questions), set()
    while len(got) < len(clients):
        delivery = yield from agent.receive(Answers, deadline=timeout)
        if delivery is None:
            break
        got.add(delivery.src)
        counts += delivery.message.bits
    return counts, got


def run(scenario: Scenario, seed: int) -> RunResult:
    started = time.perf_counter()
    cfg = scenario.table("noisy_rr", NoisyRrConfig)
    priv = scenario.privacy
    streams = Streams(seed)
    clients = tuple(f"client-{i}" for i in range(scenario.population.clients))
    rng = streams.generator("data", "noisy-rr")
    bits = (rng.random((len(clients), cfg.questions)) < cfg.rate).astype(np.int64)
    values = rng.random(len(clients))
    eps_q = answer_epsilon(priv.epsilon, cfg.questions)
    p = noise_parameter(eps_q)
    sigma = gaussian_sigma(priv.epsilon / 2.0, priv.delta, 1.0)
    event = dp_accounting.ComposedDpEvent(
        [
            dp_accounting.SelfComposedDpEvent(
                dp_accounting.RandomizedResponseDpEvent(p, 2), cfg.questions
            ),
            dp_accounting.GaussianDpEvent(sigma),
        ]
    )
    ledger = PrivacyLedger(
        priv.epsilon, priv.delta, on_overspend=priv.on_overspend, neighbour=priv.neighbour
    )
    ledger.charge(MECHANISM, event, trust=Trust.nobody())
    world = build_world(scenario, streams, [*clients, AGGREGATOR])
    for i, agent in enumerate(world.add_parties("client", clients)):
        world.start(agent, client(agent, bits[i], float(values[i]), p, sigma))
    out = world.add_party(AGGREGATOR, "aggregator")
    world.start(out, aggregator(out, clients, cfg.questions, cfg.timeout))
    world.run()
    counts, got = out.result if out.result is not None else (None, set())
    included = [i for i, c in enumerate(clients) if c in got]
    accuracy = None
    if counts is None or not included:
        ledger.withhold(MECHANISM)
    else:
        estimate = (counts / len(included) - p / 2.0) / (1.0 - p)
        truth = bits[included].mean(axis=0)
        accuracy = {"rmse": float(np.sqrt(np.mean((estimate - truth) ** 2)))}
    return RunResult(
        scenario_name=scenario.name,
        protocol="noisy_rr",
        seed=seed,
        root_entropy=streams.entropy,
        status="released" if included else "aborted",
        privacy=Privacy.of(
            ledger, world.coalition, answer_epsilon=eps_q, noise_parameter=p, sigma=sigma
        ),
        accuracy=accuracy,
        communication=Communication.of_world(world, output_party=AGGREGATOR),
        parties=Parties.of_world(world, clients, [clients[i] for i in included]),
        timing=Timing(wall_seconds=time.perf_counter() - started),
        scenario=scenario.to_dict(),
    )


def report(result: Mapping[str, Any]) -> list[str]:
    acc = result["accuracy"] or {}
    return [f"Accuracy    RMSE {acc.get('rmse', float('nan')):.4g} (debiased yes-rates)"]


PROTOCOL = ProtocolSpec(
    name="noisy_rr",
    summary="each client answers by randomized response and adds its own Gaussian noise",
    tables={"noisy_rr": NoisyRrConfig},
    run=run,
    report=report,
    study=StudyView(
        metrics={"accuracy.rmse": "RMSE of the debiased yes-rates"}, headline=("accuracy.rmse",)
    ),
    example={
        "name": "noisy-rr-example",
        "seed": 5,
        "protocol": "noisy_rr",
        "population": {"clients": 20},
        "privacy": {"epsilon": 4.0, "delta": 1e-5},
        "noisy_rr": {"questions": 8},
        "network": {"encryption": "none"},
    },
)
