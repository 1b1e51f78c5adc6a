"""What the server and its colluding clients can unmask after a SecAgg round.

The coalition learns client u's input x_u when it holds y_u (the server is in it and u
is in U3) and can strip every mask from it:
- the self mask PRG(b_u): the server reconstructs b_u of every survivor in Unmasking
  anyway; a coalition with t holders of u's shares can too;
- each pairwise mask PRG(s_{u,v}), v a neighbour of u in U2: known if v colludes,
  if v dropped after ShareKeys (the server reconstructs s_v^SK), or if the coalition
  has t holders of u's or of v's shares (it reconstructs s_u^SK or s_v^SK).
Clients in the coalition are not counted (it knows their inputs anyway).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import numpy.typing as npt

from privsim.kit.secagg.graph import Graph

__all__ = ["exposure"]


def exposure(
    graph: Graph,
    threshold: int,
    survivors: tuple[npt.NDArray[np.int64], ...],
    colluding: Collection[int],
    server_colludes: bool,
) -> dict[str, int]:
    """``inputs_exposed``: honest survivors whose x_u the coalition recovers;
    ``keys_exposed``: honest clients whose s_u^SK it can reconstruct from colluding
    holders alone; ``threshold_broken``: 1 if some honest client has t colluding holders."""
    n = graph.n
    bad = np.zeros(n, dtype=bool)
    bad[list(colluding)] = True
    if graph.complete:
        enough = np.full(n, int(bad.sum()) >= threshold)
    else:
        counts = bad[graph.matrix].sum(axis=1) + bad
        enough = counts >= threshold
    keys_exposed = int((enough & ~bad).sum())
    out = {"inputs_exposed": 0, "keys_exposed": keys_exposed, "threshold_broken": 0}
    out["threshold_broken"] = int(bool((enough & ~bad).any()))
    if not server_colludes or len(survivors) < 3:
        return out
    u2, u3 = survivors[1], survivors[2]
    in2 = np.zeros(n, dtype=bool)
    in2[u2] = True
    in3 = np.zeros(n, dtype=bool)
    in3[u3] = True
    known_key = bad | enough | (in2 & ~in3)  # s_v^SK known to the coalition
    exposed = 0
    for u in u3.tolist():
        if bad[u]:
            continue
        if enough[u]:
            exposed += 1
            continue
        peers = graph.neighbours(u)
        peers = peers[in2[peers]]
        if bool(known_key[peers].all()):
            exposed += 1
    out["inputs_exposed"] = exposed
    return out
