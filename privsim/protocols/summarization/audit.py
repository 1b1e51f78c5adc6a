"""PrivAuction under audit (Sarpatwar et al. 2019, Algorithm 3, lines 11–17): one epoch's
coins as the top owner sees them.

Adversary: ``owner-0``, the top bidder on D (and any colluding server the scenario
names; a colluding curator sees every bid, so the ledger claims nothing). Neighbours:
one record of another owner, ``owner-(K−1)``, changes so that its best bid passes
owner-0's — bids D = (1, .5, .2, .1, …) against D′ = (1, .5, .2, 1.5) at K = 4 (issue
#27's counterexample; other K: the first K of 1, .5, .2, .1, .05, …, the last raised
to 1.5). owner-0 moves from rank 1 to rank 2; its τ-rule ask depends on its own data
only, and would make its view constant, so there is none.

Statistic: 1 if owner-0 is not asked, else 0 (larger: D′). Trials: the implementation's
coins (:func:`~privsim.protocols.summarization.auction.draw_ask_matrix`) for the
scenario's ``summarization.auction``, ε_auc and K, vectorised.

Claim: ε_auc-DP per epoch (δ = 0) — the ledger's event for the private auction, and the
paper's claim (Theorem 2; what privsim reported before issue #27) for the paper's. The
ledger records the paper's auction as (ε_auc, 1 − e^{−ε_auc}) per epoch;
:func:`auction_plan` with that δ audits the record instead.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, TrialBatch
from privsim.protocols.summarization import accounting
from privsim.protocols.summarization.auction import draw_ask_matrix
from privsim.protocols.summarization.config import SummarizationConfig
from privsim.scenarios.schema import Scenario

__all__ = ["OBSERVER", "auction_plan", "audit_plan", "neighbouring_bids"]

F64 = npt.NDArray[np.float64]
#: The top owner on D, whose view is audited.
OBSERVER = "owner-0"
#: The bids on D, by owner, before truncation to K; D′ raises the last to RAISED.
BIDS = (1.0, 0.5, 0.2, 0.1)
RAISED = 1.5


def neighbouring_bids(owners: int) -> tuple[F64, F64]:
    """(D, D′): owner-0 tops D; on D′ the last owner's bid passes it (rank 1 → 2)."""
    if owners < 2:
        raise ValueError("one owner: no other owner's record can move its rank")
    tail = BIDS[-1] * 0.5 ** np.arange(1, max(owners - len(BIDS), 0) + 1)
    d = np.concatenate([BIDS, tail])[:owners].astype(np.float64)
    d_prime = d.copy()
    d_prime[-1] = RAISED
    return d, d_prime


def auction_plan(
    variant: str,
    epsilon_auc: float,
    owners: int,
    *,
    claimed_epsilon: float,
    claimed_delta: float = 0.0,
    coalition: tuple[str, ...] = (OBSERVER,),
) -> AuditPlan:
    """The audit of one epoch's ``variant`` coins against a claimed (ε, δ)."""
    d, d_prime = neighbouring_bids(owners)

    def trials(_scenario: Scenario | None, batch: TrialBatch, canary_in: bool) -> F64:
        rng = batch.streams(canary_in).generator("summarization", "auction")
        asks = draw_ask_matrix(d_prime if canary_in else d, epsilon_auc, rng, batch.count, variant)
        return np.asarray(~asks[:, 0], dtype=np.float64)

    return AuditPlan(
        neighbours=f"bids {tuple(d.tolist())} against {tuple(d_prime.tolist())}: one record "
        f"of owner-{owners - 1} moves its bid past {OBSERVER}'s (rank 1 → 2)",
        statistic=f"1 if {OBSERVER} is not asked ({variant} auction, ε_auc = {epsilon_auc:g})",
        trials=trials,  # type: ignore[arg-type]
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        coalition=coalition,
        batch=200_000,
    )


def audit_plan(scenario: Scenario) -> AuditPlan:
    """The audit of one epoch's auction (see the module docstring)."""
    cfg = scenario.table("summarization", SummarizationConfig)
    servers = tuple(scenario.threat.colluding_servers)
    coalition = (OBSERVER, *servers)
    epsilon, delta = (
        accounting.auction_epoch(cfg) if cfg.auction == "private" else (cfg.auction_epsilon, 0.0)
    )
    if accounting.TRUST.broken_by(coalition):
        epsilon = math.inf
    return auction_plan(
        cfg.auction,
        cfg.auction_epsilon,
        cfg.owners,
        claimed_epsilon=epsilon,
        claimed_delta=delta,
        coalition=coalition,
    )
