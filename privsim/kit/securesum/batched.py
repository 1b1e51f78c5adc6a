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
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np
import numpy.typing as npt

from privsim.kit import shamir
from privsim.kit.securesum import threshold as shamir_dca
from privsim.kit.securesum.behaviours import DcaPlan, agree, claimed_received
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.securesum.messages import SeedShare, Share
from privsim.kit.securesum.seeded import SEED_WORDS
from privsim.sim.agent import Agent, Behaviour
from privsim.sim.coalition import ViewedMessage
from privsim.sim.messages import encode, wire_size
from privsim.sim.world import World

__all__ = [
    "NodeSums",
    "ShareRound",
    "client_population",
    "compute_node_batched",
    "share_kinds",
    "share_sizes",
]

#: Target bytes of shares per chunk of clients (all M nodes' shares together).
CHUNK_BYTES = 8 << 20
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
        self.header = _share_header(plan.kinds.share, plan.dimension)
        self.seed_header = _seed_header(plan.kinds.seed_share)
        self._agreed: bytes | None = None
        self._sums: npt.NDArray[np.uint64] | None = None

    def node_sum(self, node: int, agreed: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]:
        """q_k = Σ_{i ∈ agreed} m_{i,k}. All live nodes ask with the same agreed set (the
        intersection of every node's received set), so one pass serves them all."""
        key = np.packbits(agreed).tobytes()
        if self._sums is None or self._agreed != key:
            self._sums = self._stream(np.flatnonzero(agreed))
            self._agreed = key
        return self._sums[node].copy()

    def _stream(self, clients: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        """Chunks of clients on worker threads (NumPy and the ciphers release the GIL);
        each returns its partial sums, added in Z_{2^64}, so the result is exact and
        independent of scheduling."""
        m, d = len(self.plan.nodes), self.plan.dimension
        sums = np.zeros((m, d), dtype=np.uint64)
        step = max(1, CHUNK_BYTES // (8 * m * d))
        chunks = [clients[lo : lo + step] for lo in range(0, clients.size, step)]
        if len(chunks) <= 1 or THREADS <= 1:
            for chunk in chunks:
                sums = self._add(sums, self._chunk_sums(chunk))
            return sums
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            for partial in pool.map(self._chunk_sums, chunks):
                sums = self._add(sums, partial)
        return sums

    def _add(self, a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """Partial sums added in Z_{2^64}, or in F_p with Shamir shares."""
        if self.plan.share_mode == "shamir":
            return shamir.add(a, b)
        a += b
        return a

    def _chunk_sums(self, clients: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
        chunk = self.inputs.messages(clients)
        if self.world.bus.encrypt:
            if chunk.seeds is not None:
                self._seeds_through_channels(chunk.clients, chunk.seeds)
                # Node k >= 1 adds the expansion of the seed it opened (the same bytes:
                # AES-GCM authenticated them), so re-expanding would change nothing.
                self._through_channels(chunk.clients, chunk.shares, nodes=1)
            else:
                self._through_channels(chunk.clients, chunk.shares)
        if self.plan.share_mode == "shamir":
            return np.stack(
                [
                    shamir_dca.node_total(chunk.shares[:, k], self.plan.dimension)
                    for k in range(chunk.shares.shape[1])
                ]
            )
        return np.asarray(chunk.shares.sum(axis=0, dtype=np.uint64))

    def _through_channels(
        self, clients: npt.NDArray[np.int64], shares: npt.NDArray[np.uint64], nodes: int = 0
    ) -> None:
        """Seal each share under its client->node key and open it as the node does; the
        node adds what it decrypted, so the opened values replace the shares. ``nodes``
        limits this to the first ``nodes`` nodes (0: all)."""
        names = [self.plan.clients[i] for i in clients.tolist()]
        for k, node in enumerate(self.plan.nodes[: nodes or None]):
            # Each row shares[i, k] is contiguous: seal from and open into it in place.
            self.world.channels.seal_and_open_rows(names, node, self.header, shares[:, k])

    def _seeds_through_channels(
        self, clients: npt.NDArray[np.int64], seeds: npt.NDArray[np.uint64]
    ) -> None:
        """Seal each seed s_{i,k} to node k ≥ 1 and open it as the node does."""
        names = [self.plan.clients[i] for i in clients.tolist()]
        for k, node in enumerate(self.plan.nodes[1:]):
            self.world.channels.seal_and_open_rows(names, node, self.seed_header, seeds[:, k])


class NodeSums(Protocol):
    """Where a batched compute node gets its sum over the agreed clients."""

    def node_sum(self, node: int, agreed: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]: ...


def client_population(
    world: World, plan: DcaPlan, inputs: ClientInputs, senders: npt.ArrayLike | None = None
) -> Behaviour:
    """Every running client (or only ``senders``, role indices) sends share k to node k,
    in node order, as one batch per node."""
    running = np.asarray(world.running("client") if senders is None else senders, dtype=np.int64)
    sizes = share_sizes(plan)
    kinds = share_kinds(plan)
    members = [world.agents[p] for p in world.coalition]
    sending = set(running.tolist())
    colluding = sorted(
        a.role_index for a in members if a.role == "client" and a.role_index in sending
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
    for node, kind, size in zip(plan.nodes, kinds, sizes, strict=True):
        world.bus.send_batch("client", running, node, kind, size)
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
