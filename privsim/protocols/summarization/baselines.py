"""The two baselines of §4, computed centrally (no simulation): non-private greedy
(the curator broadcasts the exact hashed means, Kim et al. 2016) and uniform sampling
(p/K points from each owner)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from privsim.protocols.summarization.objective import bid_scores

__all__ = ["greedy", "uniform"]

F64 = npt.NDArray[np.float64]


def greedy(owners: Sequence[F64], validation: F64, seed: F64, size: int) -> list[tuple[int, int]]:
    """Algorithm 3 with exact means in place of h2 and the best bid always taken: the
    (owner, row) of each pick, in order. Inputs are h1 vectors; ``seed`` may be empty
    (Kim et al.'s greedy from the empty set, as the runs use: the non-private curator
    has no MWEM that needs a seed)."""
    g_tilde = validation.mean(0)
    total = seed.sum(0) if len(seed) else np.zeros(validation.shape[1])
    n = seed.shape[0]
    stacked = np.concatenate(owners)
    norms = np.einsum("ij,ij->i", stacked, stacked)
    owner_of = np.concatenate([np.full(len(o), k) for k, o in enumerate(owners)])
    row_of = np.concatenate([np.arange(len(o)) for o in owners])
    used = np.zeros(stacked.shape[0], dtype=bool)
    picks: list[tuple[int, int]] = []
    for _ in range(min(size, stacked.shape[0])):
        scores = bid_scores(stacked, norms, g_tilde, total / max(n, 1), n)
        scores[used] = -np.inf
        j = int(np.argmax(scores))
        used[j] = True
        picks.append((int(owner_of[j]), int(row_of[j])))
        total = total + stacked[j]
        n += 1
    return picks


def uniform(sizes: Sequence[int], size: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """p/K points drawn without replacement from each owner (the remainder spread over
    the first owners; an owner with too few points gives all it has)."""
    k = len(sizes)
    quota = [size // k + (1 if i < size % k else 0) for i in range(k)]
    picks: list[tuple[int, int]] = []
    for owner, (n, want) in enumerate(zip(sizes, quota, strict=True)):
        rows = rng.choice(n, size=min(want, n), replace=False)
        picks.extend((owner, int(r)) for r in np.sort(rows))
    return picks
