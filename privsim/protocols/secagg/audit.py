"""SecAgg / SecAgg+ with integer noise under audit (Bonawitz et al. 2017; Bell et al.
2020; the distributed discrete Gaussian of Kairouz, Liu & Steinke 2021, Theorem 1, and
the Skellam mechanism of Agarwal, Kairouz & Liu 2021, Theorem 3.5).

Adversary: the scenario's coalition (colluding clients and, if named, the server), who
also knows every other client's input — the worst case DP allows. The target is the
first honest client; the canary is its vector c = C·e₁ (‖c‖ = C, the clipping bound):

- ``add_remove``: on D the target's vector is 0 (it still sends its noise share), on D′
  it is c;
- ``replace_one``: on D it is −c, on D′ +c.

Statistic: the first coordinate of the server's unmasked sum mod 2^b, read in the
centred range and divided by 2^f, minus what the coalition knows: the other clients'
inputs (all 0, known) and the colluders' own words x_u + η_u. Subtracting known words
mod 2^b before the centred reading is the same as leaving them out of the modular sum,
so the statistic is the decoded sum of the honest clients' words
x_u = round(z_u·2^f) + η_u mod 2^b (:func:`~privsim.kit.secagg.maths.encode_inputs`,
summed in Z_{2^64} and decoded by :func:`~privsim.kit.secagg.maths.decode_sum`, as
the server does: a noisy sum that leaves ±2^(b−1) wraps around as in a run). The
masks cancel in the sum, and while the trust holds (the server does not collude with t
holders of one client's shares) the sum is all the view gives. Each honest client's
share η_u is drawn by the run's noise plan
(:func:`~privsim.protocols.secagg.run.noise_plan`, its
:meth:`~privsim.kit.secagg.noise.Noise.sample`: the kit's discrete Gaussian or
Skellam sampler) for the first coordinate, vectorised over trials. Every client is
included (no dropout in the audited release).

Claim: the ledger's ε for this release against the coalition, charged as a run charges
it (:func:`~privsim.kit.secagg.round.charge`, the ``ServerThreshold`` trust and the
N − T − 1 credited shares), with the per-client parameter calibrated here from the
budget and the papers' sensitivity (Δ₂ = C·2^f + √d, doubled for replace-one), so an
implementation that draws less noise than the papers' calibration is caught by the
trials, not absorbed by the claim. The target's own share is real noise the ledger does
not credit, so the claim is conservative by about √(H/(H − 1)) in the noise scale for H
honest clients.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from privsim.kit.audit import AuditPlan, TrialBatch
from privsim.kit.intnoise.accounting import calibrate
from privsim.kit.intnoise.noise import NoiseKind, client_parameter
from privsim.kit.intnoise.rounding import integer_sensitivity
from privsim.kit.secagg import round as secagg
from privsim.kit.secagg.maths import decode_sum, encode_inputs
from privsim.kit.secagg.noise import Noise
from privsim.protocols.secagg.config import SecAggConfig
from privsim.protocols.secagg.run import (
    MECHANISM,
    NON_PRIVATE,
    SERVER,
    WRAP_PROBABILITY,
    noise_plan,
    parameters,
)
from privsim.scenarios import scenario_from_dict
from privsim.scenarios.convert import set_fields
from privsim.scenarios.schema import Scenario
from privsim.sim.coalition import CoalitionSpec, resolve_coalition
from privsim.sim.ledger import Guarantee, PrivacyLedger
from privsim.sim.streams import Streams

__all__ = ["audit_plan", "claimed_noise", "coalition_of", "small_audit_scenario"]

F64 = npt.NDArray[np.float64]
#: Noise shares drawn at once (trials × honest clients): memory of a few such arrays.
SHARES_PER_CHUNK = 2_000_000


def small_audit_scenario(noise: str, **changes: Any) -> Scenario:
    """The smallest audited release (the audit tests' and ``benchmarks/bench_audit.py
    --claims``' injected bugs): N = 4 clients, T = 1 tolerated and one colluding: 3 honest
    shares, 2 credited (the target's own is not); d = 1 (only the canary's coordinate
    costs samples); ``noise`` as ``secagg.noise``, ``changes`` by dotted field."""
    data: dict[str, Any] = {
        "name": "secagg-audit",
        "seed": 7,
        "protocol": "secagg",
        "population": {"clients": 4},
        "privacy": {"epsilon": 1.0, "delta": 1e-5, "neighbour": "add_remove"},
        "secagg": {
            "dimension": 1,
            "threshold": 3,
            "noise": noise,
            "tolerated": 1,
            "modulus_bits": 48,
            "fraction_bits": 8,
        },
        "threat": {"colluding_clients": 1},
        "network": {"encryption": "none"},
    }
    return scenario_from_dict(set_fields(data, changes))


def _clients(scenario: Scenario) -> tuple[str, ...]:
    return tuple(f"client-{i}" for i in range(scenario.population.clients))


def coalition_of(scenario: Scenario) -> frozenset[str]:
    """The realised coalition among the clients and the server, drawn as a run at the
    scenario's seed draws it (its world's ``threat`` stream)."""
    spec = CoalitionSpec(
        clients=scenario.threat.colluding_clients, servers=scenario.threat.colluding_servers
    )
    parties = {"client": list(_clients(scenario)), "server": [SERVER]}
    return resolve_coalition(spec, parties, Streams(scenario.seed))


def claimed_noise(scenario: Scenario) -> Noise | None:
    """The noise the papers prescribe for the scenario (None without noise): each
    client's parameter calibrated for N − T − 1 honest shares at the budget (or from the
    user's ``noise_multiplier``), with the integer sensitivity of clipped, scaled and
    rounded inputs (β = 0: deterministic rounding, ‖round(z·2^f)‖₂ ≤ C·2^f + √d)."""
    cfg = scenario.table("secagg", SecAggConfig)
    if cfg.noise == "none":
        return None
    kind: NoiseKind = cfg.noise
    p, n, d = scenario.privacy, scenario.population.clients, cfg.dimension
    honest = n - cfg.tolerated - 1
    scale = float(1 << cfg.fraction_bits)
    sensitivity = integer_sensitivity(
        cfg.clip_norm, scale, d, 0.0, replace_one=p.neighbour == "replace_one"
    )
    if cfg.noise_multiplier is None:
        parameter = calibrate(
            kind,
            p.epsilon,
            delta=p.delta,
            honest_clients=honest,
            sensitivity=sensitivity,
            dimension=d,
        )
    else:
        total = (cfg.noise_multiplier * cfg.clip_norm * scale) ** 2
        parameter = client_parameter(kind, total, honest)
    return Noise.of(
        kind,
        parameter,
        clients=n,
        honest=honest,
        sensitivity=sensitivity,
        dimension=d,
        delta=p.delta,
        clip=cfg.clip_norm,
        scale=scale,
        wrap_probability=WRAP_PROBABILITY,
    )


def _claim(scenario: Scenario, coalition: frozenset[str]) -> Guarantee:
    """The ledger's guarantee for one release with every client included, against
    ``coalition``, charged as a run charges it with :func:`claimed_noise`."""
    p, cfg = scenario.privacy, scenario.table("secagg", SecAggConfig)
    clients = _clients(scenario)
    plan = secagg.plan(  # SecAgg+: on the graph a run draws at the seed
        clients,
        SERVER,
        params=parameters(scenario),
        dimension=cfg.dimension,
        bits=cfg.modulus_bits,
        streams=Streams(scenario.seed),
        fraction_bits=cfg.fraction_bits,
        noise=claimed_noise(scenario),
        round_timeout=cfg.round_timeout,
    )
    ledger = PrivacyLedger(p.epsilon, p.delta, on_overspend="allow", neighbour=p.neighbour)
    secagg.charge(ledger, MECHANISM, plan, non_private=NON_PRIVATE)
    if plan.noise is not None:
        ledger.settle(MECHANISM, contributors=clients)
    return ledger.guarantee(coalition)


def audit_plan(scenario: Scenario) -> AuditPlan:
    """The audit of one SecAgg / SecAgg+ release (see the module docstring)."""
    cfg = scenario.table("secagg", SecAggConfig)
    if cfg.noise == "none":
        raise ValueError(
            "secagg.noise = 'none' releases the exact sum (the ledger claims no guarantee): "
            "there is nothing to audit; set secagg.noise = 'discrete_gaussian' or 'skellam'"
        )
    p = scenario.privacy
    c, f, bits = cfg.clip_norm, cfg.fraction_bits, cfg.modulus_bits
    coalition = coalition_of(scenario)
    honest = [i for i in range(scenario.population.clients) if f"client-{i}" not in coalition]
    if not honest:
        raise ValueError("every client colludes: there is no honest target to audit")
    target, h = honest[0], len(honest)
    low = -c if p.neighbour == "replace_one" else 0.0
    claim = _claim(scenario, coalition)
    noise = noise_plan(scenario)  # the implementation's: what the clients draw
    assert noise is not None  # noise != "none"

    def trials(scn: Scenario, batch: TrialBatch, canary_in: bool) -> F64:
        rng = batch.streams(canary_in).generator("secagg", "honest-clients", "noise")
        out = np.empty(batch.count)
        step = max(1, SHARES_PER_CHUNK // h)
        for lo in range(0, batch.count, step):
            k = min(step, batch.count - lo)
            # the first coordinate of each honest client's share: i.i.d. draws
            eta = noise.sample(rng, k * h).reshape(k, h)
            z = np.zeros((k, h))
            z[:, 0] = c if canary_in else low  # column 0 is the target
            words = encode_inputs(z, f, bits, eta)
            total = words.sum(axis=1, dtype=np.uint64)  # Z_{2^64}: 2^b divides it
            out[lo : lo + k] = decode_sum(total, f, bits)
        return out

    kind = noise.kind.replace("_", " ")
    return AuditPlan(
        neighbours=f"client-{target}'s vector is {low:g}·e₁ on D, {c:g}·e₁ on D′ "
        f"({p.neighbour}); every other input known",
        statistic=f"first coordinate of the unmasked sum mod 2^{bits} ({kind}, {h} honest "
        "shares), minus what the coalition knows",
        trials=trials,
        claimed_epsilon=claim.epsilon,
        claimed_delta=claim.delta,
        coalition=tuple(sorted(coalition)),
        batch=max(1000, min(200_000, 8 * SHARES_PER_CHUNK // h)),
    )
