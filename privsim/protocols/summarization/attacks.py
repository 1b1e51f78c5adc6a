"""What an owner learns from PrivAuction's asks (Sarpatwar et al. 2019, Algorithm 3,
lines 11–17), from the coalition's pooled view.

Under the paper's coins the top bidder is always asked, so an owner that bid in an epoch
and was not asked knows, with certainty and whatever ε_auc, that another owner's best
point beat its own (:func:`outranked_epochs`). Under the private coins the same epochs
are worth a likelihood ratio of at most e^{ε_auc} (:func:`not_asked_ratio`): a top
bidder goes unasked with probability 1/(1 + e^{ε_auc}).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from privsim.protocols.summarization.auction import ask_probabilities
from privsim.protocols.summarization.messages import Ask, Bid
from privsim.sim.coalition import CoalitionView

__all__ = ["ATTACKS", "not_asked_ratio", "outranked_epochs"]


def outranked_epochs(view: CoalitionView, owner: str) -> list[int]:
    """The epochs in which ``owner`` (a coalition member) bid and was not asked: under
    the paper's coins, each proves that some other owner outbid it."""
    bid = {m.message.epoch for m in view.messages_of(Bid) if m.src == owner}  # type: ignore[attr-defined]
    asked = {m.message.epoch for m in view.messages_of(Ask) if m.dst == owner}  # type: ignore[attr-defined]
    return sorted(bid - asked)


def not_asked_ratio(bidders: int, epsilon_auc: float, variant: str) -> float:
    """P[not asked | second] / P[not asked | top]: how much more likely "not asked"
    makes "outbid" (∞ under the paper's coins, e^{ε_auc} under the private ones)."""
    p = ask_probabilities(bidders, epsilon_auc, variant)
    if bidders < 2:
        return 1.0
    return math.inf if p[0] >= 1.0 else float((1.0 - p[1]) / (1.0 - p[0]))


#: The attacks a summarisation coalition can run, by name.
ATTACKS: dict[str, Callable[..., Any]] = {"outranked_epochs": outranked_epochs}
