"""SecAgg's trust rule (:class:`ServerThreshold`): broken only when the coalition holds
the server and, for some client, at least t of the holders of that client's shares
(every client on the complete graph; the closed neighbourhood on SecAgg+'s graph).

The coalitions below are chosen so that the client whose holders reach t is honest, or
no client's holders do: the cases where the rule and its reading "t holders of one
honest client's shares" agree.
"""

from __future__ import annotations

import itertools

import pytest

from privsim.kit.secagg.trust import ServerThreshold
from privsim.sim.ledger import TrustKind

CLIENTS = tuple(f"client-{i}" for i in range(6))
SERVER = "server"

# SecAgg+ on a ring of six: each client's shares are held by itself and its two neighbours.
RING = tuple(tuple(sorted({(i - 1) % 6, i, (i + 1) % 6})) for i in range(6))


def _c(*indices: int) -> set[str]:
    return {f"client-{i}" for i in indices}


def test_complete_graph_by_hand():
    trust = ServerThreshold.of(SERVER, CLIENTS, threshold=3)
    assert trust.kind is TrustKind.SERVER_THRESHOLD
    assert trust.parties == (SERVER, *CLIENTS)
    assert not trust.broken_by(set())
    assert not trust.broken_by({SERVER})  # the server alone
    assert not trust.broken_by(_c(0, 1, 2, 3, 4))  # clients without the server
    assert not trust.broken_by({SERVER} | _c(0, 4))  # t − 1 clients
    assert trust.broken_by({SERVER} | _c(0, 2, 4))  # t clients
    assert trust.broken_by({SERVER} | _c(0, 1, 2, 3))
    assert not trust.broken_by({"observer", "compute-0"})  # outsiders only
    assert not trust.broken_by({SERVER, "observer", "compute-0"} | _c(5))


@pytest.mark.parametrize("threshold", [1, 2, 3, 5])
def test_complete_graph_counts_colluding_clients_with_the_server(threshold):
    trust = ServerThreshold.of(SERVER, CLIENTS, threshold=threshold)
    for size in range(len(CLIENTS)):  # leave at least one client honest
        for clients in itertools.combinations(range(len(CLIENTS)), size):
            with_server = {SERVER, "observer"} | _c(*clients)
            assert trust.broken_by(with_server) == (size >= threshold)
            assert not trust.broken_by(_c(*clients))


def test_ring_by_hand():
    """t = 2 on the ring 0-1-2-3-4-5-0: the server with clients 0 and 2 holds two of
    the three holders {0, 1, 2} of honest client 1's shares."""
    trust = ServerThreshold.of(SERVER, CLIENTS, threshold=2, holders=RING)
    assert not trust.broken_by(set())
    assert not trust.broken_by({SERVER})
    assert not trust.broken_by({SERVER} | _c(3))  # one colluding holder anywhere
    assert not trust.broken_by(_c(0, 2, 4))  # no server
    assert trust.broken_by({SERVER} | _c(0, 2))  # holders 0 and 2 of client 1
    assert trust.broken_by({SERVER} | _c(1, 3))  # holders 1 and 3 of client 2
    assert trust.broken_by({SERVER} | _c(0, 2, 4))  # of clients 1, 3 and 5
    assert not trust.broken_by({SERVER, "observer"})  # outsiders only


def test_ring_with_three_holders_needed():
    trust = ServerThreshold.of(SERVER, CLIENTS, threshold=3, holders=RING)
    # two of every client's holders at most: clients 0, 2 and 4 never share a neighbourhood
    assert not trust.broken_by({SERVER} | _c(0, 2, 4))
    # t = 3 means every holder of some client colludes, the client itself included: the
    # rule and the "honest client" reading differ there, so only the server-less case
    assert not trust.broken_by(_c(0, 1, 2))


def test_ring_against_the_rule_for_every_coalition_of_non_adjacent_clients():
    """Coalitions with no two adjacent clients: a client's holders reach t = 2 only
    through its two neighbours, so that client is honest."""
    trust = ServerThreshold.of(SERVER, CLIENTS, threshold=2, holders=RING)
    for size in range(4):
        for clients in itertools.combinations(range(6), size):
            if any((i + 1) % 6 in clients for i in clients):
                continue
            bad = set(clients)
            exposed = any(len(bad & set(h)) >= 2 and i not in bad for i, h in enumerate(RING))
            assert trust.broken_by({SERVER} | _c(*clients)) == exposed
            assert not trust.broken_by(_c(*clients))
