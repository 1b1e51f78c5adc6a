"""One chunk of a batched share round, as a pure function of the clients' streams.

A :class:`ShareJob` holds what computing the nodes' sums over a set of clients needs —
the clients' inputs (:class:`~privsim.kit.securesum.inputs.ClientInputs`), the parties'
names and the messages' headers — and nothing of the world, so that it can be pickled to
a worker process (:mod:`~privsim.kit.securesum.pool`). With encryption, the keys and
nonce counters of every client–node pair come as :class:`ChannelMaterial`, reserved by
the round in the world's channels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from privsim.kit import shamir
from privsim.kit.securesum import threshold as shamir_dca
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.securesum.seeded import add_expansions
from privsim.sim.channels import seal_and_open_batch

__all__ = ["CHUNK_BYTES", "ChannelMaterial", "Sealer", "ShareJob"]

#: Target bytes of shares per chunk of clients (all M nodes' shares together).
CHUNK_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class ShareJob:
    """Everything computing a chunk of clients' share sums needs, and nothing of the
    world: picklable, so that chunks can run on worker processes
    (:mod:`~privsim.kit.securesum.pool`)."""

    inputs: ClientInputs
    #: The clients' names, read only to seal (a :class:`~privsim.sim.names.PartyNames`
    #: pickles as its pattern, so a shard's task does not carry the population's names).
    clients: Sequence[str]
    nodes: tuple[str, ...]
    share_mode: str
    dimension: int
    header: bytes
    seed_header: bytes

    def sums(
        self,
        clients: npt.NDArray[np.int64],
        channel: ChannelMaterial | None,
        seal: Sealer | None = None,
    ) -> npt.NDArray[np.uint64]:
        """Σ over ``clients`` of each node's share, (M, d), in chunks of CHUNK_BYTES; with
        ``channel`` (or ``seal``) every share (seed) is sealed and opened under its pair's
        reserved key and nonce, and the node adds what it opened."""
        m, d = len(self.nodes), self.dimension
        step = max(1, CHUNK_BYTES // (8 * m * d))
        total = np.zeros((m, d), dtype=np.uint64)
        for lo in range(0, clients.size, step):
            rows = slice(lo, min(clients.size, lo + step))
            total = self.add(total, self.chunk_sums(clients[rows], channel, rows, seal))
        return total

    def add(self, a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """Partial sums added in Z_{2^64}, or in F_p with Shamir shares."""
        if self.share_mode == "shamir":
            return shamir.add(a, b)
        a += b
        return a

    def chunk_sums(
        self,
        clients: npt.NDArray[np.int64],
        channel: ChannelMaterial | None,
        rows: slice,
        seal: Sealer | None = None,
    ) -> npt.NDArray[np.uint64]:
        """One chunk's node sums. ``channel``'s arrays are indexed by ``rows``; ``seal``
        (in-process only) replaces them with a channel of the world."""
        if seal is None and channel is not None:
            seal = channel.sealer(rows)
        names = [self.clients[i] for i in clients.tolist()] if seal is not None else []
        if self.share_mode == "seeded":
            return self._seeded_chunk_sums(clients, names, seal)
        if seal is None and self.share_mode == "full" and type(self.inputs) is ClientInputs:
            return self.inputs.node_sums(clients)  # nothing to seal: sums, not shares
        chunk = self.inputs.messages(clients)
        if seal is not None:
            if chunk.seeds is not None:
                for k in range(1, len(self.nodes)):
                    seal(names, k, self.seed_header, chunk.seeds[:, k - 1])
                # Node k >= 1 adds the expansion of the seed it opened (the same bytes:
                # AES-GCM authenticated them), so re-expanding would change nothing.
                seal(names, 0, self.header, chunk.shares[:, 0])
            else:
                for k in range(len(self.nodes)):
                    seal(names, k, self.header, chunk.shares[:, k])
        if self.share_mode == "shamir":
            return np.stack(
                [
                    shamir_dca.node_total(chunk.shares[:, k], self.dimension)
                    for k in range(chunk.shares.shape[1])
                ]
            )
        return np.asarray(chunk.shares.sum(axis=0, dtype=np.uint64))

    def _seeded_chunk_sums(
        self, clients: npt.NDArray[np.int64], names: list[str], seal: Sealer | None
    ) -> npt.NDArray[np.uint64]:
        """Seed-compressed shares: node k ≥ 1 adds the expansions of the seeds it opened,
        node 0 the corrections it opened. A node's expansion of an opened seed is the
        client's own (AES-GCM authenticated the same 32 bytes), so each is made once."""
        _, _, x = self.inputs.encoded(clients)
        seeds = self.inputs.share_seeds(clients)
        sums = np.zeros((len(self.nodes), self.dimension), dtype=np.uint64)
        corrections = add_expansions(x, seeds, sums[1:])
        if seal is not None:
            for k in range(1, len(self.nodes)):
                seal(names, k, self.seed_header, seeds[:, k - 1])
            seal(names, 0, self.header, corrections)
        np.sum(corrections, axis=0, dtype=np.uint64, out=sums[0])
        return sums


class Sealer(Protocol):
    """Seal and open ``rows[r]`` from ``names[r]`` to node ``k`` with ``header``, writing
    the opened values back."""

    def __call__(
        self, names: list[str], k: int, header: bytes, rows: npt.NDArray[np.uint64]
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class ChannelMaterial:
    """Each node's reserved keys ``(n, 32)`` and nonce counters ``(n,)`` for the agreed
    clients, in the order of the clients."""

    nodes: tuple[str, ...]
    keys: tuple[npt.NDArray[np.uint8], ...]
    counters: tuple[npt.NDArray[np.int64], ...]

    def sealer(self, part: slice) -> Sealer:
        """Seal and open the clients of ``part`` (positions in the material)."""

        def seal(names: list[str], k: int, header: bytes, rows: npt.NDArray[np.uint64]) -> None:
            seal_and_open_batch(
                names, self.nodes[k], header, rows, self.keys[k][part], self.counters[k][part]
            )

        return seal

    def part(self, rows: slice) -> ChannelMaterial:
        """The material of ``rows`` only (what one worker task needs)."""
        return ChannelMaterial(
            self.nodes,
            tuple(k[rows] for k in self.keys),
            tuple(c[rows] for c in self.counters),
        )
