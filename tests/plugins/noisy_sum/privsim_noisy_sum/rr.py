"""A randomized-response survey, written outside privsim: each client answers
``questions`` yes/no questions by binary randomized response and reports one value in
[0, 1] with its own Gaussian noise; one aggregator debiases the yes-counts. Trusts nobody.

Privacy: half of ε goes to the answers, ε_q = ε/(2·questions) each, the other half to
the value (Gaussian, sensitivity 1 for replace-one; a removed client reads as a
placeholder answering "no" and reporting 0). The ledger composes both as one event at
δ > 0 (a Gaussian is in it), the answers as randomized response under the scenario's
neighbouring relation: tighter than the basic theorem's (ε, δ)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.budget import ledger_for
from privsim.kit.result import Abort, RunResult
from privsim.kit.spec import ProtocolSpec, StudyView, clients_and
from privsim.kit.world import build_world
from privsim.scenarios.errors import FieldError, require_at_least, require_positive
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.messages import Message, message
from privsim.sim.streams import Streams

AGGREGATOR = "aggregator"
MECHANISM = "survey"
Bits = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, kw_only=True)
class NoisyRrConfig:
    """``questions`` yes/no answers per client, each true with probability ``rate``."""

    questions: int = 8
    rate: float = 0.3
    timeout: float = 1.0

    def __post_init__(self) -> None:
        require_at_least("noisy_rr.questions", self.questions)
        if not 0.0 <= self.rate <= 1.0:
            raise FieldError("noisy_rr.rate", f"must be in [0, 1], got {self.rate}", "give 0.3")
        require_positive("noisy_rr.timeout", self.timeout)


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class Answers(Message):
    bits: Bits
    value: float


def client(agent: Agent, bits: Bits, value: float, p: float, sigma: float) -> Behaviour:
    """Each bit kept w.p. 1 − p, else replaced by a fair coin; the value plus N(0, σ²)."""
    rng = agent.rng("noise")
    coins = rng.integers(0, 2, bits.size)
    answers = np.where(rng.random(bits.size) < p, coins, bits)
    agent.send(AGGREGATOR, Answers(bits=answers, value=value + rng.normal(0.0, sigma)))
    yield from ()


def aggregator(agent: Agent, clients: tuple[str, ...], questions: int, timeout: float) -> Behaviour:
    got = yield from agent.receive_all(Answers, count=len(clients), deadline=timeout)
    return sum((g.message.bits for g in got), np.zeros(questions)), {g.src for g in got}


def calibration(scenario: Scenario) -> tuple[float, float, float]:
    """(ε_q, p, σ): ε_q = ε/(2·questions) for each answer, randomized response's p at ε_q
    (ln(1 + (1 − p)·2/p) = ε_q ⇔ p = 2/(e^ε_q + 1)), and the value's σ at ε/2, Δ = 1."""
    priv, questions = scenario.privacy, scenario.table("noisy_rr", NoisyRrConfig).questions
    eps_q = priv.epsilon / (2.0 * questions)
    p = 2.0 / (math.exp(eps_q) + 1.0)
    return eps_q, p, gaussian_sigma(priv.epsilon / 2.0, priv.delta, 1.0)


def plan(scenario: Scenario) -> PrivacyLedger:
    """The ledger as run charges it: answers and value as one event, trusting nobody."""
    _, p, sigma = calibration(scenario)
    questions = scenario.table("noisy_rr", NoisyRrConfig).questions
    rr = dp_accounting.RandomizedResponseDpEvent(p, 2)
    answers = dp_accounting.SelfComposedDpEvent(rr, questions)
    event = dp_accounting.ComposedDpEvent([answers, dp_accounting.GaussianDpEvent(sigma)])
    return ledger_for(scenario, {MECHANISM: event})


def run(scenario: Scenario, seed: int) -> RunResult:
    started, ledger = time.perf_counter(), plan(scenario)
    cfg = scenario.table("noisy_rr", NoisyRrConfig)
    eps_q, p, sigma = calibration(scenario)
    streams = Streams(seed)
    clients = tuple(f"client-{i}" for i in range(scenario.population.clients))
    rng = streams.generator("data", "noisy-rr")
    bits = (rng.random((len(clients), cfg.questions)) < cfg.rate).astype(np.int64)
    values = rng.random(len(clients))
    world = build_world(scenario, streams, [*clients, AGGREGATOR])
    for i, agent in enumerate(world.add_parties("client", clients)):
        world.start(agent, client(agent, bits[i], float(values[i]), p, sigma))
    out = world.add_party(AGGREGATOR, "aggregator")
    world.start(out, aggregator(out, clients, cfg.questions, cfg.timeout))
    world.run()
    counts, got = out.result or (np.zeros(cfg.questions), None)  # None: no aggregator
    included = [i for i, c in enumerate(clients) if c in (got or ())]
    accuracy, abort = None, None
    if included:  # the yes-rates, debiased: E[reported] = (1 − p)·rate + p/2
        error = (counts / len(included) - p / 2.0) / (1.0 - p) - bits[included].mean(axis=0)
        accuracy = {"rmse": float(np.sqrt(np.mean(error**2)))}
    else:
        ledger.withhold(MECHANISM)
        why = "no client's answer arrived in time" if got is not None else "no aggregator ran"
        abort = Abort(reason="no_contributions", detail=why)
    return RunResult.of_world(
        scenario,
        seed,
        world,
        ledger,
        included=[clients[i] for i in included],
        abort=abort,
        accuracy=accuracy,
        privacy={"answer_epsilon": eps_q, "noise_parameter": p, "sigma": sigma},
        output_party=AGGREGATOR,
        started=started,
    )


PROTOCOL = ProtocolSpec(
    name="noisy_rr",
    summary="each client answers by randomized response and adds its own Gaussian noise",
    tables={"noisy_rr": NoisyRrConfig},
    run=run,
    plan=plan,
    parties=clients_and({"aggregator": AGGREGATOR}),
    study=StudyView(
        metrics={"accuracy.rmse": "RMSE of the debiased yes-rates"}, headline=("accuracy.rmse",)
    ),
    example={
        "name": "noisy-rr-example",
        "seed": 5,
        "protocol": "noisy_rr",
        "population": {"clients": 20},
        "privacy": {"epsilon": 4.0, "delta": 1e-5},
        "network": {"encryption": "none"},
    },
)
