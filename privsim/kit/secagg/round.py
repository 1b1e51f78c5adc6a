"""One SecAgg or SecAgg+ round as a sub-protocol other protocols call (Bonawitz et al.
2017, Figure 4, honest-but-curious; Bell et al. 2020 on a random Harary graph).

A protocol that sums through SecAgg chooses (k, t) (:func:`choose_parameters`), plans
the round for its clients and server (:func:`plan`: the graph, the modulus 2^b, the
fixed-point scale 2^f, the integer noise), charges the release on its ledger before
anything runs (:func:`charge`), launches the round's parties on a world with each
client's input row (:func:`launch`, a context manager that stops the round's worker
processes when it exits), agrees the channels of :func:`channel_pairs` once every party
is on the world (:func:`privsim.kit.world.agree_channels`), runs the world, reads the
server's outcome
(:func:`outcome_of`, :func:`included_clients`) and settles the release
(:func:`settle`). The event trusts the server not to collude with t holders of one
client's shares (:class:`~privsim.kit.secagg.trust.ServerThreshold`), and its noise
comes in shares from the clients, of which only the honest included ones protect anyone.

Randomness: the graph is drawn from the plan's ``streams`` and the clients' key
material and Shamir coefficients from the world's, under the plan's ``label``
(``("secagg",)`` by default; give each round of a run its own); each client draws its
noise share from its own ``noise`` generator (:meth:`~privsim.sim.agent.Agent.rng`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from types import TracebackType

import numpy as np

from privsim.kit.secagg import behaviours as roles
from privsim.kit.secagg import population
from privsim.kit.secagg.graph import Graph, Parameters, choose_parameters, harary
from privsim.kit.secagg.inputs import Rows, client_inputs, row_source
from privsim.kit.secagg.isolation import Isolation
from privsim.kit.secagg.keybook import SECRET_WORDS, KeyBook, share_book
from privsim.kit.secagg.noise import Noise
from privsim.kit.secagg.outcome import AbortReason, Outcome
from privsim.kit.secagg.pool import Executor, executor, workers
from privsim.kit.secagg.trust import ServerThreshold
from privsim.sim.agent import Agent
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.streams import Streams
from privsim.sim.world import World

__all__ = [
    "MIN_AGREEMENTS_FOR_PROCESSES",
    "NON_PRIVATE",
    "Isolation",
    "Launched",
    "Noise",
    "Outcome",
    "Parameters",
    "RoundPlan",
    "channel_pairs",
    "charge",
    "choose_parameters",
    "included_clients",
    "isolation_of",
    "launch",
    "outcome_of",
    "plan",
    "round_processes",
    "settle",
    "trust",
]

#: What :func:`charge` records for a round without noise.
NON_PRIVATE = "no noise: the exact sum of the survivors' inputs is released"


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundPlan:
    """The public parameters of one round: its ``clients`` (client i is ``clients[i]``
    in the graph, the outcome and the trust) and ``server``, (k, t) in ``params``, the
    communication ``graph``, vectors of ``dimension`` summed mod 2^``bits`` and decoded
    with ``fraction_bits`` (the released sum is the signed sum / 2^f), the seconds the
    server waits for each of the four rounds' messages, the clients' integer ``noise``
    (None: the exact sum) and the stream ``label`` of the round's key material."""

    clients: tuple[str, ...]
    server: str
    params: Parameters
    graph: Graph
    dimension: int
    bits: int
    fraction_bits: int
    round_timeout: float
    noise: Noise | None
    label: tuple[str, ...]

    @property
    def threshold(self) -> int:
        """t, the shares that rebuild a secret."""
        return self.params.threshold


def plan(
    clients: Sequence[str],
    server: str,
    *,
    params: Parameters,
    dimension: int,
    bits: int,
    streams: Streams,
    fraction_bits: int = 0,
    noise: Noise | None = None,
    round_timeout: float = 1.0,
    label: tuple[str, ...] = ("secagg",),
) -> RoundPlan:
    """A round of ``clients`` and ``server`` with (k, t) from ``params``
    (:func:`choose_parameters`; k = n − 1 is SecAgg's complete graph) on the Harary
    graph drawn from ``streams`` under ``label``; sums of vectors of ``dimension`` mod
    2^``bits``. ``noise``: each client's integer noise share (its ``modulus`` is the
    caller's to check against ``bits``)."""
    clients = tuple(clients)
    n = len(clients)
    if len(set(clients)) != n or server in clients:
        raise ValueError("the clients and the server need distinct party ids")
    if n < 2:
        raise ValueError(f"a SecAgg round needs at least 2 clients, got {n}")
    if dimension < 1 or not 1 <= bits <= 64 or fraction_bits < 0:
        raise ValueError(
            f"need dimension >= 1, 1 <= bits <= 64 and fraction_bits >= 0, got "
            f"{dimension}, {bits}, {fraction_bits}"
        )
    if not 1 <= params.threshold <= params.degree + 1:
        raise ValueError(
            f"t = {params.threshold} must be in [1, k + 1 = {params.degree + 1}] (the "
            "holders of a client's shares)"
        )
    if not round_timeout > 0:
        raise ValueError(f"round_timeout must be positive, got {round_timeout}")
    graph = harary(n, params.degree, streams.generator(*label, "graph"))
    return RoundPlan(
        clients=clients,
        server=server,
        params=params,
        graph=graph,
        dimension=dimension,
        bits=bits,
        fraction_bits=fraction_bits,
        round_timeout=round_timeout,
        noise=noise,
        label=label,
    )


#: Key agreements (pairs × 2 kinds) from which a round uses worker processes: about a
#: second of work on one core, against a fraction of a second to start them.
MIN_AGREEMENTS_FOR_PROCESSES = 20_000


def round_processes(graph: Graph, processes: int | None = None) -> int:
    """Worker processes for the round's bulk cryptography: ``processes`` if given, else
    :func:`~privsim.kit.secagg.pool.workers` for rounds of at least
    :data:`MIN_AGREEMENTS_FOR_PROCESSES` agreements, else 1 (all in this process)."""
    if processes is not None:
        return max(1, processes)
    if graph.n * graph.degree < MIN_AGREEMENTS_FOR_PROCESSES:  # 2 kinds × n·k/2 pairs
        return 1
    return workers()


def channel_pairs(*plans: RoundPlan) -> list[tuple[str, str]]:
    """Who talks to whom in these rounds: every client to its server (the server relays
    the rest)."""
    return [(c, plan.server) for plan in plans for c in plan.clients]


class Launched:
    """A launched round: its ``server`` agent (whose result is the :class:`Outcome`),
    its key book ``keys`` and the worker processes of its bulk cryptography, which
    :meth:`close` stops (leaving the ``with`` block closes it, at once if the block
    raised)."""

    def __init__(self, plan: RoundPlan, server: Agent, keys: KeyBook, bulk: Executor) -> None:
        self.plan, self.server, self.keys = plan, server, keys
        self._bulk = bulk

    def close(self, *, abort: bool = False) -> None:
        """Stop the round's worker processes (``abort``: without waiting for their work)."""
        self._bulk.close(abort=abort)

    def __enter__(self) -> Launched:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close(abort=kind is not None)


def launch(
    world: World,
    plan: RoundPlan,
    inputs: Rows,
    *,
    processes: int | None = None,
    batched: bool = False,
    isolation: Isolation | None = None,
) -> Launched:
    """Add and start the round's clients (role ``client``) and server (role ``server``)
    on ``world``, each client summing its row of ``inputs``
    (:func:`~privsim.kit.secagg.inputs.client_inputs`: real rows in fixed point with the
    plan's ``fraction_bits``, integer rows as they are). The caller agrees the
    channels (:func:`channel_pairs`) once every party of the world is added. The key
    book computes every client's keys, agreements, sealed shares and masks while the
    world runs, on ``processes`` workers (default :func:`round_processes`; the result is
    the same whatever their number): run the world inside ``with launch(...) as
    launched:`` so that they stop with it.

    ``batched``: the clients are a population without processes, driven by the server
    (:mod:`~privsim.kit.secagg.population`: the same messages, times and release, for
    rounds of 10^5 clients and more; not with sealed channels or a coalition among the
    round's parties, whose views it does not keep).

    ``isolation``: the server is active and isolates a client in the Unmasking round
    (:mod:`~privsim.kit.secagg.isolation`, :func:`isolation_of`; not batched)."""
    if batched and isolation is not None:
        raise ValueError("a batched SecAgg round has no isolating server: run it per client")
    if isolation is not None and not 0 <= isolation.target < len(plan.clients):
        raise ValueError(f"the isolated client {isolation.target} is not one of the round's")
    if batched and world.bus.encrypt:
        raise ValueError(
            "a batched SecAgg round does not seal its messages one by one: use "
            "network.encryption = 'sized' (the same sizes and times) or 'none'"
        )
    n, graph = len(plan.clients), plan.graph
    streams = world.streams
    secrets = streams.keystream(*plan.label, "client-secrets").words(np.arange(n), 0, SECRET_WORDS)
    book = share_book(secrets, graph, plan.threshold, streams.keystream(*plan.label, "shamir"))
    rows = client_inputs(
        inputs,
        clients=n,
        dimension=plan.dimension,
        bits=plan.bits,
        fraction_bits=plan.fraction_bits,
        noise=plan.noise,
    )
    bulk = executor(round_processes(graph, processes))
    try:  # the workers stop at once if the launch fails
        keys = KeyBook(  # a batched round seals and masks shard by shard instead
            secrets,
            graph,
            dimension=plan.dimension,
            bits=plan.bits,
            executor=bulk,
            shares=None if batched else book,
            masks=False if batched else None,
        )
        behaviour_plan = roles.SecAggPlan(
            clients=plan.clients,
            server=plan.server,
            graph=graph,
            threshold=plan.threshold,
            dimension=plan.dimension,
            bits=plan.bits,
            fraction_bits=plan.fraction_bits,
            round_timeout=plan.round_timeout,
            keys=keys,
            book=book,
            inputs=rows,
            first=len(world.parties_by_role.get("client", ())),
            isolation=isolation,
        )
        added = world.add_parties("client", plan.clients)
        server = world.add_party(plan.server, "server")
        if batched:
            shards = population.InputShards(
                row_source(inputs, n, plan.dimension), plan.noise, streams.root
            )
            world.start(server, population.server_population(server, behaviour_plan, shards))
        else:
            for agent in added:
                world.start(agent, roles.client(agent, behaviour_plan))
            world.start(server, roles.server(server, behaviour_plan))
    except BaseException:
        bulk.close(abort=True)
        raise
    return Launched(plan, server, keys, bulk)


def isolation_of(
    plan: RoundPlan, target: str, coalition: Collection[str], *, always: bool = False
) -> Isolation | None:
    """The isolation of client ``target`` by the plan's server colluding with the
    round's clients in ``coalition`` (None if the target is not in the round or the
    server does not collude)."""
    if target not in plan.clients or plan.server not in coalition:
        return None
    colluders = tuple(i for i, c in enumerate(plan.clients) if c in coalition and c != target)
    return Isolation(target=plan.clients.index(target), colluders=colluders, always=always)


def outcome_of(launched: Launched) -> Outcome:
    """The server's outcome (a :data:`~AbortReason.SERVER_CRASHED` abort if it crashed
    or never finished): the released sum over U3 decoded, the live sets, the reason of
    an abort."""
    outcome = launched.server.result
    if isinstance(outcome, Outcome):
        return outcome
    return Outcome(released=None, abort=AbortReason.SERVER_CRASHED, detail="the server crashed")


def included_clients(plan: RoundPlan, outcome: Outcome) -> tuple[str, ...] | None:
    """The clients whose inputs are in the released sum, U3 (None on an abort)."""
    if not outcome.ok or outcome.included is None:
        return None
    return tuple(plan.clients[i] for i in outcome.included.tolist())


def trust(plan: RoundPlan) -> ServerThreshold:
    """The round's trust: the server does not collude with t holders of one client's
    shares (every client on SecAgg's complete graph, the closed neighbourhood on
    SecAgg+'s)."""
    graph = plan.graph
    holders = () if graph.complete else graph.holder_matrix()
    return ServerThreshold.of(plan.server, plan.clients, plan.threshold, holders)


def charge(
    ledger: PrivacyLedger, label: str, plan: RoundPlan, *, non_private: str = NON_PRIVATE
) -> None:
    """Charge the round's release (before it runs: over budget, the ledger refuses it).
    Without noise it is non-private (``non_private`` says why); with noise, the
    accountant's (ε, δ) as its equivalent Gaussian event under :func:`trust`, the ledger
    re-evaluating the papers' bound at the H − 1 honest shares that reach the sum (the
    target's own uncredited): H = N − T gives this event, fewer a finite, larger ε."""
    noise = plan.noise
    if noise is None:
        ledger.non_private(label, non_private)
        return
    ledger.charge(
        label,
        noise.account.event,
        trust=trust(plan),
        noise=noise.account.noise_shares(plan.clients),
    )


def settle(ledger: PrivacyLedger, label: str, plan: RoundPlan, outcome: Outcome) -> None:
    """Settle a noisy release with the noise shares of the included clients, or withhold
    it on an abort (a release without noise stays non-private either way)."""
    if plan.noise is None:
        return
    included = included_clients(plan, outcome)
    if included is None:
        ledger.withhold(label)
    else:
        ledger.settle(label, contributors=list(included))
