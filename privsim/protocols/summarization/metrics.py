"""Quality and cost figures of a summary: MMD² to D_v, linear-SVM accuracy on the target
domain, points the curator accessed, bytes and rounds per party, and the threat view."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.protocols.summarization.attacks import outranked_epochs
from privsim.protocols.summarization.messages import Ask, Bid, HashBroadcast, Point
from privsim.sim.cost import message_rounds
from privsim.sim.trace import Status
from privsim.sim.world import World

__all__ = ["cost_by_party", "exposure", "percent_increase", "points_accessed", "svm_accuracy"]

F64 = npt.NDArray[np.float64]


def svm_accuracy(x: F64, y: F64, test_x: F64, test_y: F64) -> float:
    """Accuracy on the target test set of a linear SVM trained on the summary (features
    standardised on the summary); a one-class summary predicts its class."""
    if len(x) == 0:
        return math.nan
    classes = np.unique(y)
    if classes.size < 2:
        return float(np.mean(test_y == classes[0]))
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    model = make_pipeline(StandardScaler(), LinearSVC(C=1.0, dual="auto", max_iter=5000))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x, y)
    return float(np.mean(model.predict(test_x) == test_y))


def percent_increase(value: float, reference: float) -> float:
    """(value − reference)/reference × 100 (Figure 1, top)."""
    return math.inf if reference <= 0 else 100.0 * (value - reference) / reference


def points_accessed(world: World, curator: str) -> int:
    """Owners' points delivered to the curator, counted from the trace."""
    t = world.trace.arrays()
    to_curator = (t.dst == t.parties.index(curator)) & (t.status == Status.DELIVERED)
    kinds = np.asarray(t.kinds, dtype=object)[t.kind]
    return int(np.sum(to_curator & (kinds == Point.__name__)))


def cost_by_party(world: World) -> dict[str, dict[str, int]]:
    """Bytes and messages sent and received, and rounds, per party (from the trace)."""
    t = world.trace.arrays()
    rounds = message_rounds(t)
    delivered = t.status == Status.DELIVERED
    out: dict[str, dict[str, int]] = {}
    for i, party in enumerate(t.parties):
        sent, got = t.src == i, (t.dst == i) & delivered
        out[party] = {
            "bytes_sent": int(t.wire_bytes[sent].sum()),
            "bytes_received": int(t.wire_bytes[got].sum()),
            "messages_sent": int(sent.sum()),
            "messages_received": int(got.sum()),
            "rounds": int(rounds[sent].max()) if sent.any() else 0,
        }
    return out


def exposure(
    world: World,
    owners: tuple[str, ...],
    picks: list[tuple[str, int]],
    epochs: int,
    auction: str = "private",
) -> dict[str, Any]:
    """What colluding owners learn. Broadcasts are DP releases (covered by the ledger);
    so are the asks under the private auction. Under the paper's auction each epoch's
    ask is only (ε_auc, 1 − e^{−ε_auc})-DP: the epochs a coalition owner saw it are
    counted as views outside DP, and the epochs it bid and was not asked each told it
    for certain that another owner outbid it (:mod:`~privsim.protocols.summarization.
    attacks`). Under the naive scheme (only the winner is notified) every epoch a
    coalition owner wins tells it that every other owner's best bid was lower — a
    comparison outside any DP guarantee, counted here (and the per-epoch win/lose bits
    it would have learnt)."""
    members = world.coalition & set(owners)
    t = world.trace.arrays()
    kinds = np.asarray(t.kinds, dtype=object)[t.kind]
    delivered = t.status == Status.DELIVERED
    member_idx = [t.parties.index(p) for p in members]
    to_members = np.isin(t.dst, member_idx) & delivered
    paper = auction == "paper"
    view = world.coalition_view() if paper and members else None
    return {
        "broadcasts_received": int(np.sum(to_members & (kinds == HashBroadcast.__name__))),
        "asks_received": int(np.sum(to_members & (kinds == Ask.__name__))),
        "bids_seen_from_others": int(np.sum(np.isin(t.dst, member_idx) & (kinds == Bid.__name__))),
        "naive_winner_notifications": sum(1 for src, _ in picks if src in members),
        "naive_comparison_bits": epochs * len(members),
        "auction_views_not_dp": (
            int(np.sum(np.isin(t.src, member_idx) & (kinds == Bid.__name__))) if paper else 0
        ),
        "outranked_revealed": (
            sum(len(outranked_epochs(view, o)) for o in sorted(members)) if view else 0
        ),
    }
