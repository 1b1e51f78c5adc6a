"""Membership inference on the released model (``threat.attack = "membership"``): the
loss-threshold attack of Yeom, Giacomelli, Fredrikson & Jha (IEEE CSF 2018, "Privacy
risk in machine learning", Adversary 1), the empirical side of the ε the ledger reports.

The adversary holds the final model θ and the average training loss τ; it calls a
record (x, y) a member when ℓ(θ; x, y) ≤ τ. Members are the training records of the
clients whose update reached a release; non-members a sample of the test set of the
same size (drawn from the attack's stream), so the prior is ½. Its membership advantage

    Adv = TPR − FPR ∈ [−1, 1]

is at most e^ε − 1 for an ε-DP training (Yeom et al., Theorem 1). The rates also give an
ε lower bound at the scenario's δ, ε ≥ max{ln((TPR − δ)/FPR), ln((1 − FPR − δ)/(1 − TPR))}
(Kairouz, Oh & Viswanath 2015), with both error rates replaced by one-sided
Clopper–Pearson upper bounds so that it holds with 95% confidence
(:func:`privsim.audit.bounds.epsilon_lower_bound`). It is a bound on ε only as far as
members and non-members are exchangeable draws of one distribution (a random split).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.audit.bounds import epsilon_lower_bound
from privsim.protocols.fedlearn.attacks import AttackContext, Finding, RoundTweaks, RoundView
from privsim.protocols.fedlearn.models import Model

__all__ = ["CONFIDENCE", "Membership", "build", "loss_threshold", "record_losses"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

#: The confidence of the ε lower bound.
CONFIDENCE = 0.95
#: Records evaluated per call of the model (bounds the per-record gradients' memory).
RECORDS_PER_BLOCK = 4096
#: Clients whose records are loaded at once.
CLIENTS_PER_BLOCK = 256


def record_losses(model: Model, params: F64, X: F64, y: I64) -> F64:
    """ℓ(θ; x_j, y_j) (plus the model's L2 term, the same for every record) of each row."""
    n = X.shape[0]
    out = np.empty(n)
    for lo in range(0, n, RECORDS_PER_BLOCK):
        hi = min(n, lo + RECORDS_PER_BLOCK)
        rows = np.broadcast_to(params, (hi - lo, params.size))
        ones = np.ones((hi - lo, 1), dtype=bool)
        out[lo:hi], _ = model.batch_loss_grad(rows, X[lo:hi, None, :], y[lo:hi, None], ones)
    return out


def loss_threshold(
    members: F64, non_members: F64, threshold: float, delta: float
) -> dict[str, float | int]:
    """The attack's figures from the losses of a sample of ``members`` and one of
    ``non_members``, calling a record a member when its loss is at most ``threshold``."""
    hit = int(np.count_nonzero(members <= threshold))
    false_alarm = int(np.count_nonzero(non_members <= threshold))
    tpr, fpr = hit / members.size, false_alarm / non_members.size
    return {
        "tpr": tpr,
        "fpr": fpr,
        "advantage": tpr - fpr,
        "epsilon_lower_bound": epsilon_lower_bound(
            false_alarm, non_members.size, members.size - hit, members.size, delta, CONFIDENCE
        ),
    }


class Membership:
    """The loss-threshold attack of one run: it notes the clients included in each
    release, then attacks the final model (module docstring)."""

    __slots__ = ("_ctx", "_included")
    name = "membership"

    def __init__(self, ctx: AttackContext) -> None:
        self._ctx = ctx
        self._included: set[int] = set()

    def prepare(self, r: int, names: tuple[str, ...], params: F64) -> RoundTweaks:
        return RoundTweaks()

    def observe(self, view: RoundView) -> list[Finding]:
        included = view.run.included() or ()
        real = set(view.names)
        self._included.update(int(c.rpartition("-")[2]) for c in included if c in real)
        return []

    def _members(self) -> tuple[F64, I64]:
        """The training records of the included clients, in client order."""
        data, ids = self._ctx.learner.data, np.array(sorted(self._included), dtype=np.int64)
        d = int(data.n_features)
        parts_X, parts_y = [np.empty((0, d))], [np.empty(0, dtype=np.int64)]
        for lo in range(0, ids.size, CLIENTS_PER_BLOCK):
            cohort = data.cohort(ids[lo : lo + CLIENTS_PER_BLOCK])
            parts_X.append(cohort.X[cohort.mask])
            parts_y.append(cohort.y[cohort.mask])
        return np.concatenate(parts_X), np.concatenate(parts_y)

    def report(self, findings: list[Finding], final_params: F64) -> dict[str, Any]:
        """The attack on ``final_params``: ``success`` is the membership advantage."""
        learner = self._ctx.learner
        model, params = learner.model, np.asarray(final_params, dtype=np.float64)
        X_in, y_in = self._members()
        X_out, y_out = learner.test
        n = min(y_in.size, int(np.asarray(y_out).size))
        base: dict[str, Any] = {
            "name": self.name,
            "rounds_recovered": [],
            "members": n,
            "non_members": n,
            "confidence": CONFIDENCE,
        }
        if n == 0:
            return base | {"success": None, "tpr": None, "fpr": None, "epsilon_lower_bound": None}
        member_losses = record_losses(model, params, X_in, y_in)
        threshold = float(member_losses.mean())
        rng = self._ctx.streams.generator("attack", "membership")
        pick_in = np.sort(rng.choice(y_in.size, size=n, replace=False))
        pick_out = np.sort(rng.choice(np.asarray(y_out).size, size=n, replace=False))
        out_losses = record_losses(
            model, params, np.asarray(X_out)[pick_out], np.asarray(y_out)[pick_out]
        )
        figures = loss_threshold(
            member_losses[pick_in], out_losses, threshold, self._ctx.scenario.privacy.delta
        )
        return base | {
            "success": figures["advantage"],
            "tpr": figures["tpr"],
            "fpr": figures["fpr"],
            "threshold": threshold,
            "epsilon_lower_bound": figures["epsilon_lower_bound"],
        }


def build(ctx: AttackContext) -> Membership:
    """The run's membership attack."""
    return Membership(ctx)
