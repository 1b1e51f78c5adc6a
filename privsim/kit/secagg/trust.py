"""SecAgg's trust assumption as a ledger :class:`~privsim.sim.ledger.Trust`: the server
does not collude with t or more holders of one honest client's shares.

With t holders the coalition reconstructs both b_u and s_u^SK of that client and
unmasks y_u (Bonawitz et al. 2017, Theorem 6.3: security holds against the server and
fewer than t clients); for SecAgg the holders are every client, for SecAgg+ the
client's closed neighbourhood (Bell et al. 2020). A coalition without the server never
sees y_u and learns nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from privsim.sim.ledger import Trust, TrustKind

__all__ = ["ServerThreshold"]

_NO_HOLDERS = np.zeros((0, 0), dtype=np.int64)
_NO_HOLDERS.flags.writeable = False


@dataclass(frozen=True, slots=True, eq=False)
class ServerThreshold(Trust):
    """Broken when the coalition holds ``server`` and, for some client, at least
    ``threshold`` of the holders of its shares (``holders`` row i: client i's holders,
    client indices, a read-only array; empty: every client holds every client's
    shares). Equal to another when every field is (the holders compared as arrays). ``parties`` lists the server and
    every client (the parties whose honesty the guarantee rests on): client i is
    ``parties[1 + i]``, read from its name ``{prefix}-{i}`` when it has that form (a
    whole population), else looked up (a round over a cohort of named clients)."""

    server: str = ""
    threshold: int = 1
    holders: npt.NDArray[np.int64] = field(default_factory=lambda: _NO_HOLDERS)
    prefix: str = "client"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerThreshold):
            return NotImplemented
        return (
            (self.kind, self.parties, self.description, self.count)
            == (other.kind, other.parties, other.description, other.count)
            and (self.server, self.threshold, self.prefix)
            == (other.server, other.threshold, other.prefix)
            and np.array_equal(self.holders, other.holders)
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.parties, self.server, self.threshold, self.holders.shape))

    def broken_by(self, coalition: Collection[str]) -> bool:
        if self.server not in coalition:
            return False
        colluding = self._indices(coalition)
        if not self.holders.size:
            return len(colluding) >= self.threshold
        if len(colluding) < self.threshold:
            return False
        members = np.zeros(len(self.parties) - 1, dtype=bool)
        members[list(colluding)] = True
        return bool((members[self.holders].sum(axis=1) >= self.threshold).any())

    def _indices(self, coalition: Collection[str]) -> set[int]:
        """The client indices of the coalition's clients."""
        clients, head = self.parties[1:], self.prefix + "-"
        found: set[int] = set()
        others: list[str] = []
        for p in coalition:
            number = p[len(head) :] if p.startswith(head) else ""
            i = int(number) if number.isdecimal() else -1
            if 0 <= i < len(clients) and clients[i] == p:
                found.add(i)
            elif p != self.server:
                others.append(p)
        if others:  # names that are not their own position's: look them up
            index = {c: i for i, c in enumerate(clients)}
            found.update(index[p] for p in others if p in index)
        return found

    @classmethod
    def of(
        cls,
        server: str,
        clients: tuple[str, ...],
        threshold: int,
        holders: npt.ArrayLike = (),
    ) -> ServerThreshold:
        # a read-only view, not a copy (N·(k+1) words: 0.3 GB at 10^6 clients): the
        # caller's array (a fresh holder matrix) is the trust's from here on
        rows = np.asarray(holders, dtype=np.int64).view()
        if rows.size == 0:
            rows = _NO_HOLDERS
        rows.flags.writeable = False
        return cls(
            TrustKind.SERVER_THRESHOLD,
            (server, *clients),
            f"{server} not colluding with t = {threshold} or more holders of one client's "
            "shares (SecAgg threshold)",
            server=server,
            threshold=threshold,
            holders=rows,
        )
