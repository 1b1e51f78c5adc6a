"""One DCA secure-sum round as a sub-protocol other protocols call (Heikkilä et al.
2017, Algorithm 1 with the §3.1.3 agreement and Theorem 1's noise scaling).

A protocol that sums through DCA plans the round (:func:`plan`), checks the fixed-point
range (:func:`check_fixed_point`), launches its parties on a world (:func:`launch`),
and charges and settles the release on its ledger (:func:`charge`, :func:`settle`):
the event trusts that not every compute node colludes, and its noise comes in shares
from the clients, of which only the honest included ones protect anyone.
"""

from __future__ import annotations

from collections.abc import Sequence

import dp_accounting
import numpy as np

from privsim.kit.securesum import behaviours as dca
from privsim.kit.securesum.batched import (
    CHUNK_BYTES,
    THREADS,
    ShareRound,
    client_population,
    compute_node_batched,
)
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.inputs import ClientInputs, ShareSource
from privsim.kit.securesum.maths import fixed_point_bound
from privsim.kit.securesum.messages import DCA_KINDS, DcaKinds
from privsim.kit.securesum.outcome import AbortReason, SumOutcome
from privsim.kit.spec import PARTY_BYTES
from privsim.scenarios.errors import FieldError
from privsim.scenarios.schema import Scenario
from privsim.sim.agent import Agent
from privsim.sim.ledger import NoiseShares, PrivacyLedger, Trust
from privsim.sim.world import World

__all__ = [
    "OUTPUT_PARTY",
    "channel_pairs",
    "charge",
    "check_fixed_point",
    "check_secure_sum",
    "launch",
    "node_names",
    "outcome_of",
    "plan",
    "secure_sum_bytes",
    "secure_sum_seconds",
    "settle",
]

#: The party that receives the released sum.
OUTPUT_PARTY = "aggregator"


def node_names(scenario: Scenario) -> tuple[str, ...]:
    """The compute nodes ``compute-0`` … ``compute-(M−1)``."""
    return tuple(f"compute-{k}" for k in range(scenario.population.compute_nodes))


def _config(scenario: Scenario) -> DcaConfig:
    return scenario.table("dca", DcaConfig)


def check_secure_sum(scenario: Scenario, clients: int) -> None:
    """Theorem 1 needs N > T + 1 contributors; DCA needs at least two compute nodes."""
    t = _config(scenario).tolerated
    if clients <= t + 1:
        raise FieldError(
            "dca.tolerated",
            f"N = {clients} clients with T = {t} leaves N - T - 1 = {clients - t - 1} honest "
            "clients to carry the noise (Theorem 1 needs N > T + 1)",
            f"lower dca.tolerated below {clients - 1} or raise population.clients above {t + 1}",
        )
    if scenario.population.compute_nodes < 2:
        raise FieldError(
            "population.compute_nodes",
            "DCA needs at least 2 compute nodes (one node would see every input)",
            "set compute_nodes = 2 or more",
        )


def plan(
    scenario: Scenario,
    clients: tuple[str, ...],
    nodes: tuple[str, ...],
    dimension: int,
    noise_std: float,
    kinds: DcaKinds = DCA_KINDS,
) -> dca.DcaPlan:
    """The public DCA parameters of ``scenario`` for one secure sum of ``dimension``."""
    cfg = _config(scenario)
    return dca.DcaPlan(
        clients=clients,
        nodes=nodes,
        aggregator=OUTPUT_PARTY,
        dimension=dimension,
        client_noise_std=noise_std,
        fraction_bits=cfg.fraction_bits,
        tolerated=cfg.tolerated,
        share_timeout=cfg.share_timeout,
        agreement_timeout=cfg.agreement_timeout,
        sum_timeout=cfg.sum_timeout,
        release_beyond_tolerance=cfg.on_excess_dropout == "release",
        kinds=kinds,
    )


def check_fixed_point(scenario: Scenario, n: int, peak_value: float, noise_std: float) -> None:
    """The decoded sum must stay inside the signed fixed-point range (with a 10σ margin):
    ``n`` clients, each entry at most ``peak_value`` plus noise of ``noise_std``."""
    bits = _config(scenario).fraction_bits
    peak = n * (peak_value + 10.0 * noise_std)
    if not peak < fixed_point_bound(bits):
        raise FieldError(
            "dca.fraction_bits",
            f"{bits}: a sum of {n} clients can reach {peak:.3g}, beyond the fixed-point "
            f"range ±{fixed_point_bound(bits):.3g}",
            "lower dca.fraction_bits, or raise privacy.epsilon (less noise)",
        )


def secure_sum_bytes(clients: int, nodes: int, dimension: int, *, batched: bool) -> int:
    """Estimated peak memory of one DCA round, in bytes. Per message, every client's
    vector, noise and M shares are in flight at once: N·d·8·(M+2). Batched, the shares
    are made and summed in chunks: THREADS chunks of CHUNK_BYTES (or of one client's M
    shares, if larger), three times over, plus the nodes' sums, 8·d·(M+2). Either way
    N·PARTY_BYTES for the parties themselves."""
    n, m, d = clients, max(nodes, 1), dimension
    if batched:
        shares = 3 * THREADS * max(CHUNK_BYTES, 8 * m * d) + 8 * d * (m + 2)
    else:
        shares = n * d * 8 * (m + 2)
    return n * PARTY_BYTES + shares


#: Measured costs behind :func:`secure_sum_seconds` (benchmarks/bench_table1.py,
#: bench_dca.py and bench_estimates.py on the reference machine, one core): time per
#: message on the per-message path (engine 85 µs plus the sender's data and network
#: draws) and batched, per 64-bit word of shares made and summed, per pair of parties
#: agreeing keys (X25519 + HKDF), and per byte sealed and opened with AES-GCM.
SECONDS_PER_MESSAGE = 170e-6
SECONDS_PER_BATCHED_MESSAGE = 1.7e-6
SECONDS_PER_SHARE_WORD = 9e-9
SECONDS_PER_KEY_PAIR = 85e-6
SECONDS_PER_SEALED_BYTE = 1e-9


def secure_sum_seconds(
    clients: int, nodes: int, dimension: int, *, batched: bool, encrypted: bool
) -> float:
    """Estimated wall time of one DCA round: messages (N·M shares, M² agreement and sum
    messages) times the engine's cost per message, plus the N·M·d share words made and
    summed; with encryption, N·M + M² key pairs agreed and N·M·d·8 bytes sealed and
    opened. An order-of-magnitude estimate (within a few times of the measured figures)
    for refusing runs that would not finish, not a prediction."""
    n, m, d = clients, max(nodes, 1), dimension
    messages = n * m + m * m + m
    per_message = SECONDS_PER_BATCHED_MESSAGE if batched else SECONDS_PER_MESSAGE
    seconds = messages * per_message + n * m * d * SECONDS_PER_SHARE_WORD
    if encrypted:
        seconds += (n * m + m * m) * SECONDS_PER_KEY_PAIR
        seconds += 2 * n * m * d * 8 * SECONDS_PER_SEALED_BYTE
    return seconds


def channel_pairs(world: World) -> list[tuple[str, str]]:
    """Who talks to whom in a secure sum: clients to the servers (the compute nodes, or
    the output party when there are none), compute nodes among themselves and to the
    output party."""
    roles = world.parties_by_role
    servers = roles.get("compute", []) or [OUTPUT_PARTY]
    pairs = [(c, s) for c in roles.get("client", []) for s in servers]
    nodes = roles.get("compute", [])
    pairs += [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1 :]]
    pairs += [(a, OUTPUT_PARTY) for a in nodes]
    return pairs


def launch(
    world: World, plan: dca.DcaPlan, inputs: ShareSource | ClientInputs, *, batched: bool
) -> Agent:
    """Add and start the round's clients, compute nodes and output party; returns the
    output party, whose result is the :class:`SumOutcome` (see :func:`outcome_of`).
    ``batched`` sends the client shares in one event per node (identical results, no
    per-share coalition view)."""
    agents = world.add_parties("client", plan.clients)
    if batched:
        if not isinstance(inputs, ClientInputs):
            raise TypeError("batched delivery needs ClientInputs (chunked share generation)")
        shares = ShareRound(world, plan, inputs)
        world.start_group("clients", client_population(world, plan, inputs))
    else:
        for agent in agents:
            world.start(agent, dca.client(agent, inputs, plan))
    for node in plan.nodes:
        agent = world.add_party(node, "compute")
        if batched:
            world.start(agent, compute_node_batched(agent, plan, shares))
        else:
            world.start(agent, dca.compute_node(agent, plan))
    out = world.add_party(plan.aggregator, "aggregator")
    world.start(out, dca.aggregator(out, plan))
    return out


def outcome_of(agent: Agent) -> SumOutcome:
    """The output party's outcome (an abort if it crashed or never finished)."""
    if isinstance(agent.result, SumOutcome):
        return agent.result
    return SumOutcome.aborted(AbortReason.SUMS_MISSING, f"{agent.id} crashed or never started")


def charge(
    ledger: PrivacyLedger,
    label: str,
    *,
    event: dp_accounting.DpEvent,
    clients: Sequence[str],
    nodes: Sequence[str],
    share_multiplier: float = 0.0,
    noise: str = "gaussian",
    needed: int = 0,
) -> None:
    """Charge a secure-sum release: ``event`` holds while not every compute node
    colludes, with noise in shares from ``clients`` (Gaussian shares of multiplier
    ``share_multiplier`` = σ_i/Δ, or Gamma-split Laplace needing ``needed`` shares)."""
    ledger.charge(
        label,
        event,
        trust=Trust.one_of(nodes, description="not all compute nodes colluding"),
        noise=NoiseShares(
            contributors=tuple(clients),
            kind=noise,
            share_multiplier=share_multiplier,
            needed=needed,
        ),
    )


def settle(
    ledger: PrivacyLedger, label: str, outcome: SumOutcome | None, clients: Sequence[str]
) -> None:
    """Settle a secure-sum release: withheld on an abort, else released with the noise
    shares of the included clients."""
    if outcome is None or outcome.released is None or outcome.included is None:
        ledger.withhold(label)
        return
    ledger.settle(label, contributors=[clients[int(i)] for i in np.flatnonzero(outcome.included)])
