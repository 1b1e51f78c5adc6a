"""One DP-BCD local step under audit (de Jong, Kamphorst & Kroes 2022, Algorithm 2,
Eqs. (9) and (12), Definition 2).

The guarantee is the paper's *locally sensitive* DP: the data set at hand D against its
one-record removals D′ = D ∖ {k}. The audit takes the target party's first step (the
first party outside the coalition), with the remainder v it receives computed from the
earlier parties' unperturbed steps, and the record k whose removal moves the target's
unperturbed coefficients β̂ the most (leave-one-out: β̂ − β̂₋ₖ = (XᵀX)⁻¹x_k e_k/(1 − h_k)).
Each data set computes its own ξ = γ‖v − Xβ̂‖, as the party does.

Adversary: the coalition, who knows every record but the target's block (the worst
case) and sees the step's coefficients β̃ = β̂ − R⁻¹Qᵀb (X = QR; published with the
model, and recoverable from v_out). The perturbation b = l·s, l = |N(0, σ_l²)|,
s uniform on S^{N−1}, σ_l from :func:`privsim.protocols.bcd.maths.perturbation_scale`
(the implementation), enters only as Qᵀs = z/√(‖z‖² + χ²_{N−m}) with z ~ N(0, I_m) —
exact, and vectorised over trials. The abort rule (‖v_out‖ > ξ, with ‖v_out‖² =
‖v − Xβ̂‖² + l²‖Qᵀs‖²) publishes nothing; an aborted trial's statistic is the
uninformative midpoint. Statistic: β̃ − β̂(D) projected on β̂(D′) − β̂(D).

Claim: the ledger's ε for one step, ε_step (a pure ε event trusting nobody), or none for
BCD and the readings that void the proof.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, TrialBatch
from privsim.protocols.bcd import maths
from privsim.protocols.bcd.config import BcdConfig
from privsim.protocols.bcd.data import load_partitioned
from privsim.protocols.bcd.experiment import (
    OWN_PERTURBATION,
    invalid_reading,
    party_names,
    plan_of,
    steps_event,
)
from privsim.scenarios.schema import Scenario
from privsim.sim.ledger import PrivacyLedger
from privsim.sim.streams import Streams

__all__ = ["audit_plan", "influential_record", "target_step"]

F64 = npt.NDArray[np.float64]


def target_step(scenario: Scenario) -> tuple[int, F64, F64]:
    """(target party, its block X, the remainder v of its first step)."""
    cfg = scenario.table("bcd", BcdConfig)
    data = load_partitioned(cfg, Streams(scenario.seed).generator("data", "bcd"))
    colluding = set(scenario.threat.colluding_servers)
    names = party_names(cfg)
    target = next((j for j, n in enumerate(names) if n not in colluding), None)
    if target is None:
        raise ValueError("every party colludes: there is no honest step to audit")
    v = np.asarray(data.y, dtype=np.float64)
    for j in range(target):  # the earlier parties' unperturbed steps
        v = v - maths.LocalBlock.of(data.block(j)).fitted(v)
    return target, np.asarray(data.block(target), dtype=np.float64), v


def influential_record(x: F64, v: F64) -> int:
    """The record whose removal moves β̂ = (XᵀX)⁻¹Xᵀv the most (leave-one-out)."""
    block = maths.LocalBlock.of(x)
    residual = v - block.fitted(v)
    leverage = np.sum(block.q**2, axis=1)
    inv = np.linalg.inv(block.r.T @ block.r)
    moves = (x @ inv) * (residual / np.maximum(1.0 - leverage, 1e-12))[:, None]
    return int(np.argmax(np.linalg.norm(moves, axis=1)))


def audit_plan(scenario: Scenario) -> AuditPlan:
    """The audit of one DP-BCD step (see the module docstring)."""
    cfg = scenario.table("bcd", BcdConfig)
    plan = plan_of(scenario)
    p = scenario.privacy
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend="allow")
    reason = "BCD without perturbation" if plan.step_epsilon is None else invalid_reading(cfg)
    if reason:
        ledger.non_private("step", reason)
    else:
        assert plan.step_epsilon is not None
        ledger.charge("step", steps_event(plan.step_epsilon, 1), trust=OWN_PERTURBATION)
        ledger.settle("step")
    claim = ledger.guarantee(scenario.threat.colluding_servers)
    step_epsilon = plan.step_epsilon or 1.0
    target, x, v = target_step(scenario)
    k = influential_record(x, v)
    keep = np.arange(x.shape[0]) != k
    sides = {False: (x, v), True: (x[keep], v[keep])}
    fits = {}
    for side, (xs, vs) in sides.items():
        block = maths.LocalBlock.of(xs)
        residual = float(np.linalg.norm(vs - block.fitted(vs)))
        fits[side] = (block, block.solve(vs), residual, xs.shape[0])
    shift = fits[True][1] - fits[False][1]
    size = float(np.linalg.norm(shift))
    u = shift / size if size > 0 else np.zeros_like(shift)
    m = x.shape[1]

    def trials(scn: Scenario, batch: TrialBatch, canary_in: bool) -> F64:
        block, beta_hat, residual, n = fits[canary_in]
        xi = cfg.gamma * residual
        rng = batch.streams(canary_in).generator(f"party-{target}", "perturbation")
        z = rng.standard_normal((batch.count, m))
        rest = rng.chisquare(n - m, batch.count)
        qs = z / np.sqrt(np.sum(z**2, axis=1) + rest)[:, None]  # Qᵀs
        length = np.abs(rng.normal(0.0, maths.perturbation_scale(xi, step_epsilon), batch.count))
        qb = length[:, None] * qs
        beta = beta_hat - np.linalg.solve(block.r, qb.T).T  # β̃ = β̂ − R⁻¹Qᵀb
        stat = (beta - fits[False][1]) @ u
        aborted = residual**2 + length**2 * np.sum(qs**2, axis=1) > xi**2
        return np.where(aborted, size / 2.0, stat)

    return AuditPlan(
        neighbours=f"party-{target}'s block with all {x.shape[0]} records (D) and without "
        f"record {k}, the most influential (D′; locally sensitive DP, Definition 2)",
        statistic="the step's coefficients β̃ projected on β̂(D′) − β̂(D)",
        trials=trials,
        claimed_epsilon=claim.epsilon,
        claimed_delta=claim.delta,
        coalition=tuple(sorted(scenario.threat.colluding_servers)),
        batch=200_000,
    )
