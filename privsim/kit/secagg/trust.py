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
from dataclasses import dataclass

from privsim.sim.ledger import Trust, TrustKind

__all__ = ["ServerThreshold"]


@dataclass(frozen=True, slots=True)
class ServerThreshold(Trust):
    """Broken when the coalition holds ``server`` and, for some client, at least
    ``threshold`` of the holders of its shares (``holders[i]``: client indices;
    empty: every client holds every client's shares). ``parties`` lists the server and
    every client (the parties whose honesty the guarantee rests on): client i is
    ``parties[1 + i]``, read from its name ``{prefix}-{i}`` when it has that form (a
    whole population), else looked up (a round over a cohort of named clients)."""

    server: str = ""
    threshold: int = 1
    holders: tuple[tuple[int, ...], ...] = ()
    prefix: str = "client"

    def broken_by(self, coalition: Collection[str]) -> bool:
        if self.server not in coalition:
            return False
        colluding = self._indices(coalition)
        if not self.holders:
            return len(colluding) >= self.threshold
        return any(len(colluding.intersection(h)) >= self.threshold for h in self.holders)

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
        holders: tuple[tuple[int, ...], ...] = (),
    ) -> ServerThreshold:
        return cls(
            TrustKind.SERVER_THRESHOLD,
            (server, *clients),
            f"{server} not colluding with t = {threshold} or more holders of one client's "
            "shares (SecAgg threshold)",
            server=server,
            threshold=threshold,
            holders=holders,
        )
