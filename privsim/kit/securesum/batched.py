"""DCA with batched delivery of the client shares, for large populations.

The client role runs as one population process that sends every running client's share
k to node k with :meth:`~privsim.sim.bus.MessageBus.send_batch` — the same queueing,
latency and loss, message for message, as N client processes would produce. A compute
node takes exactly the shares that arrived by its deadline with
:meth:`~privsim.sim.agent.Agent.receive_batch`, agrees with its peers as in the
per-message path, and asks the :class:`ShareRound` for its sum over the agreed set.

The share round streams clients in chunks: it computes each client's messages from its
deterministic streams (:class:`~privsim.kit.securesum.inputs.ClientInputs`), seals and
opens every share with the real pairwise AES-GCM channel when encryption is on, and adds
it into every node's accumulator. Memory stays at one chunk, whatever N and d; the sums
are exactly those of the per-message path (addition in Z_{2^64} is order-free).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Protocol

import numpy as np
import numpy.typing as npt

from privsim.kit.securesum import pool
from privsim.kit.securesum.behaviours import DcaPlan, agree, claimed_received
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.securesum.job import CHUNK_BYTES, ChannelMaterial, Sealer, ShareJob
from privsim.kit.securesum.messages import SeedShare, Share
from privsim.kit.securesum.seeded import SEED_WORDS
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.coalition import ViewedMessage
from privsim.sim.messages import encode, wire_size
from privsim.sim.names import PartyNames
from privsim.sim.world import World

__all__ = [
    "NodeSums",
    "ShareRound",
    "client_population",
    "compute_node_batched",
    "share_kinds",
    "share_sizes",
]

#: Worker threads for the share round (the machine's cores, at most 4).
THREADS = min(4, os.cpu_count() or 1)


def _share_header(kind: type[Share], dimension: int) -> bytes:
    """The encoding of a share message up to its values (same for every share)."""
    full = encode(kind(values=np.zeros(dimension, dtype=np.uint64)))
    return full[: len(full) - 8 * dimension]


def _seed_header(kind: type[SeedShare]) -> bytes:
    """The encoding of a seed message up to its 32 bytes of seed."""
    full = encode(kind(seed=bytes(8 * SEED_WORDS)))
    return full[: len(full) - 8 * SEED_WORDS]


def share_kinds(plan: DcaPlan) -> list[type[Share] | type[SeedShare]]:
    """The message kind each node receives from a client: a share, or with
    seed-compressed shares a seed for every node but the first."""
    seeded = plan.share_mode == "seeded"
    return [
        plan.kinds.seed_share if seeded and k >= 1 else plan.kinds.share
        for k in range(len(plan.nodes))
    ]


def share_sizes(plan: DcaPlan) -> list[int]:
    """Bytes on the wire of each node's message from one client (before encryption)."""
    share = wire_size(plan.kinds.share(values=np.zeros(plan.dimension, dtype=np.uint64)))
    seed = wire_size(plan.kinds.seed_share(seed=bytes(8 * SEED_WORDS)))
    return [seed if kind is plan.kinds.seed_share else share for kind in share_kinds(plan)]


class ShareRound:
    """The share phase's payloads, computed once, streamed into the nodes' sums."""

    def __init__(self, world: World, plan: DcaPlan, inputs: ClientInputs) -> None:
        self.world, self.plan, self.inputs = world, plan, inputs
        self.job = ShareJob(
            inputs=inputs,
            clients=plan.clients if isinstance(plan.clients, PartyNames) else tuple(plan.clients),
            nodes=tuple(plan.nodes),
            share_mode=plan.share_mode,
            dimension=plan.dimension,
            header=_share_header(plan.kinds.share, plan.dimension),
            seed_header=_seed_header(plan.kinds.seed_share),
        )
        self._agreed: bytes | None = None
        self._sums: npt.NDArray[np.uint64] | None = None
        self._ahead: tuple[bytes, Future[npt.NDArray[np.uint64]]] | None = None

    def prefetch(self, clients: npt.NDArray[np.int64]) -> None:
        """Start the sums over ``clients`` on a background thread, while the simulation
        goes on: the agreed set, when every share is on time and no node fails. A node
        that asks for another set waits for this pass, then gets its own. Not with
        sealed channels (their nonces are taken in the round's order)."""
        if self.world.bus.encrypt or self._ahead is not None:
            return
        agreed = np.zeros(len(self.plan.clients), dtype=bool)
        agreed[clients] = True
        background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="privsim-shares")
        self._ahead = (np.packbits(agreed).tobytes(), background.submit(self._stream, clients))
        background.shutdown(wait=False)

    def node_sum(self, node: int, agreed: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]:
        """q_k = Σ_{i ∈ agreed} m_{i,k}. All live nodes ask with the same agreed set (the
        intersection of every node's received set), so one pass serves them all."""
        key = np.packbits(agreed).tobytes()
        if self._ahead is not None:
            ahead_key, future = self._ahead
            self._ahead = None
            wait([future])  # never two passes at once
            if ahead_key == key:
                self._sums, self._agreed = future.result(), key
        if self._sums is None or self._agreed != key:
            self._sums = self._stream(np.flatnonzero(agreed))
            self._agreed = key
        return self._sums[node].copy()

    def _reserve(self, clients: npt.NDArray[np.int64]) -> ChannelMaterial | None:
        """Every agreed client's key and nonce to each node, taken from the channels in
        one step (as if each share were sealed and opened in turn); None if a node's
        channel cannot take the bulk path."""
        names = [self.plan.clients[i] for i in clients.tolist()]
        keys, counters = [], []
        for node in self.plan.nodes:
            reserved = self.world.channels.reserve_rows(names, node)
            if reserved is None:
                return None
            keys.append(reserved[0])
            counters.append(reserved[1])
        return ChannelMaterial(tuple(self.plan.nodes), tuple(keys), tuple(counters))

    def _stream(self, clients: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        """The nodes' sums over ``clients``: on worker processes when the round is large
        (:mod:`~privsim.kit.securesum.pool`), else in chunks on worker threads (NumPy and
        the large cipher calls release the GIL). Partial sums are added in Z_{2^64} (or
        F_p), so the result is exact and independent of how the work was split."""
        job = self.job
        channel: ChannelMaterial | None = None
        if self.world.bus.encrypt:
            channel = self._reserve(clients)
            if channel is None:  # one share at a time through the world's channels
                return job.sums(clients, None, self._channel_sealer())
        seconds = pool.round_seconds(
            clients.size,
            len(job.nodes),
            job.dimension,
            seeded=job.share_mode == "seeded",
            sealed=channel is not None,
        )
        if pool.use_processes(seconds, pool.serial_seconds(clients.size, job.dimension)):
            pooled = pool.node_sums(job, clients, channel)
            if pooled is not None:
                return pooled
        m, d = len(job.nodes), job.dimension
        step = max(1, CHUNK_BYTES // (8 * m * d))
        parts = [slice(lo, min(clients.size, lo + step)) for lo in range(0, clients.size, step)]

        def part_sums(rows: slice) -> npt.NDArray[np.uint64]:
            return job.chunk_sums(clients[rows], channel, rows)

        sums = np.zeros((m, d), dtype=np.uint64)
        if len(parts) <= 1 or THREADS <= 1:
            for rows in parts:
                sums = job.add(sums, part_sums(rows))
            return sums
        with ThreadPoolExecutor(max_workers=THREADS) as threads:
            for partial in threads.map(part_sums, parts):
                sums = job.add(sums, partial)
        return sums

    def _channel_sealer(self) -> Sealer:
        channels, nodes = self.world.channels, self.plan.nodes

        def seal(names: list[str], k: int, header: bytes, rows: npt.NDArray[np.uint64]) -> None:
            channels.seal_and_open_rows(names, nodes[k], header, rows)

        return seal


class NodeSums(Protocol):
    """Where a batched compute node gets its sum over the agreed clients."""

    def node_sum(self, node: int, agreed: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]: ...


def client_population(
    world: World,
    plan: DcaPlan,
    inputs: ClientInputs,
    senders: npt.ArrayLike | None = None,
    prefetch: Callable[[npt.NDArray[np.int64]], None] | None = None,
) -> Behaviour:
    """Every running client (or only ``senders``, role indices) sends share k to node k,
    in node order, as one batch per node. ``prefetch(senders)`` is called when every
    share will reach its node by the share deadline and no node is absent or crashes:
    the nodes will then agree on exactly these clients (unless agreement fails)."""
    running = np.asarray(world.running("client") if senders is None else senders, dtype=np.int64)
    sizes = share_sizes(plan)
    kinds = share_kinds(plan)
    members = [world.agents[p] for p in world.coalition]
    sending = np.zeros(len(plan.clients), dtype=bool)
    sending[running] = True
    colluding = sorted(
        a.role_index for a in members if a.role == "client" and bool(sending[a.role_index])
    )
    if colluding:  # the coalition's own clients: their state and messages are in its view
        mine = inputs.messages(colluding)
        for row, i in enumerate(colluding):
            agent = world.agents[plan.clients[i]]
            agent.remember(plan.kinds.state_key("input"), mine.z[row])
            agent.remember(plan.kinds.state_key("noise"), mine.eta[row])
            for k, node in enumerate(plan.nodes):
                seeded = mine.seeds is not None and k >= 1
                world.viewed.append(
                    ViewedMessage(
                        src=agent.id,
                        dst=node,
                        send_time=world.env.now,
                        message=plan.kinds.seed_share(seed=mine.seeds[row, k - 1].tobytes())
                        if seeded and mine.seeds is not None
                        else plan.kinds.share(values=mine.shares[row, k]),
                    )
                )
    flights = [
        world.bus.send_batch("client", running, node, kind, size)
        for node, kind, size in zip(plan.nodes, kinds, sizes, strict=True)
    ]
    deadline = float(world.env.now) + plan.share_timeout
    nodes_fail = any(n in world.faults.absent or n in world.faults.crash_times for n in plan.nodes)
    on_time = all(
        bool(f.deliverable.all()) and float(f.arrival.max(initial=-np.inf)) <= deadline
        for f in flights
    )
    if prefetch is not None and on_time and not nodes_fail:
        prefetch(running)
    # A client process would end here. That matters only for a client that crashes
    # later (it finished first): mark those; the others never have a behaviour to end.
    for party in world.faults.crash_times:
        agent = world.agents[party]
        if agent.role == "client" and agent.alive:
            agent.finished_at = float(world.env.now)
    yield from ()


def compute_node_batched(agent: Agent, plan: DcaPlan, shares: NodeSums) -> Behaviour:
    """The compute node of :func:`~privsim.kit.securesum.behaviours.compute_node`, taking
    its shares as one batch."""
    n = len(plan.clients)
    share_deadline = agent.now + plan.share_timeout
    kind = share_kinds(plan)[plan.nodes.index(agent.id)]
    arrived = yield from agent.receive_batch(kind, count=n, deadline=share_deadline)
    mine = np.zeros(n, dtype=bool)
    mine[arrived.senders] = True
    agreed = yield from agree(agent, plan, claimed_received(agent, plan, mine), share_deadline)
    if agreed is None:
        return
    total = shares.node_sum(plan.nodes.index(agent.id), agreed)
    agent.send(plan.aggregator, plan.kinds.node_sum(values=total, included=np.packbits(agreed)))
