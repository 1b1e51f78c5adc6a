"""PrivAuction (Sarpatwar et al. 2019, Algorithm 3, lines 11–17), the coins only.

Owners are ordered by decreasing bid; the i-th (1-based) is asked for its point
independently with probability e^{−ε_auc·(i−1)} — the top bidder always. The coins do not
depend on the bid values, only on the order. An owner whose current best point has been
its bid τ times without being asked is asked anyway (the τ rule, line 14). Expected asks
per epoch: Σ_i e^{−ε_auc(i−1)} ≤ 1/(1 − e^{−ε_auc}).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["ask_probabilities", "draw_asks", "expected_asks"]


def ask_probabilities(bidders: int, epsilon_auc: float) -> npt.NDArray[np.float64]:
    """P[ask the i-th bidder] = e^{−ε_auc(i−1)}, i = 1 … K."""
    return np.exp(-epsilon_auc * np.arange(bidders, dtype=np.float64))


def expected_asks(bidders: int, epsilon_auc: float) -> float:
    return float(ask_probabilities(bidders, epsilon_auc).sum())


def draw_asks(
    bids: npt.ArrayLike,
    epsilon_auc: float,
    rng: np.random.Generator,
    insist: npt.ArrayLike | None = None,
) -> npt.NDArray[np.bool_]:
    """Which bidders to ask, in the bids' own order: rank by decreasing bid (ties by
    position), flip the coins, and add every bidder flagged by the τ rule."""
    values = np.asarray(bids, dtype=np.float64)
    order = np.lexsort((np.arange(values.size), -values))
    coins = rng.random(values.size) < ask_probabilities(values.size, epsilon_auc)
    asked = np.zeros(values.size, dtype=bool)
    asked[order] = coins
    if values.size:
        asked[order[0]] = True
    if insist is not None:
        asked |= np.asarray(insist, dtype=bool)
    return asked
