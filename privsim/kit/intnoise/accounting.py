"""Privacy of integer noise summed in shares, as Rényi DP converted to (ε, δ).

Distributed discrete Gaussian (Kairouz, Liu & Steinke, ICML 2021, Theorem 1 with the
RDP form of its Proposition 14): n honest clients each add N_Z(0, σ²) per coordinate,
σ ≥ 1/2. For an integer sensitivity with ‖Δ‖₁ ≤ Δ₁, ‖Δ‖₂ ≤ Δ₂, put
a₂ = Δ₂/(√n·σ), a₁ = Δ₁/(√n·σ) and τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)); the sum is
(α, ε(α))-RDP for every α > 1 with

    ε(α) = min{ α·a₂²/2 + τ·d,  α·(a₂² + 2·a₁·τ + τ²·d)/2,  α·(a₂ + τ·√d)²/2 },

the last two being the ½ε²-concentrated-DP bound of Theorem 1. τ measures how far a
sum of discrete Gaussians is from one discrete Gaussian; as σ grows τ → 0 and ε(α)
becomes α·a₂²/2, the continuous Gaussian's.

Skellam (Agarwal, Kairouz & Liu, NeurIPS 2021, Theorem 3.5 / Corollary 3.6): the summed
noise is Sk(μ/2, μ/2) with per-coordinate variance μ (h honest shares of Poisson mean
μ_i: μ = 2·h·μ_i); for integer α > 1

    ε(α) = α·Δ₂²/(2μ) + min{ ((2α − 1)·Δ₂² + 6·Δ₁)/(4μ²),  3·Δ₁/(2μ) }.

Conversion to (ε, δ) (Canonne, Kamath & Steinke 2020, for concentrated DP; Balle et
al. 2020, for Rényi DP): ε = min_α ε(α) + ln(1/δ)/(α − 1) + ln(1 − 1/α) − ln(α)/(α − 1), over the
integer orders :data:`ORDERS` (the papers evaluate integer orders).

The ledger composes dp-accounting events: a release is charged as the Gaussian event
whose exact (ε, δ) at the ledger's δ equals this bound (:func:`equivalent_gaussian`).
That is exact for the single release the ledger reports at its δ; composing it with
other Gaussian events in closed form treats the bound as a Gaussian, an approximation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import dp_accounting
import numpy as np
import numpy.typing as npt

from privsim.kit.intnoise.noise import NoiseKind
from privsim.kit.intnoise.rounding import Sensitivity

__all__ = [
    "ORDERS",
    "IntegerAccount",
    "account",
    "calibrate",
    "ddg_rdp",
    "ddg_tau",
    "epsilon",
    "equivalent_gaussian",
    "gaussian_rdp",
    "rdp_to_epsilon",
    "skellam_rdp",
]

F64 = npt.NDArray[np.float64]

#: Integer Rényi orders: every order to 256, then geometrically to 10⁶.
ORDERS: F64 = np.unique(
    np.concatenate([np.arange(2, 257), np.round(np.geomspace(256, 1e6, 120))])
).astype(np.float64)

#: Smallest per-client σ Theorem 1 of KLS 2021 covers.
DDG_MIN_SIGMA = 0.5


def rdp_to_epsilon(rdp: npt.ArrayLike, orders: npt.ArrayLike, delta: float) -> tuple[float, float]:
    """(ε, best α): ε = min_α rdp(α) + ln(1/δ)/(α−1) + ln(1−1/α) − ln(α)/(α−1)
    (Canonne, Kamath & Steinke 2020; Balle et al. 2020), floored at 0."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    r = np.asarray(rdp, dtype=np.float64)
    a = np.asarray(orders, dtype=np.float64)
    eps = r + math.log(1.0 / delta) / (a - 1.0) + np.log1p(-1.0 / a) - np.log(a) / (a - 1.0)
    if not np.any(np.isfinite(eps)):
        return math.inf, math.nan
    i = int(np.nanargmin(eps))
    return max(float(eps[i]), 0.0), float(a[i])


def ddg_tau(sigma: float, clients: int) -> float:
    """τ = 10·Σ_{k=1}^{n−1} exp(−2π²σ²·k/(k+1)) (KLS 2021, Theorem 1)."""
    if clients < 1:
        raise ValueError(f"need at least one client, got {clients}")
    k = np.arange(1, clients, dtype=np.float64)
    return float(10.0 * np.exp(-2.0 * math.pi**2 * sigma**2 * k / (k + 1.0)).sum())


def ddg_rdp(
    orders: npt.ArrayLike, *, sigma: float, clients: int, sensitivity: Sensitivity, dimension: int
) -> F64:
    """ε(α) of the sum of ``clients`` discrete Gaussians N_Z(0, σ²) (KLS 2021, Theorem 1 /
    Prop. 14); infinite below σ = 1/2, where the theorem does not apply."""
    a = np.asarray(orders, dtype=np.float64)
    if sigma < DDG_MIN_SIGMA:
        return np.full(a.shape, math.inf)
    tau = ddg_tau(sigma, clients)
    root = math.sqrt(clients) * sigma
    a2, a1 = sensitivity.l2 / root, sensitivity.l1 / root
    d = float(dimension)
    t1 = a * a2**2 / 2.0 + tau * d
    t2 = a * (a2**2 + 2.0 * a1 * tau + tau**2 * d) / 2.0
    t3 = a * (a2 + tau * math.sqrt(d)) ** 2 / 2.0
    return np.asarray(np.minimum(np.minimum(t1, t2), t3), dtype=np.float64)


def skellam_rdp(orders: npt.ArrayLike, *, variance: float, sensitivity: Sensitivity) -> F64:
    """ε(α) of the Skellam mechanism with per-coordinate noise variance μ = ``variance``
    (AKL 2021, Theorem 3.5 / Corollary 3.6)."""
    a = np.asarray(orders, dtype=np.float64)
    if not variance > 0:
        return np.full(a.shape, math.inf)
    mu, l2, l1 = variance, sensitivity.l2, sensitivity.l1
    extra = np.minimum(((2.0 * a - 1.0) * l2**2 + 6.0 * l1) / (4.0 * mu**2), 3.0 * l1 / (2.0 * mu))
    return np.asarray(a * l2**2 / (2.0 * mu) + extra, dtype=np.float64)


def gaussian_rdp(orders: npt.ArrayLike, noise_multiplier: float) -> F64:
    """ε(α) = α/(2m²) of the continuous Gaussian mechanism with σ/Δ = m (Mironov 2017)."""
    a = np.asarray(orders, dtype=np.float64)
    return np.asarray(a / (2.0 * noise_multiplier**2), dtype=np.float64)


def _rdp(
    kind: NoiseKind, parameter: float, honest_clients: int, sensitivity: Sensitivity, dimension: int
) -> F64:
    if honest_clients < 1:
        raise ValueError(f"need N - T - 1 >= 1 honest clients, got {honest_clients}")
    if kind == "discrete_gaussian":
        return ddg_rdp(
            ORDERS,
            sigma=parameter,
            clients=honest_clients,
            sensitivity=sensitivity,
            dimension=dimension,
        )
    if kind == "skellam":
        return skellam_rdp(
            ORDERS, variance=2.0 * honest_clients * parameter, sensitivity=sensitivity
        )
    raise ValueError(f"unknown integer noise kind {kind!r}")


def epsilon(
    kind: NoiseKind,
    parameter: float,
    *,
    honest_clients: int,
    sensitivity: Sensitivity,
    dimension: int,
    delta: float,
) -> float:
    """ε at δ of one release whose noise is ``honest_clients`` shares of parameter
    σ_i (discrete Gaussian) or μ_i (Skellam, Poisson mean of each side)."""
    rdp = _rdp(kind, parameter, honest_clients, sensitivity, dimension)
    return rdp_to_epsilon(rdp, ORDERS, delta)[0]


def calibrate(
    kind: NoiseKind,
    target_epsilon: float,
    *,
    delta: float,
    honest_clients: int,
    sensitivity: Sensitivity,
    dimension: int,
    relative_tolerance: float = 1e-9,
) -> float:
    """The smallest per-client parameter (σ_i or μ_i) whose release meets (ε, δ), by
    bisection on a log scale (ε decreases as the noise grows). The returned value meets
    the target; one ``relative_tolerance`` below it does not."""
    if not (target_epsilon > 0 and math.isfinite(target_epsilon)):
        raise ValueError(f"target epsilon must be finite and > 0, got {target_epsilon}")

    def meets(p: float) -> bool:
        return (
            epsilon(
                kind,
                p,
                honest_clients=honest_clients,
                sensitivity=sensitivity,
                dimension=dimension,
                delta=delta,
            )
            <= target_epsilon
        )

    lo = DDG_MIN_SIGMA if kind == "discrete_gaussian" else 1e-6
    if meets(lo):
        return lo
    hi = max(2.0 * lo, 1.0)
    while not meets(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e300:
            raise ValueError("no noise level meets the target epsilon")
    while hi / lo - 1.0 > relative_tolerance:
        mid = math.sqrt(lo * hi)
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def equivalent_gaussian(target_epsilon: float, delta: float) -> dp_accounting.GaussianDpEvent:
    """The Gaussian event whose exact (ε, δ) (analytic Gaussian mechanism) at ``delta`` is
    ``target_epsilon``: how a bound computed here is recorded in the ledger."""
    if not math.isfinite(target_epsilon):
        raise ValueError("an infinite epsilon has no Gaussian equivalent")
    return dp_accounting.GaussianDpEvent(
        float(dp_accounting.get_sigma_gaussian(target_epsilon, delta))
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class IntegerAccount:
    """One integer-noise release as accounted: the mechanism, the per-client parameter,
    the honest count N − T − 1 it is credited with, its sensitivity and (ε, δ)."""

    kind: NoiseKind
    parameter: float
    honest_clients: int
    sensitivity: Sensitivity
    dimension: int
    delta: float
    epsilon: float
    order: float

    @property
    def event(self) -> dp_accounting.GaussianDpEvent:
        """The ledger's event for this release (:func:`equivalent_gaussian`)."""
        return equivalent_gaussian(self.epsilon, self.delta)


def account(
    kind: NoiseKind,
    parameter: float,
    *,
    honest_clients: int,
    sensitivity: Sensitivity,
    dimension: int,
    delta: float,
) -> IntegerAccount:
    """The :class:`IntegerAccount` of one release."""
    rdp = _rdp(kind, parameter, honest_clients, sensitivity, dimension)
    eps, order = rdp_to_epsilon(rdp, ORDERS, delta)
    return IntegerAccount(
        kind=kind,
        parameter=parameter,
        honest_clients=honest_clients,
        sensitivity=sensitivity,
        dimension=dimension,
        delta=delta,
        epsilon=eps,
        order=order,
    )
