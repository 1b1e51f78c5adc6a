"""``python -m privsim.kit.intnoise.table``: the integer mechanisms' noise and planned
modulus against the continuous Gaussian, for a grid of N, d and scale s (ε = 1,
δ = 1e−5, L2 clip c = 1, T = N/10, add/remove-one neighbours, β = e^{−1/2}); then the
ε the ledger credits for the realised coalition (:func:`realised_rows`)."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from privsim.kit.intnoise.accounting import account, calibrate
from privsim.kit.intnoise.modulus import plan_modulus
from privsim.kit.intnoise.noise import DEFAULT_BETA, NoiseKind
from privsim.kit.intnoise.rounding import integer_sensitivity
from privsim.kit.intnoise.samplers import sample_discrete_gaussian, sample_skellam
from privsim.sim.calibration import exact_sigma
from privsim.sim.ledger import epsilon_of

__all__ = ["main", "realised_rows", "rows"]

EPSILON, DELTA, CLIP = 1.0, 1e-5, 1.0
KINDS: tuple[NoiseKind, ...] = ("discrete_gaussian", "skellam")


def rows(
    clients: tuple[int, ...] = (100, 10_000),
    dims: tuple[int, ...] = (10, 10_000),
    scales: tuple[int, ...] = (4, 10),
) -> list[dict[str, float | int | str]]:
    """One row per (N, d, log2 s, kind): total noise std over the analytic Gaussian's σ
    (same ε, δ and real sensitivity c), and the planned bits at wrap probability 1e−9."""
    out: list[dict[str, float | int | str]] = []
    gaussian = exact_sigma(EPSILON, DELTA, CLIP)
    for n, d, log_scale, kind in itertools.product(clients, dims, scales, KINDS):
        honest = n - n // 10 - 1
        scale = 2.0**log_scale
        sens = integer_sensitivity(CLIP, scale, d, DEFAULT_BETA)
        p = calibrate(
            kind, EPSILON, delta=DELTA, honest_clients=honest, sensitivity=sens, dimension=d
        )
        var = p * p if kind == "discrete_gaussian" else 2.0 * p
        total_std = math.sqrt(honest * var) / scale
        plan = plan_modulus(n, d, CLIP, scale, p, kind, 1e-9)
        out.append(
            {
                "N": n,
                "d": d,
                "log2_scale": log_scale,
                "kind": kind,
                "noise_vs_gaussian": total_std / gaussian,
                "bits": plan.bits,
            }
        )
    return out


#: (colluding clients, dropped clients) of :func:`realised_rows`.
COALITIONS = ((0, 0), (0, 20), (20, 20), (40, 0), (60, 0), (200, 0), (500, 0), (998, 0))


def realised_rows(
    clients: int = 1000, tolerated: int = 40, dimension: int = 10, log_scale: int = 16
) -> list[dict[str, float | int]]:
    """One row per (colluding, dropped) of :data:`COALITIONS`: the honest shares H in the
    release and the ε the ledger credits, the papers' bound at H − 1 shares
    (:meth:`~privsim.kit.intnoise.accounting.IntegerAccount.noise_shares`), for noise
    calibrated to ε = 1 at N − T − 1 (replace-one neighbours, β = e^{−1/2})."""
    sens = integer_sensitivity(CLIP, 2.0**log_scale, dimension, DEFAULT_BETA, replace_one=True)
    honest = clients - tolerated - 1
    ids = tuple(f"client-{i}" for i in range(clients))
    plans = {}
    for kind in KINDS:
        p = calibrate(
            kind, EPSILON, delta=DELTA, honest_clients=honest, sensitivity=sens, dimension=dimension
        )
        plans[kind] = account(
            kind, p, honest_clients=honest, sensitivity=sens, dimension=dimension, delta=DELTA
        )
    out: list[dict[str, float | int]] = []
    for colluding, dropped in COALITIONS:
        h = clients - colluding - dropped
        row: dict[str, float | int] = {"colluding": colluding, "dropped": dropped, "honest": h}
        for kind, acct in plans.items():
            event = acct.noise_shares(ids).realise(acct.event, h)  # as the ledger does
            row[kind] = epsilon_of([event], DELTA)
        out.append(row)
    return out


def _throughput() -> list[tuple[str, float]]:
    rng = np.random.default_rng(0)
    out = []
    for name, draw in (
        ("discrete Gaussian σ=30", lambda: sample_discrete_gaussian(rng, 30.0, 1_000_000)),
        ("Skellam μ=450", lambda: sample_skellam(rng, 450.0, 1_000_000)),
    ):
        start = time.perf_counter()
        draw()
        out.append((name, 1.0 / (time.perf_counter() - start)))
    return out


def main() -> None:
    print(f"ε = {EPSILON}, δ = {DELTA}, c = {CLIP}, T = N/10, wrap probability 1e-9")
    print(f"{'N':>6} {'d':>6} {'s':>5} {'kind':<18} {'σ_total/σ_Gauss':>16} {'bits':>5}")
    for r in rows():
        print(
            f"{r['N']:>6} {r['d']:>6} 2^{r['log2_scale']!s:<3} {r['kind']!s:<18} "
            f"{r['noise_vs_gaussian']:>16.3f} {r['bits']:>5}"
        )
    print("\nRealised ε: N = 1000, T = 40 planned (noise for ε = 1 at N − T − 1 shares), d = 10")
    print(f"{'colluding':>9} {'dropped':>7} {'H':>5} {'discrete Gaussian':>18} {'Skellam':>9}")
    for row in realised_rows():
        print(
            f"{row['colluding']:>9} {row['dropped']:>7} {row['honest']:>5} "
            f"{row['discrete_gaussian']:>18.4f} {row['skellam']:>9.4f}"
        )
    for name, rate in _throughput():
        print(f"{name}: {rate:.1f} M samples/s")


if __name__ == "__main__":
    main()
