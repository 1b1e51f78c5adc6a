"""The RACE sketch release under audit (Coleman & Shrivastava 2021, Algorithm 1 and
Lemma 3.1; released locally, through DCA, or by a curator).

Adversary: the scenario's coalition, who also knows every record but the canary (the
worst case DP allows), so it subtracts the known counts. A record adds 1 to one cell in
each of the R rows: on D′ the canary's R cells are one higher (``add_remove``), or —
``replace_one`` — the canary's R cells are one higher and a replaced record's R other
cells one lower (Δ₁ = 2R, every row's two cells taken distinct: the worst case). What
the coalition sees of those cells, y (minus the known counts), by mode:

- ``local``: the target owner's noisy sketch, c + Lap(b) (it reaches the aggregator
  alone; the other owners' noise protects nobody's else's shard);
- ``curator``: c + Lap(b) once — or c itself when the curator colludes;
- ``dca``: c plus the honest owners' noise shares (Gamma differences, or Gaussian
  σ_i), the colluding owners' own shares subtracted; c itself when every compute node
  colludes.

b = Δ₁/ε comes from :func:`privsim.protocols.race.private.laplace_scale` (the
implementation). Statistic: the Laplace log-likelihood ratio Σ_B (|y| − |y − 1|) +
Σ_A (|y| − |y + 1|) up to the factor 1/b (Neyman–Pearson optimal for Laplace noise),
or Σ_B y − Σ_A y for Gaussian shares (B: the canary's cells, A: the replaced record's).
Claim: the ledger's ε for the release against the coalition, charged by the run's own
``_charge`` of :mod:`privsim.protocols.race.experiment`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, TrialBatch, secure_sum_coalition
from privsim.kit.securesum import round as securesum
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.maths import client_noise_std
from privsim.protocols.race import private
from privsim.protocols.race.config import RaceConfig
from privsim.protocols.race.distributed import gamma_noise
from privsim.protocols.race.experiment import _charge as charge_release
from privsim.scenarios.schema import Scenario
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger

__all__ = ["audit_plan", "coalition_of"]

F64 = npt.NDArray[np.float64]
OUTPUT_PARTY = securesum.OUTPUT_PARTY


def coalition_of(scenario: Scenario) -> frozenset[str]:
    """The realised coalition, drawn as a run at the scenario's seed draws it."""
    return secure_sum_coalition(
        scenario, [f"owner-{k}" for k in range(scenario.table("race", RaceConfig).owners)]
    )


def _exact_view(cfg: RaceConfig, coalition: frozenset[str], nodes: tuple[str, ...]) -> bool:
    """The coalition sees the counts without noise: a colluding curator, or every
    compute node in DCA mode."""
    if cfg.mode == "curator":
        return OUTPUT_PARTY in coalition
    return cfg.mode == "dca" and bool(nodes) and all(n in coalition for n in nodes)


def llr_laplace(y_in: F64, y_out: F64) -> F64:
    """Σ (|y| − |y − 1|) over the cells that gain the canary plus Σ (|y| − |y + 1|) over
    those that lose the replaced record: b·(log-likelihood ratio of D′ against D) under
    Laplace(b) noise, per trial (rows of the arrays). Rounded to 10⁻⁹: the ratio has
    point masses (every cell at ±1), and (n + 1) − n and n − (n − 1) round differently
    in floating point, which a threshold would otherwise separate — an artefact of the
    statistic's arithmetic, not of the mechanism."""
    stat = np.sum(np.abs(y_in) - np.abs(y_in - 1.0), axis=1)
    if y_out.shape[1]:
        stat += np.sum(np.abs(y_out) - np.abs(y_out + 1.0), axis=1)
    return np.asarray(np.round(stat, 9), dtype=np.float64)


def audit_plan(scenario: Scenario) -> AuditPlan:
    """The audit of one sketch release (see the module docstring)."""
    cfg = scenario.table("race", RaceConfig)
    p = scenario.privacy
    r = cfg.rows
    coalition = coalition_of(scenario)
    owners = tuple(f"owner-{k}" for k in range(cfg.owners))
    honest = [o for o in owners if o not in coalition]
    if not honest:
        raise ValueError("every owner colludes: there is no honest target to audit")
    nodes = securesum.node_names(scenario) if cfg.mode == "dca" else ()
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend="allow")
    charge_release(ledger, scenario, cfg, owners, nodes)
    if cfg.mode == "dca":
        ledger.settle("sketch", contributors=owners)
    else:
        ledger.settle("sketch")
    claim = ledger.guarantee(coalition)
    exact = _exact_view(cfg, coalition, nodes)
    replaced = r if p.neighbour == "replace_one" else 0
    tolerated = scenario.table("dca", DcaConfig).tolerated
    gaussian = cfg.mode == "dca" and cfg.noise == "gaussian"

    def noise(batch: TrialBatch, canary_in: bool, cells: int) -> F64:
        """What the coalition cannot subtract from the canary's cells, (trials, cells)."""
        shape = (batch.count, cells)
        if exact:
            return np.zeros(shape)
        streams = batch.streams(canary_in)
        b = private.laplace_scale(r, p.epsilon, p.neighbour)
        if cfg.mode in ("local", "curator"):
            return streams.generator(honest[0], "laplace").laplace(0.0, b, shape)
        total = np.zeros(shape)
        if gaussian:
            sens = np.sqrt(r) * (2.0 if p.neighbour == "replace_one" else 1.0)
            with np.errstate(all="ignore"):
                sigma = gaussian_sigma(p.epsilon, p.delta, sens, p.calibration)
            std = client_noise_std(sigma, cfg.owners, tolerated)
            return streams.generator("honest-owners", "noise").normal(
                0.0, std * np.sqrt(len(honest)), shape
            )
        parts = max(1, cfg.owners - tolerated)
        for owner in honest:
            g = gamma_noise(streams.generator(owner, "noise"), batch.count * cells, b, parts)
            total += g.reshape(shape)
        return total

    def trials(scn: Scenario, batch: TrialBatch, canary_in: bool) -> F64:
        cells = r + replaced
        y = noise(batch, canary_in, cells)
        if canary_in:
            y[:, :r] += 1.0  # the canary's cell in every row
            y[:, r:] -= 1.0  # the record it replaced (replace_one)
        if gaussian:
            return np.asarray(y[:, :r].sum(axis=1) - y[:, r:].sum(axis=1), dtype=np.float64)
        return llr_laplace(y[:, :r], y[:, r:])

    per_trial = (r + replaced) * (len(honest) if cfg.mode == "dca" and not gaussian else 1)
    return AuditPlan(
        neighbours=f"a canary record's {r} cells are one higher on D′"
        + (" and a replaced record's cells one lower" if replaced else "")
        + f" ({p.neighbour}, Δ₁ = {r + replaced})",
        statistic="log-likelihood ratio of the canary's cells (Laplace) or their sum "
        "(Gaussian shares), known counts subtracted",
        trials=trials,
        claimed_epsilon=claim.epsilon,
        claimed_delta=claim.delta,
        coalition=tuple(sorted(coalition)),
        batch=max(1000, min(200_000, 8_000_000 // per_trial)),
    )
