"""Dropout isolation by an active SecAgg server: which survivor lists it sends in the
Unmasking round, and whether the shares they bring back open one client's masked input.

privsim simulates Bonawitz et al. (CCS 2017), Figure 4, *without* the ConsistencyCheck
round of the malicious variant: the server tells each client its own list of survivors
(SecAgg+: the survivors of the client's closed neighbourhood, Bell et al. 2020), no
client signs or sees another's list, and an honest client answers only a list that
names itself and at least t of the clients whose shares it holds (Figure 4, Round 4:
"assert |U3| ≥ t"); it then reveals b_v for the listed v and s_v^SK for the others,
never both for one v. What that threshold does and does not stop, for target u with
colluding clients C (those alive through MaskedInputCollection) and the server:

- ``"collusion"``: |C ∩ N(u)| ≥ t: the colluders hold t shares of b_u and of s_u^SK;
  no lie is needed (Theorem 6.3's bound is crossed).
- ``"isolate"`` (the attack of the malicious variant too): the server lists
  L = {u} ∪ C to u (and the colluders) and nothing to the other clients, so that they
  look dropped. u answers iff |{u} ∪ (C ∩ N(u))| ≥ t, i.e. |C ∩ N(u)| ≥ t − 1; its answer
  and the colluders' shares rebuild b_u (t shares) and, for each honest neighbour v of
  u in U2, s_v^SK from u's share and those of C ∩ N(v): |C ∩ N(v)| ≥ t − 1 for every
  such v. On SecAgg's complete graph both read |C| ≥ t − 1: the consistency check
  does not stop this one (the server learns a sum of at least t − |C| honest inputs,
  here one).
- ``"equivocate"`` (only without the consistency check): the honest holders of u's
  shares are split; u and a set B are told u survived (they reveal b_u), a set S is
  told u dropped (they reveal s_u^SK), every list otherwise honest. This needs
  |S| ≥ t − |C ∩ N(u)| clients of S whose honest list has t + 1 members (so that it
  still has t without u), and 1 + |B| + |C ∩ N(u)| ≥ t: with m the honest holders of
  u's shares alive in U3 (u included), m + 2·|C ∩ N(u)| ≥ 2t. On the complete graph
  with n live clients: n + |C| ≥ 2t and n ≥ t + 1 — the reason the malicious variant
  signs U3 and asks t > (n + |C|)/2 of the semi-honest protocol.

In every route the server opens Σ_{w ∈ L} y_w and reports U3 = L: b_w and the pair
masks of each w ∈ L with the clients outside L (from s_w^SK, known for the colluders
and rebuilt for u when equivocating, or from the rebuilt s_v^SK of the other side).
The colluders know their own inputs, so the sum is u's input x_u (its fixed-point
update plus its own integer noise share) to them. Answers that miss the deadline can
still leave a route short: equivocating, the server then releases the honest sum (every
client was asked, and each survivor's b_v came back); isolating, the round aborts (the
clients told nothing cannot be asked again). The server knows U2, U3, the graph, t and
its colluders, so it mounts a route only where the answers it asks for suffice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privsim.kit.secagg.graph import Graph

__all__ = ["ROUTES", "Isolation", "Route", "isolable", "route"]

I64 = npt.NDArray[np.int64]

#: The routes of :func:`route`, from the one needing the fewest lies.
ROUTES = ("collusion", "isolate", "equivocate")


@dataclass(frozen=True, slots=True, kw_only=True)
class Isolation:
    """What an isolating server knows: its ``target`` (a client index) and the
    ``colluders`` (client indices, sorted) that hand it their secrets and every share
    they hold. ``always``: mount the isolating lists even when no route opens the
    target (the honest clients then refuse them and the round aborts); otherwise the
    server runs the honest Unmasking in such a round. ``consistent``: the server sends
    every client the same list, as the malicious variant's ConsistencyCheck round
    would force (no ``"equivocate"``): what that round would and would not stop."""

    target: int
    colluders: tuple[int, ...] = ()
    always: bool = False
    consistent: bool = False

    def __post_init__(self) -> None:
        if self.target in self.colluders:
            raise ValueError(f"the target {self.target} is among the colluders")
        if list(self.colluders) != sorted(set(self.colluders)):
            raise ValueError("the colluders are sorted client indices without repeats")


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """How the server opens the target: ``kind`` (one of :data:`ROUTES`, or
    ``"refused"`` for lists mounted though no route works), ``opened`` the clients L
    whose masked inputs it sums (the target and the live colluders, sorted), and the
    list it sends each of ``recipients`` (``lists[i]`` to ``recipients[i]``)."""

    kind: str
    opened: I64
    recipients: I64
    lists: tuple[I64, ...]

    @property
    def keeps_round(self) -> bool:
        """Every live client gets a list (``collusion``, ``equivocate``): should the
        target not open, the server can still unmask the honest sum."""
        return self.kind in ("collusion", "equivocate")


def _closed(graph: Graph, u: int) -> I64:
    """u's closed neighbourhood: the holders of its shares, and the owners of those it holds."""
    return graph.holders(u)


def _honest_list(graph: Graph, u: int, alive3: npt.NDArray[np.bool_]) -> I64:
    """The list an honest server sends u: the survivors of its closed neighbourhood."""
    mine = _closed(graph, u)
    return mine[alive3[mine]]


@dataclass(frozen=True, slots=True)
class _Live:
    """What every target's route reads from one round's live sets, computed once: who is
    alive in U2 and U3, who colludes, the colluders summed (alive in U3) and those
    holding shares, each client's honest list size and its colluding holders."""

    graph: Graph
    alive2: npt.NDArray[np.bool_]
    alive3: npt.NDArray[np.bool_]
    colluding: npt.NDArray[np.bool_]
    live_c: npt.NDArray[np.bool_]
    holding_c: npt.NDArray[np.bool_]
    list_sizes: I64
    colluding_holders: I64

    @classmethod
    def of(
        cls, graph: Graph, u2: I64, u3: I64, colluders: tuple[int, ...], offline_shares: bool
    ) -> _Live:
        n = graph.n
        alive2 = np.zeros(n, dtype=bool)
        alive2[u2] = True
        alive3 = np.zeros(n, dtype=bool)
        alive3[u3] = True
        colluding = np.zeros(n, dtype=bool)
        colluding[list(colluders)] = True
        # the colluders holding shares: those alive in U3, or with ``offline_shares``
        # every one that received its shares in ShareKeys (U2): a colluder that dropped
        # later still hands the server what it holds, though not in the protocol's messages
        holding_c = colluding & (alive2 if offline_shares else alive3)
        sizes = np.array([int(alive3[_closed(graph, h)].sum()) for h in range(n)], np.int64)
        held = np.array([int(holding_c[graph.neighbours(v)].sum()) for v in range(n)], np.int64)
        return cls(graph, alive2, alive3, colluding, colluding & alive3, holding_c, sizes, held)


def route(
    graph: Graph,
    threshold: int,
    u2: I64,
    u3: I64,
    isolation: Isolation,
    *,
    offline_shares: bool = False,
) -> Route | None:
    """The first of :data:`ROUTES` that opens the target after MaskedInputCollection
    (live sets ``u2``, ``u3``), or None (the target is not in U3, or no route works;
    with ``isolation.always`` the isolating lists then, kind ``"refused"``).
    ``offline_shares``: count the shares of colluders that dropped after ShareKeys (what
    the coalition could open; the simulated server's own route uses live ones only)."""
    live = _Live.of(graph, u2, u3, isolation.colluders, offline_shares)
    return _route(live, threshold, isolation, build=True)


def _route(live: _Live, t: int, isolation: Isolation, *, build: bool) -> Route | None:
    """:func:`route` on the round's :class:`_Live` state; ``build``: the lists (else the
    route's kind and opened set only, for :func:`isolable`)."""
    graph, u = live.graph, isolation.target
    if not live.alive3[u]:
        return None
    n = graph.n
    opened = np.flatnonzero(live.live_c | (np.arange(n) == u)).astype(np.int64)
    near = graph.neighbours(u)
    c_u = int(live.holding_c[near].sum())  # colluding holders of u's shares
    honest_live = live.alive3 & ~live.colluding
    none = np.zeros(0, dtype=np.int64)

    def lists_honest(told_dropped: set[int]) -> Route:
        kind = "collusion" if not told_dropped else "equivocate"
        if not build:
            return Route(kind=kind, opened=opened, recipients=none, lists=())
        everyone = np.flatnonzero(live.alive3).astype(np.int64)
        lists = []
        for h in everyone.tolist():  # the colluders too: they answer the honest sum
            mine = _honest_list(graph, h, live.alive3)
            lists.append(mine[mine != u] if h in told_dropped else mine)
        return Route(kind=kind, opened=opened, recipients=everyone, lists=tuple(lists))

    if c_u >= t:
        return lists_honest(set())

    def isolating(kind: str) -> Route:
        # u and the live colluders are told L (each its own neighbourhood's part);
        # the honest others are told nothing: they look dropped
        if not build:
            return Route(kind=kind, opened=opened, recipients=none, lists=())
        lists = tuple(opened[np.isin(opened, _closed(graph, w))] for w in opened.tolist())
        return Route(kind=kind, opened=opened, recipients=opened, lists=lists)

    if 1 + c_u >= t:
        neighbours_honest = near[live.alive2[near] & ~live.colluding[near]]
        if bool(np.all(1 + live.colluding_holders[neighbours_honest] >= t)):
            return isolating("isolate")
    holders = near[honest_live[near]]  # honest holders of u's shares alive in U3, u aside
    eligible = holders[live.list_sizes[holders] >= t + 1].tolist()
    need_s, need_b = t - c_u, t - 1 - c_u  # S's shares of s_u^SK; B's of b_u beside u's
    spare = holders.size - need_s - need_b
    if not isolation.consistent and len(eligible) >= need_s and spare >= 0:
        # the spare holders split between the two sides, so that a straggler or two
        # on either side does not leave it short of t
        return lists_honest(set(eligible[: min(len(eligible), need_s + (spare + 1) // 2)]))
    return isolating("refused") if isolation.always else None


def isolable(graph: Graph, threshold: int, u2: I64, u3: I64, colluders: tuple[int, ...]) -> I64:
    """The honest clients of U3 an active server with ``colluders`` could open alone
    after MaskedInputCollection (any route of :func:`route`, counting the shares of
    colluders that dropped after ShareKeys: the coalition holds them), sorted: whoever
    it targets, these are the clients a round exposes to it. The round's live state is
    read once for every target, and no route's lists are built."""
    colluding = set(colluders)
    live = _Live.of(graph, u2, u3, colluders, offline_shares=True)
    found = [
        u
        for u in np.asarray(u3).tolist()
        if u not in colluding
        and _route(live, threshold, Isolation(target=u, colluders=colluders), build=False)
        is not None
    ]
    return np.array(found, dtype=np.int64)
