"""The BLR sufficient-statistics release under audit (Heikkilä et al. 2017, §3.2: one
Gaussian release of Σ (x_i x_iᵀ, x_i y_i), through DCA for ``DDP`` or by a curator for
``TA``).

Adversary: the scenario's coalition, who knows every record but the target's (the
worst case; the coalition of the attack in :mod:`privsim.protocols.blr.attacks`). The
target is the first honest client; the canary is the extreme record x = (c, …, c),
y = c with c the assumed bound:

- ``add_remove``: on D the target's record is absent (its statistics are 0), on D′ it
  is the canary — a shift of v = client_statistics(x, y);
- ``replace_one``: on D the target's y is −c, on D′ +c — a shift of 2c²·(1, …, 1) on
  the x·y entries.

Statistic: the released statistics minus what the coalition knows, projected on the
shift's direction u. The honest clients' noise is isotropic, so its projection is
N(0, H·σ_i²) for H honest shares of σ_i each (``DDP``: σ_i = σ/√(N − T − 1),
Theorem 1) or N(0, σ²) (``TA``): drawn directly in that one dimension, with σ from the
implementation's sensitivity and budget (``statistics_sensitivity``, the run's budget
split) and σ_i from ``client_noise_std``; the shift is the implementation's
``client_statistics`` of the canary. The audited method is ``DDP`` when the scenario
runs it, else ``TA``. Claim: the ledger's ε for that release against the coalition, with
the event charged at the paper's calibration (the whole budget's noise multiplier, and
Theorem 1's shares), so an implementation that strays is caught by the trials.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, TrialBatch, secure_sum_coalition
from privsim.kit.securesum import round as securesum
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.maths import client_noise_std
from privsim.protocols.blr.config import BlrConfig
from privsim.protocols.blr.experiment import CURATOR, _Budget, load_table
from privsim.protocols.blr.maths import client_statistics, statistics_sensitivity
from privsim.scenarios.schema import Scenario
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger

__all__ = ["audit_plan", "canary_shift", "coalition_of"]

F64 = npt.NDArray[np.float64]


def coalition_of(scenario: Scenario) -> frozenset[str]:
    """The realised coalition, drawn as a run at the scenario's seed draws it."""
    return secure_sum_coalition(
        scenario, [f"client-{i}" for i in range(scenario.population.clients)]
    )


def canary_shift(d: int, bound: float, neighbour: str) -> F64:
    """f(D′) − f(D) of the statistics for the module's canary (see its docstring)."""
    x = np.full((1, d), bound)
    if neighbour == "replace_one":
        return np.asarray(
            (client_statistics(x, np.array([bound])) - client_statistics(x, np.array([-bound])))[0],
            dtype=np.float64,
        )
    return np.asarray(client_statistics(x, np.array([bound]))[0], dtype=np.float64)


def _claim(
    scenario: Scenario, method: str, clients: tuple[str, ...], coalition: frozenset[str]
) -> tuple[float, float]:
    """The ledger's (ε, δ) for the release as the paper specifies it: a Gaussian
    mechanism at the budget's noise multiplier (σ/Δ₂ from the scenario's calibration),
    for ``DDP`` in shares of Theorem 1's σ/√(N − T − 1) that trust one compute node,
    for ``TA`` trusting the curator."""
    p = scenario.privacy
    n, t = len(clients), scenario.table("dca", DcaConfig).tolerated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        multiplier = gaussian_sigma(p.epsilon, p.delta, 1.0, p.calibration)
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend="allow")
    event = dp_accounting.GaussianDpEvent(multiplier)
    if method == "DDP":
        securesum.charge(
            ledger,
            "statistics",
            event=event,
            clients=clients,
            nodes=securesum.node_names(scenario),
            share_multiplier=multiplier / math.sqrt(n - t - 1),  # Theorem 1
        )
        ledger.settle("statistics", contributors=clients)
    else:
        ledger.charge("statistics", event, trust=CURATOR)
        ledger.settle("statistics")
    g = ledger.guarantee(coalition)
    return g.epsilon, g.delta


def audit_plan(scenario: Scenario) -> AuditPlan:
    """The audit of the ``DDP`` (or ``TA``) statistics release: the trials use the
    implementation's sensitivity, budget and noise scaling, the claim the paper's."""
    cfg = scenario.table("blr", BlrConfig)
    p = scenario.privacy
    n = scenario.population.clients
    t = scenario.table("dca", DcaConfig).tolerated
    d = load_table(scenario)[1].shape[1]
    coalition = coalition_of(scenario)
    clients = tuple(f"client-{i}" for i in range(n))
    honest = [c for c in clients if c not in coalition]
    if not honest:
        raise ValueError("every client colludes: there is no honest target to audit")
    bound = cfg.assumed_bound
    method = "DDP" if "DDP" in cfg.methods else "TA"
    claimed_epsilon, claimed_delta = _claim(scenario, method, clients, coalition)
    shift = float(np.linalg.norm(canary_shift(d, bound, p.neighbour)))

    def released_std() -> float:
        """The implementation's noise on the release, per coordinate."""
        sens = statistics_sensitivity(np.full(d, bound), bound, p.neighbour)
        sigma = _Budget(scenario).whole * sens
        if method == "TA":
            return sigma
        return client_noise_std(sigma, n, t) * math.sqrt(len(honest))

    def trials(scn: Scenario, batch: TrialBatch, canary_in: bool) -> F64:
        rng = batch.streams(canary_in).generator("blr", method, "noise-projection")
        return (shift if canary_in else 0.0) + rng.normal(0.0, released_std(), batch.count)

    return AuditPlan(
        neighbours=f"{honest[0]}'s record: the canary x = ({bound:g}, …), y = {bound:g} "
        + ("against y = −c" if p.neighbour == "replace_one" else "against no record")
        + f" ({p.neighbour}; ‖shift‖ = {shift:.3g})",
        statistic=f"{method}'s released statistics minus the known records', projected on "
        "the canary's shift",
        trials=trials,
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        coalition=tuple(sorted(coalition)),
        batch=200_000,
    )
