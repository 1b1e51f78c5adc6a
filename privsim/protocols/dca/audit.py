"""The DCA release under audit (Heikkilä et al. 2017, Algorithm 1 with Theorem 1).

Adversary: the scenario's coalition (colluding clients and, short of all of them,
compute nodes), who also knows every other client's input z_i — the worst case DP
allows. The target is the first honest client; the canary is its vector
c = C·e₁ (‖c‖ = C, the clipping bound):

- ``add_remove``: on D the target contributes 0, on D′ it contributes c (Δ₂ = C);
- ``replace_one``: on D it contributes −c, on D′ +c (Δ₂ = 2C).

Statistic: the first coordinate of the released sum, Σ_{i included} (z_i + η_i), minus
everything the coalition knows (the other clients' z_i, its members' η_i); the same
fixed-point encoding as the clients (the additive shares over the compute nodes sum to
the encoded value exactly, so while one node is honest the sum is all the view gives).
Each honest client draws η_i ~ N(0, σ_i²) with σ_i from
:func:`privsim.kit.securesum.maths.client_noise_std` (the implementation), vectorised
over trials. Every client is included (no dropout in the audited release).

Claim: the ledger's ε for this release against the coalition, with the shares charged at
Theorem 1's σ_i = σ/√(N − T − 1) written out here (the paper), so an implementation that
strays from the theorem is caught by the trials, not absorbed by the claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, TrialBatch, secure_sum_coalition
from privsim.kit.securesum import maths
from privsim.kit.securesum import round as securesum
from privsim.kit.securesum.config import DcaConfig
from privsim.kit.securesum.inputs import ClientInputs
from privsim.kit.world import agree_channels, build_world
from privsim.protocols.dca.attacks import noise_subtraction
from privsim.protocols.dca.config import DataConfig
from privsim.protocols.dca.run import sensitivity
from privsim.scenarios.schema import Scenario
from privsim.sim.calibration import gaussian_sigma
from privsim.sim.ledger import PrivacyLedger, Trust
from privsim.sim.streams import Streams

__all__ = ["CanaryData", "audit_plan", "coalition_of", "curator_audit_plan", "full_run_statistic"]

F64 = npt.NDArray[np.float64]
#: Noise words drawn at once per batch (trials × honest clients).
WORDS_PER_BATCH = 4_000_000


def coalition_of(scenario: Scenario) -> frozenset[str]:
    """The realised coalition, drawn exactly as a run at the scenario's seed draws it."""
    return secure_sum_coalition(
        scenario, [f"client-{i}" for i in range(scenario.population.clients)]
    )


def _claim(scenario: Scenario, coalition: frozenset[str]) -> tuple[float, float]:
    """The ledger's (ε, δ) for one DCA release with Theorem 1's shares, all included."""
    p = scenario.privacy
    n, t = scenario.population.clients, scenario.table("dca", DcaConfig).tolerated
    delta_l2 = sensitivity(scenario)
    sigma = gaussian_sigma(p.epsilon, p.delta, delta_l2, p.calibration)
    clients = tuple(f"client-{i}" for i in range(n))
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend="allow")
    securesum.charge(
        ledger,
        "secure-sum",
        event=dp_accounting.GaussianDpEvent(sigma / delta_l2),
        clients=clients,
        nodes=securesum.node_names(scenario),
        share_multiplier=sigma / math.sqrt(n - t - 1) / delta_l2,  # Theorem 1
    )
    ledger.settle("secure-sum", contributors=clients)
    g = ledger.guarantee(coalition)
    return g.epsilon, g.delta


def audit_plan(scenario: Scenario) -> AuditPlan:
    """The audit of one DCA release (see the module docstring)."""
    p = scenario.privacy
    cfg = scenario.table("dca", DcaConfig)
    c = scenario.table("data", DataConfig).clip_norm
    n = scenario.population.clients
    coalition = coalition_of(scenario)
    honest = [i for i in range(n) if f"client-{i}" not in coalition]
    if not honest:
        raise ValueError("every client colludes: there is no honest target to audit")
    target = honest[0]
    h = len(honest)
    low = -c if p.neighbour == "replace_one" else 0.0
    delta_l2 = sensitivity(scenario)
    claimed_epsilon, claimed_delta = _claim(scenario, coalition)

    def trials(scn: Scenario, batch: TrialBatch, canary_in: bool) -> F64:
        with np.errstate(all="ignore"):
            sigma = gaussian_sigma(p.epsilon, p.delta, delta_l2, p.calibration)
        noise_std = maths.client_noise_std(sigma, n, cfg.tolerated)
        streams = batch.streams(canary_in)
        out = np.empty(batch.count)
        step = max(1, WORDS_PER_BATCH // h)
        rng = streams.generator("dca", "honest-clients", "noise")
        for lo in range(0, batch.count, step):
            k = min(step, batch.count - lo)
            eta = rng.normal(0.0, noise_std, (k, h))  # honest clients' η_i
            z = np.zeros((k, h))
            z[:, 0] = c if canary_in else low  # column 0 is the target
            words = maths.encode_fixed(z + eta, cfg.fraction_bits)
            total = words.sum(axis=1, dtype=np.uint64)  # Z_{2^64}, as the nodes add shares
            out[lo : lo + k] = maths.decode_fixed(total, cfg.fraction_bits)
        return out

    explicit = scenario.replace(
        {"threat.colluding_clients": sorted(m for m in coalition if m.startswith("client-"))}
    )

    def full_trials(scn: Scenario, batch: TrialBatch, canary_in: bool) -> F64:
        root = batch.streams(canary_in)
        value = c if canary_in else low
        return np.array(
            [
                full_run_statistic(explicit, Streams(root.seed_sequence("run", j)), target, value)
                for j in range(batch.count)
            ]
        )

    return AuditPlan(
        neighbours=f"client-{target}'s vector is {low:g}·e₁ on D, {c:g}·e₁ on D′ "
        f"({p.neighbour}, Δ₂ = {delta_l2:g})",
        statistic="first coordinate of the released sum minus what the coalition knows",
        trials=trials,
        claimed_epsilon=claimed_epsilon,
        claimed_delta=claimed_delta,
        coalition=tuple(sorted(coalition)),
        batch=max(1000, min(200_000, WORDS_PER_BATCH // h)),
        full_trials=full_trials,
    )


@dataclass(slots=True)
class CanaryData:
    """Client data of an audit run: every vector 0 (the coalition is assumed to know
    them, so their values do not matter) but the target's, ``value``·e₁."""

    n: int
    dimension: int
    target: int
    value: float

    def rows(self, clients: npt.ArrayLike) -> F64:
        idx = np.atleast_1d(np.asarray(clients, dtype=np.int64))
        out = np.zeros((idx.size, self.dimension))
        out[idx == self.target, 0] = self.value
        return out

    def sum(self, mask: npt.NDArray[np.bool_] | None = None) -> F64:
        out = np.zeros(self.dimension)
        if mask is None or bool(mask[self.target]):
            out[0] = self.value
        return out


def full_run_statistic(scenario: Scenario, streams: Streams, target: int, value: float) -> float:
    """One DCA round on the bus (the kit's secure sum, the scenario's network, faults
    and coalition, per-message delivery so the coalition's view is complete) with the
    target's vector ``value``·e₁; the statistic is the first coordinate of
    :func:`~privsim.protocols.dca.attacks.noise_subtraction`'s estimate (the released
    sum minus the other inputs and the coalition's own noise). An aborted round reads as
    0 (nothing released: the midpoint of the two canaries' ±C, or 0 = D's for add/remove)."""
    p = scenario.privacy
    cfg = scenario.table("dca", DcaConfig)
    n, d = scenario.population.clients, scenario.table("data", DataConfig).dimension
    clients = tuple(f"client-{i}" for i in range(n))
    nodes = securesum.node_names(scenario)
    with np.errstate(all="ignore"):
        sigma = gaussian_sigma(p.epsilon, p.delta, sensitivity(scenario), p.calibration)
    noise_std = maths.client_noise_std(sigma, n, cfg.tolerated)
    world = build_world(scenario, streams, [*clients, *nodes, securesum.OUTPUT_PARTY])
    plan = securesum.plan(scenario, clients, nodes, d, noise_std)
    inputs = ClientInputs(
        data=CanaryData(n, d, target, value),
        noise=streams.keystream("dca", "noise"),
        randomness=streams.keystream("dca", "shares"),
        noise_std=noise_std,
        fraction_bits=cfg.fraction_bits,
        n_nodes=len(nodes),
    )
    out = securesum.launch(world, plan, inputs, batched=False)
    agree_channels(world, securesum.channel_pairs)
    world.run()
    outcome = securesum.outcome_of(out)
    if outcome.released is None:
        return 0.0
    estimate = noise_subtraction(world.coalition_view(), outcome.released, f"client-{target}", {})
    return float(estimate[0])


def curator_audit_plan(scenario: Scenario) -> AuditPlan:
    """The trusted aggregator's release: the curator adds N(0, σ²) once to Σ z_i (the
    same canary and statistic as :func:`audit_plan`); the ledger's claim holds while the
    curator is honest."""
    p = scenario.privacy
    c = scenario.table("data", DataConfig).clip_norm
    coalition = coalition_of(scenario)
    delta_l2 = sensitivity(scenario)
    low = -c if p.neighbour == "replace_one" else 0.0
    with np.errstate(all="ignore"):
        sigma = gaussian_sigma(p.epsilon, p.delta, delta_l2, p.calibration)
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend="allow")
    ledger.charge(
        "curator-sum",
        dp_accounting.GaussianDpEvent(sigma / delta_l2),
        trust=Trust.each(securesum.OUTPUT_PARTY, description="the curator honest"),
    )
    ledger.settle("curator-sum")
    g = ledger.guarantee(coalition)

    def trials(scn: Scenario, batch: TrialBatch, canary_in: bool) -> F64:
        rng = batch.streams(canary_in).generator(securesum.OUTPUT_PARTY, "noise")
        return (c if canary_in else low) + rng.normal(0.0, sigma, batch.count)

    return AuditPlan(
        neighbours=f"the target's vector is {low:g}·e₁ on D, {c:g}·e₁ on D′ ({p.neighbour})",
        statistic="first coordinate of the released sum minus the other clients' inputs",
        trials=trials,
        claimed_epsilon=g.epsilon,
        claimed_delta=g.delta,
        coalition=tuple(sorted(coalition)),
        batch=200_000,
    )
