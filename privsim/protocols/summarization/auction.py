"""PrivAuction (Sarpatwar et al. 2019, Algorithm 3, lines 11–17), the coins only, and
the privacy and parsimony they give.

Owners are ranked by decreasing bid (ties by position); the i-th (1-based) is asked for
its point independently with probability p_i, and an owner whose current best point has
been its bid τ times in a row is asked anyway (the τ rule, line 14). The coins depend on
the order only. Owner j sees whether it is asked; changing one record of another owner
moves one other bid, so j's rank moves by at most one. j's view is a coin of p_r against
one of p_{r±1}, and the auction is ε-DP for j iff, for every i,

    p_i ≤ e^ε·p_{i+1}   (asked)   and   1 − p_{i+1} ≤ e^ε·(1 − p_i)   (not asked).

Two variants (``summarization.auction``):

- ``"paper"``: line 13 as printed, p_i = e^{−ε_auc(i−1)}: the top bidder is always
  asked, so "not asked" has probability 0 at rank 1 and 1 − e^{−ε_auc} at rank 2. No
  finite ε holds; the exact profile of one epoch is δ(ε′) = 1 − e^{−ε_auc} for every
  ε′ ≥ 0 (:func:`shift_delta`), recorded as (ε_auc, 1 − e^{−ε_auc}).
- ``"private"`` (default): p_i = e^ε/(1 + e^ε)·e^{−ε(i−1)}. The ask ratio is e^ε exactly;
  the not-ask constraint, with p_{i+1} = e^{−ε}p_i, is p_i·(e^ε − e^{−ε}) ≤ e^ε − 1, i.e.
  p_i ≤ e^ε/(1 + e^ε), tight at the top: randomised response's coin. The tail is as
  thin as the ask ratio allows, and with that tail no larger top coin is ε_auc-DP (a
  larger one needs a fatter tail, i.e. more asks).

Expected coin asks per epoch: Σ_i p_i = c·(1 − e^{−εK})/(1 − e^{−ε}) with c = 1 (paper)
or e^ε/(1 + e^ε) (private): below 1/(1 − e^{−ε}) and 1/(1 − e^{−2ε}) respectively.
"""

from __future__ import annotations

import itertools
import math
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

__all__ = [
    "AUCTIONS",
    "AuctionVariant",
    "ask_probabilities",
    "draw_ask_matrix",
    "draw_asks",
    "expected_asks",
    "nobody_asked",
    "parsimony_bound",
    "rank_order",
    "shift_delta",
    "shift_epsilon",
]

AuctionVariant = Literal["private", "paper"]
#: The auction variants, the default first.
AUCTIONS: tuple[str, ...] = get_args(AuctionVariant)


def ask_probabilities(
    bidders: int, epsilon_auc: float, variant: str = "private"
) -> npt.NDArray[np.float64]:
    """p_i, i = 1 … K: e^{−ε(i−1)} (``"paper"``, line 13) or e^ε/(1 + e^ε)·e^{−ε(i−1)}
    (``"private"``: the thinnest tail the ask ratio allows, under the largest top coin
    that keeps every rank shift of one ε-DP)."""
    if variant not in AUCTIONS:
        raise ValueError(f"auction variant must be one of {AUCTIONS}, got {variant!r}")
    tail = np.exp(-epsilon_auc * np.arange(bidders, dtype=np.float64))
    if variant == "paper":
        return tail
    return np.asarray(tail / (1.0 + math.exp(-epsilon_auc)), dtype=np.float64)


def expected_asks(bidders: int, epsilon_auc: float, variant: str = "private") -> float:
    """Σ_i p_i: the coins' expected asks per epoch (the τ rule not counted)."""
    return float(ask_probabilities(bidders, epsilon_auc, variant).sum())


def nobody_asked(bidders: int, epsilon_auc: float, variant: str = "private") -> float:
    """Π_i (1 − p_i): probability that the coins ask nobody in an epoch. The product
    runs over ranks, so it does not depend on who holds which rank, i.e. on the data."""
    return float(np.prod(1.0 - ask_probabilities(bidders, epsilon_auc, variant)))


def parsimony_bound(
    bidders: int, epsilon_auc: float, epochs: int, tau: int, variant: str = "private"
) -> float:
    """Bound on the expected owners' points the curator accesses in ``epochs`` epochs:
    epochs·Σ_i p_i (the coins) + K·⌊epochs/τ⌋ (the τ rule: an owner is insisted on only
    after τ epochs in a row with the same unasked bid, and its count restarts once it
    sends, so at most ⌊epochs/τ⌋ times). See ``docs/reproductions/summarization-details.md``, "Parsimony"."""
    return epochs * expected_asks(bidders, epsilon_auc, variant) + bidders * (epochs // tau)


def rank_order(bids: npt.ArrayLike) -> npt.NDArray[np.intp]:
    """Positions by decreasing bid, ties by position (line 12)."""
    values = np.asarray(bids, dtype=np.float64)
    return np.lexsort((np.arange(values.size), -values))


def draw_ask_matrix(
    bids: npt.ArrayLike,
    epsilon_auc: float,
    rng: np.random.Generator,
    trials: int,
    variant: str = "private",
) -> npt.NDArray[np.bool_]:
    """``trials`` independent epochs of the coins on the same bids (line 13), one row
    each, columns in the bids' own order (the audit's vectorised draws)."""
    values = np.asarray(bids, dtype=np.float64)
    order = rank_order(values)
    coins = rng.random((trials, values.size)) < ask_probabilities(values.size, epsilon_auc, variant)
    asked = np.zeros((trials, values.size), dtype=bool)
    asked[:, order] = coins
    return asked


def draw_asks(
    bids: npt.ArrayLike,
    epsilon_auc: float,
    rng: np.random.Generator,
    insist: npt.ArrayLike | None = None,
    *,
    variant: str = "private",
) -> npt.NDArray[np.bool_]:
    """Which bidders to ask, in the bids' own order: rank by decreasing bid (ties by
    position), flip the ``variant``'s coins (default: the private ones), and add every
    bidder flagged by the τ rule (line 14)."""
    values = np.asarray(bids, dtype=np.float64)
    asked = draw_ask_matrix(values, epsilon_auc, rng, 1, variant)[0]
    if insist is not None:
        asked |= np.asarray(insist, dtype=bool)
    return asked


def _adjacent_pairs(probabilities: npt.ArrayLike) -> list[tuple[float, float]]:
    """(P[outcome | rank i], P[outcome | rank i + 1]) for ask and not-ask, each shift of
    one in both directions."""
    p = np.asarray(probabilities, dtype=np.float64)
    pairs: list[tuple[float, float]] = []
    for a, b in itertools.pairwise(p):
        for x, y in ((a, b), (1.0 - a, 1.0 - b)):
            pairs += [(float(x), float(y)), (float(y), float(x))]
    return pairs


def shift_delta(probabilities: npt.ArrayLike, epsilon: float) -> float:
    """The exact δ(ε) of one epoch's coins for the owner whose rank moves by one:
    max over adjacent ranks, both directions, ask and not-ask, of P − e^ε·P′ (the
    hockey-stick divergence of two coins; an owner's view is one coin)."""
    best = 0.0
    for x, y in _adjacent_pairs(probabilities):
        best = max(best, x - math.exp(epsilon) * y)
    return best


def shift_epsilon(probabilities: npt.ArrayLike) -> float:
    """The smallest ε for which the coins are ε-DP (δ = 0) under every rank shift of
    one: max ln(P/P′) over the same pairs; ∞ if some outcome has P > 0 = P′."""
    best = 0.0
    for x, y in _adjacent_pairs(probabilities):
        if x > 0.0:
            best = max(best, math.inf if y <= 0.0 else math.log(x / y))
    return best
