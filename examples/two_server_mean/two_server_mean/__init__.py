"""A two-server additive-secret-shared mean with local noise, as a privsim plug-in."""

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.budget import ledger_for
from privsim.kit.result import Abort, RunResult
from privsim.kit.spec import ProtocolSpec, accuracy_lines, clients_and
from privsim.kit.world import build_world
from privsim.scenarios.errors import require_at_least, require_positive
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import NoiseShares, PrivacyLedger, Trust
from privsim.sim.messages import Message, message
from privsim.sim.streams import Streams

NAME, SERVERS, ANALYST = "two_server_mean", ("server-0", "server-1"), "analyst"
BITS, WAIT = 16, 1.0  # fractional bits of the fixed point; seconds a server waits
Ring = npt.NDArray[np.uint64]  # integers modulo 2^64: NumPy's uint64 arithmetic wraps


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The [two_server_mean] table: the vectors' ``dimension`` and L2 bound ``clip_norm``;
    the noise is enough while at most ``tolerated`` (T) clients drop out or collude."""

    dimension: int = 4
    clip_norm: float = 1.0
    tolerated: int = 0

    def __post_init__(self) -> None:
        require_at_least("two_server_mean.dimension", self.dimension)
        require_positive("two_server_mean.clip_norm", self.clip_norm)
        require_at_least("two_server_mean.tolerated", self.tolerated, 0)


def split(x: npt.NDArray[np.float64], rng: np.random.Generator) -> tuple[Ring, Ring]:
    """``x`` in fixed point, as two shares that add up to it modulo 2^64: either one alone
    is uniform, whatever ``x`` is."""
    mask = rng.integers(0, 2**64, size=x.shape, dtype=np.uint64)
    return mask, np.round(x * 2.0**BITS).astype(np.int64).view(np.uint64) - mask


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class MaskedShare(Message):
    """Client -> server k: share k of its clipped, noisy vector."""

    values: Ring


@message
@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSum(Message):
    """Server -> analyst: the sum of the shares it holds, and whose they are."""

    values: Ring
    clients: tuple[int, ...]


def client(agent: Agent, x: npt.NDArray[np.float64], sigma_i: float) -> Behaviour:
    noisy = x + agent.rng("noise").normal(0.0, sigma_i, x.shape)  # its share of the noise
    for server, share in zip(SERVERS, split(noisy, agent.rng("mask")), strict=True):
        agent.send(server, MaskedShare(values=share))
    yield from ()  # a client waits for nothing


def server(agent: Agent, n: int, d: int) -> Behaviour:
    got = yield from agent.receive_all(MaskedShare, count=n, deadline=WAIT)
    total = sum((g.message.values for g in got), np.zeros(d, np.uint64))
    ids = tuple(sorted(int(g.src.removeprefix("client-")) for g in got))
    agent.send(ANALYST, ServerSum(values=total, clients=ids))


def analyst(agent: Agent) -> Behaviour:
    got = yield from agent.receive_all(ServerSum, count=2, deadline=2 * WAIT)
    if len(got) < 2 or got[0].message.clients != got[1].message.clients:
        return None  # a sum is missing, or the sums are over different clients
    ids, summed = got[0].message.clients, got[0].message.values + got[1].message.values
    total = summed.view(np.int64) / 2.0**BITS  # the masks cancelled modulo 2^64
    return ids, total / max(len(ids), 1)  # the mean (over no client: zeros)


def noise(scenario: Scenario) -> dict[str, float]:
    """Δ = 2C (one clipped vector replaced), σ for (ε, δ) at Δ, and each client's σ_i: the
    shares of N − T − 1 honest clients besides the one protected add up to σ."""
    n, p, cfg = scenario.population.clients, scenario.privacy, scenario.table(NAME, Config)
    require_at_least("population.clients", n, cfg.tolerated + 2)  # N − T − 1 >= 1
    sigma = gaussian_sigma(p.epsilon, p.delta, 2 * cfg.clip_norm, p.calibration)
    sigma_i = sigma / (n - cfg.tolerated - 1) ** 0.5
    return {"sensitivity": 2 * cfg.clip_norm, "sigma": sigma, "sigma_i": sigma_i}


def plan(scenario: Scenario) -> PrivacyLedger:
    """One Gaussian release, its noise in shares, private while one server is honest."""
    c, ledger = noise(scenario), ledger_for(scenario)
    everyone = tuple(f"client-{i}" for i in range(scenario.population.clients))
    shares = NoiseShares(contributors=everyone, share_multiplier=c["sigma_i"] / c["sensitivity"])
    trust = Trust.one_of(SERVERS, description="not both servers colluding")
    event = dp_accounting.GaussianDpEvent(c["sigma"] / c["sensitivity"])
    ledger.charge("sum", event, trust=trust, noise=shares)
    return ledger


def run(scenario: Scenario, seed: int) -> RunResult:
    t0, ledger, c = time.perf_counter(), plan(scenario), noise(scenario)
    cfg, streams = scenario.table(NAME, Config), Streams(seed)
    clients = [f"client-{i}" for i in range(scenario.population.clients)]
    x = streams.generator("data").normal(0.5, 1.0, (len(clients), cfg.dimension))
    x *= np.minimum(1.0, cfg.clip_norm / np.linalg.norm(x, axis=1))[:, None]
    world = build_world(scenario, streams, [*clients, *SERVERS, ANALYST])
    for i, agent in enumerate(world.add_parties("client", clients)):
        world.start(agent, client(agent, x[i], c["sigma_i"]))
    for agent in (world.add_party(s, "server") for s in SERVERS):
        world.start(agent, server(agent, len(clients), cfg.dimension))
    world.start(out := world.add_party(ANALYST, "analyst"), analyst(out))
    world.run()
    ids, mean = out.result or (None, 0.0)  # None: the analyst opened no sum
    if not ids:  # no sum, or a sum over no client
        ledger.withhold("sum")  # nothing released, nothing spent
        why = "no client reached the servers" if ids == () else "no matching sums from both servers"
        abort = Abort(reason="no_sum", detail=why)
        return RunResult.of_world(scenario, seed, world, ledger, abort=abort, privacy=c, started=t0)
    kept = [clients[i] for i in ids]
    ledger.settle("sum", contributors=kept)  # only their noise protects anyone
    error = mean - x[list(ids)].mean(axis=0)
    accuracy = {"rmse": float(np.sqrt(np.mean(error**2)))}
    return RunResult.of_world(
        scenario, seed, world, ledger, included=kept, accuracy=accuracy, privacy=c, started=t0
    )


def report(result: Mapping[str, Any]) -> list[str]:
    """This protocol's section of `privsim run`'s report: the noise, then the accuracy."""
    c = result["privacy"]["details"]
    line = f"Noise       σ_i {c['sigma_i']:.3g} from each client, σ {c['sigma']:.3g} in the sum"
    return [line, *accuracy_lines(result)]


PROTOCOL = ProtocolSpec(
    name=NAME,
    summary="clients split noisy vectors between two servers; an analyst averages the sums",
    tables={NAME: Config},
    run=run,
    plan=plan,
    parties=clients_and({"server": SERVERS, "analyst": ANALYST}),
    report=report,
    example={
        "name": "two-server-mean-example",
        "protocol": NAME,
        "population": {"clients": 20},
        "privacy": {"epsilon": 2.0, "delta": 1e-5},
    },
)
